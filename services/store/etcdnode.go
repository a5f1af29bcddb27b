//go:build !jinid_omit_etcd

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdNode is this process as a node of a deployment in etcd: one lease,
// kept alive while the process runs (timed as lease's comment says). The
// stores it holds, the deployment's own and shards of it, are held under
// that lease, and so is its member record (services/cluster writes and
// reads the records, PutLeased and Records): they live and end with the
// node.
type EtcdNode struct {
	cli    *clientv3.Client
	cfg    EtcdConfig
	lease  *lease
	maxOps int
	name   string

	closeOnce sync.Once
}

// JoinEtcd connects to the cluster cfg names and takes this node's
// lease (of cfg.LeaseTTL), named cfg.Node.
func JoinEtcd(ctx context.Context, cfg EtcdConfig) (*EtcdNode, error) {
	cli, cfg, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l, err := grantLease(ctx, cli, cmp.Or(cfg.LeaseTTL, DefaultLeaseTTL))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd: a lease for this node: %w", err)
	}
	n := &EtcdNode{cli: cli, cfg: cfg, lease: l, name: cmp.Or(cfg.Node, "a jinid")}
	n.maxOps = probeMaxOps(ctx, cli, cfg.Prefix, cfg.Timeout)
	return n, nil
}

// Name is the node's name in the deployment.
func (n *EtcdNode) Name() string { return n.name }

// Acting says whether the node may act now: its lease is surely alive
// (ErrNotHolding from a margin before the cluster could end it).
func (n *EtcdNode) Acting() error { return n.lease.valid() }

// Lost is closed when the node's lease ends (it could not be kept
// alive): every store it holds is lost with it.
func (n *EtcdNode) Lost() <-chan struct{} { return n.lease.lost }

// Close ends the node: its lease is revoked, so its member record and
// every hold go at once (the others need not wait for the TTL).
func (n *EtcdNode) Close() {
	n.closeOnce.Do(func() {
		n.lease.close()
		n.cli.Close()
	})
}

// HoldConfig says how Hold waits for a store another node holds.
type HoldConfig struct {
	// Waiting, if set, is told once that another holds the store and
	// this node waits.
	Waiting func(holder string)
	// OnHolder, if set, is told the holder's member record while this
	// node waits, each time it changes.
	OnHolder func(Member)
	// NoWait fails at once (ErrHeld) rather than wait.
	NoWait bool
}

// ShardPrefix is where in the deployment's key space the shard named
// shard keeps its store: under a dotted name, which the deployment's own
// buckets never are.
func ShardPrefix(prefix, shard string) string { return prefix + "/.shards/" + shard }

// shardHold is the key of the hold of shard: beside the others (not in
// the shard's store), so that a status reads them all in one range.
func shardHold(prefix, shard string) string { return prefix + "/.shardholds/" + shard }

// Hold opens a store held by this node: the deployment's own for shard
// "", else the shard's (ShardPrefix). It takes the hold's key
// (<prefix>/.holder, or the shard's under <prefix>/.shardholds/) under
// the node's lease, waiting while another node
// holds it (until ctx ends); every commit is fenced by the hold, and the
// store acts only while the node does and the hold was not let go.
// Closing the store lets the hold go (the node lives on).
func (n *EtcdNode) Hold(ctx context.Context, shard string, hc HoldConfig) (*Store, error) {
	prefix, hold := n.cfg.Prefix, n.cfg.Prefix+"/.holder"
	if shard != "" {
		prefix, hold = ShardPrefix(prefix, shard), shardHold(prefix, shard)
	}
	be := &etcdBackend{cli: n.cli, kv: n.cli, prefix: prefix, timeout: n.cfg.Timeout, n: n, lease: n.lease, node: n.name,
		maxOps: n.maxOps, holdKey: hold}
	rev, err := n.take(ctx, be.holdKey, hc)
	if err != nil {
		return nil, err
	}
	be.holdRev, be.holdMod = rev, rev
	st, err := newStore(be, "etcd "+strings.Join(n.cfg.Endpoints, ",")+" "+prefix)
	if err != nil {
		be.release()
		return nil, err
	}
	return st, nil
}

// take makes key this node's, under its lease, and returns the key's
// create revision. It waits while another node holds it: for the key to
// go (its lease ends, or the node lets it go), following the holder's
// member record meanwhile (OnHolder). A node that lost its own lease
// while waiting gives up.
func (n *EtcdNode) take(ctx context.Context, key string, hc HoldConfig) (int64, error) {
	node := n.name
	for told := false; ; {
		if err := n.lease.valid(); err != nil {
			return 0, fmt.Errorf("etcd: waiting for %s: %w", key, err)
		}
		resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, node, clientv3.WithLease(n.lease.id))).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return 0, fmt.Errorf("etcd: taking %s: %w", key, err)
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // gone meanwhile
		}
		holder := string(kvs[0].Value)
		if hc.NoWait {
			return 0, fmt.Errorf("%w in etcd (%s): stop it first", ErrHeld, holder)
		}
		if !told && hc.Waiting != nil {
			hc.Waiting(holder)
			told = true
		}
		tell := func() {
			if hc.OnHolder != nil {
				if m, ok := n.member(ctx, holder); ok {
					hc.OnHolder(m)
				}
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		w := n.cli.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1))
		var mw clientv3.WatchChan
		if hc.OnHolder != nil {
			mw = n.cli.Watch(wctx, n.memberKey(holder), clientv3.WithRev(resp.Header.Revision+1))
		}
		tell()
		err = n.waitGone(ctx, w, mw, tell)
		cancel()
		if err != nil {
			return 0, err
		}
	}
}

// waitGone waits for the hold's key to be deleted (w), telling of each
// change of the holder's record (mw).
func (n *EtcdNode) waitGone(ctx context.Context, w, mw clientv3.WatchChan, tell func()) error {
	for {
		select {
		case _, ok := <-mw:
			if !ok {
				mw = nil // the wait for the hold goes on
				continue
			}
			tell()
		case <-ctx.Done():
			return ctx.Err()
		case <-n.lease.lost:
			return fmt.Errorf("etcd: waiting for a hold: %w", ErrNotHolding)
		case wr, ok := <-w:
			if !ok {
				return nil // try again
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return nil
				}
			}
		}
	}
}

// Constant is the deployment's value named name: made by mk and stored
// by the first node that asks (<prefix>/.constants/<name>), read by all
// the others, never changed.
func (n *EtcdNode) Constant(ctx context.Context, name string, mk func() string) (string, error) {
	key := n.cfg.Prefix + "/.constants/" + name
	v := mk()
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, v)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return "", fmt.Errorf("etcd: the deployment's %s: %w", name, err)
	}
	if resp.Succeeded {
		return v, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return "", fmt.Errorf("etcd: the deployment's %s: not there", name)
	}
	return string(kvs[0].Value), nil
}

func (n *EtcdNode) memberKey(node string) string { return n.cfg.Prefix + "/.members/" + node }

// member reads the member record of the node named node.
func (n *EtcdNode) member(ctx context.Context, node string) (Member, bool) {
	r, err := n.cli.Get(ctx, n.memberKey(node))
	if err != nil || len(r.Kvs) != 1 {
		return Member{}, false
	}
	var m Member
	return m, json.Unmarshal(r.Kvs[0].Value, &m) == nil
}

// PutLeased writes key (under the deployment's prefix: rel) under the
// node's lease: it lives while the node does (a member record).
func (n *EtcdNode) PutLeased(ctx context.Context, rel string, value []byte) error {
	_, err := n.cli.Put(ctx, n.cfg.Prefix+"/"+rel, string(value), clientv3.WithLease(n.lease.id))
	return err
}

// Record is a key of the deployment (under its prefix) and the etcd
// lease it lives under (0: none).
type Record struct {
	Key   string
	Value []byte
	Lease int64
}

// Records reads at most limit keys under the deployment's prefix rel.
func (n *EtcdNode) Records(ctx context.Context, rel string, limit int) ([]Record, error) {
	r, err := n.cli.Get(ctx, n.cfg.Prefix+"/"+rel, clientv3.WithPrefix(), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(r.Kvs))
	for i, kv := range r.Kvs {
		out[i] = Record{Key: string(kv.Key), Value: kv.Value, Lease: kv.Lease}
	}
	return out, nil
}

// LeaseLive says whether etcd lease id is live: a record under no live
// lease (written by hand, or by anyone who can write the prefix) is no
// node's. An error is etcd not answering in time: nothing is known.
func (n *EtcdNode) LeaseLive(ctx context.Context, id int64) (bool, error) {
	if id == 0 {
		return false, nil
	}
	r, err := n.cli.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return false, err
	}
	return r.TTL > 0, nil
}

// leaseLive says lease id is live in etcd: a member record under no
// lease (written by hand, or by anyone who can write the prefix) is no
// node, for ever or not.
func leaseLive(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID) bool {
	if id == clientv3.NoLease {
		return false
	}
	r, err := cli.TimeToLive(ctx, id)
	return err == nil && r.TTL > 0
}

// EtcdEndpoints are the etcd cluster's client URLs as the client knows
// them: those given, and those it learnt from the cluster's members.
func (n *EtcdNode) EtcdEndpoints() []string { return n.cli.Endpoints() }

// Lost is closed when a held store's node loses its lease: its commits
// fail from then on, and the process should end, for another node to
// take over.
func (s *Store) Lost() <-chan struct{} {
	if b, ok := s.be.(*etcdBackend); ok && b.lease != nil {
		return b.lease.lost
	}
	return nil
}

//go:build !jinid_omit_etcd

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jinid/jinid/internal/lifecycle"
)

// EtcdNode is this process as a node of a deployment in etcd: one lease,
// kept alive while the process runs (timed as lease's comment says), its
// member record under that lease (<prefix>/.members/<node>), and the
// other members' records, read every second. The stores it holds, the
// deployment's own and shards of it, are held under the same lease: they
// live and end with the node.
type EtcdNode struct {
	cli    *clientv3.Client
	cfg    EtcdConfig
	lease  *lease
	maxOps int

	mu   sync.Mutex
	self Member

	members struct {
		sync.Mutex
		list  []Member
		addrs []netip.Addr
	}
	// live are the leases of member records known to be live (each
	// asked of etcd once: a record under a lease that ends is deleted
	// with it), ignored the records not under a live lease, each
	// logged once.
	readMu    sync.Mutex // one read of the members at a time
	live      map[clientv3.LeaseID]bool
	ignored   map[string]bool
	reader    *lifecycle.Periodic
	refreshed atomic.Int64 // when Refresh last read, UnixNano
	closeOnce sync.Once
}

// JoinEtcd connects to the cluster cfg names, takes this node's lease (of
// cfg.LeaseTTL) and registers the node as a member, named cfg.Node, with
// cfg.Addrs, ClusterPort and CertSHA256.
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
	n := &EtcdNode{cli: cli, cfg: cfg, lease: l, live: map[clientv3.LeaseID]bool{}, ignored: map[string]bool{},
		self: Member{Node: cmp.Or(cfg.Node, "a jinid"), Since: time.Now().UTC(), Addrs: cfg.Addrs,
			ClusterPort: cfg.ClusterPort, CertSHA256: cfg.CertSHA256, APIPort: cfg.APIPort, DiscoveryPort: cfg.DiscoveryPort,
			EtcdInsecure: cfg.Insecure && InsecureEndpoint(cfg.Endpoints, cfg.CertFile) != "", SiteCA: cfg.SiteCA}}
	if err := n.register(ctx); err != nil {
		l.close()
		cli.Close()
		return nil, err
	}
	n.maxOps = probeMaxOps(ctx, cli, cfg.Prefix, cfg.Timeout)
	// The members as the node starts, and as they come and go.
	n.refreshMembers()
	n.reader = lifecycle.Every(time.Second, n.refreshMembers)
	n.reader.Start(context.Background())
	return n, nil
}

// Name is the node's name in the deployment.
func (n *EtcdNode) Name() string { return n.self.Node }

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
		n.reader.Shutdown(context.Background())
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
	be := &etcdBackend{cli: n.cli, prefix: prefix, timeout: n.cfg.Timeout, n: n, lease: n.lease, node: n.self.Node,
		maxOps: n.maxOps, holdKey: hold}
	rev, err := n.take(ctx, be.holdKey, hc)
	if err != nil {
		return nil, err
	}
	be.holdRev = rev
	be.fence = clientv3.Compare(clientv3.CreateRevision(be.holdKey), "=", rev)
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
	node := n.self.Node
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

// register writes this node's member record under its lease.
func (n *EtcdNode) register(ctx context.Context) error {
	n.mu.Lock()
	m := n.self
	n.mu.Unlock()
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := n.cli.Put(ctx, n.memberKey(m.Node), string(v), clientv3.WithLease(n.lease.id)); err != nil {
		return fmt.Errorf("etcd: registering as a member: %w", err)
	}
	return nil
}

// Members are the deployment's nodes as last read (every second), this
// one included, by name.
func (n *EtcdNode) Members() []Member {
	n.members.Lock()
	defer n.members.Unlock()
	return n.members.list
}

// Refresh reads the members' records now (a node that does not answer
// may be gone), unless they were read less than 100 ms ago: a flood of
// requests for a dead node's shards costs etcd ten reads a second.
func (n *EtcdNode) Refresh() {
	now := time.Now().UnixNano()
	if last := n.refreshed.Load(); now-last < int64(100*time.Millisecond) || !n.refreshed.CompareAndSwap(last, now) {
		return
	}
	n.refreshMembers()
}

// refreshMembers reads the members' records; failed, the last known
// stay until a read succeeds. (Polled, not watched: a watch is a stream
// a stopping etcd member waits for, and one read a second is nothing to
// a cluster.)
func (n *EtcdNode) refreshMembers() {
	n.readMu.Lock()
	defer n.readMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := n.cli.Get(ctx, n.cfg.Prefix+"/.members/", clientv3.WithPrefix(), clientv3.WithLimit(1000))
	if err != nil {
		return
	}
	var list []Member
	var addrs []netip.Addr
	seen := map[clientv3.LeaseID]bool{}
	for _, kv := range r.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) != nil {
			continue
		}
		id := clientv3.LeaseID(kv.Lease)
		seen[id] = true
		if !n.live[id] {
			if !leaseLive(ctx, n.cli, id) {
				n.ignore(string(kv.Key), id)
				continue
			}
			n.live[id] = true
		}
		list = append(list, m)
		addrs = append(addrs, m.Addrs...)
	}
	for id := range n.live {
		if !seen[id] {
			delete(n.live, id) // ended with its records
		}
	}
	slices.SortFunc(list, func(a, b Member) int { return strings.Compare(a.Node, b.Node) })
	n.members.Lock()
	n.members.list, n.members.addrs = list, addrs
	n.members.Unlock()
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

// ignore logs, once per key, a member record not under a live lease.
func (n *EtcdNode) ignore(key string, id clientv3.LeaseID) {
	if n.ignored[key] {
		return
	}
	if len(n.ignored) >= 1000 {
		clear(n.ignored) // bounded: some are logged again
	}
	n.ignored[key] = true
	if n.cfg.Logger != nil {
		n.cfg.Logger.Warn("a member record under no live etcd lease is ignored: it is no node (written by hand, or by whoever can write the prefix)",
			"key", key, "lease", int64(id))
	}
}

// EtcdEndpoints are the etcd cluster's client URLs as the client knows
// them: those given, and those it learnt from the cluster's members.
func (n *EtcdNode) EtcdEndpoints() []string { return n.cli.Endpoints() }

// Publish says where this node, which holds the store, serves: the
// nodes waiting forward what reaches them there. A store that is not
// held (embedded, or in etcd without Exclusive) has nothing to say.
func (s *Store) Publish(ctx context.Context, addrs []netip.Addr, apiPort, discoveryPort int) error {
	b, ok := s.be.(*etcdBackend)
	if !ok || b.n == nil {
		return nil
	}
	n := b.n
	n.mu.Lock()
	n.self.Addrs, n.self.APIPort, n.self.DiscoveryPort = addrs, apiPort, discoveryPort
	n.mu.Unlock()
	return n.register(ctx)
}

// MemberAddrs lists the addresses the deployment's nodes registered
// (none for an embedded store): a request another node forwarded comes
// from, or names, one of them. It does not wait on etcd (it is asked on
// the API's accept path): the node reads the members every second, so
// one that joins is known within a second.
func (s *Store) MemberAddrs() []netip.Addr {
	b, ok := s.be.(*etcdBackend)
	if !ok || b.n == nil {
		return nil
	}
	b.n.members.Lock()
	defer b.n.members.Unlock()
	return b.n.members.addrs
}

// Lost is closed when a held store's node loses its lease: its commits
// fail from then on, and the process should end, for another node to
// take over.
func (s *Store) Lost() <-chan struct{} {
	if b, ok := s.be.(*etcdBackend); ok && b.lease != nil {
		return b.lease.lost
	}
	return nil
}

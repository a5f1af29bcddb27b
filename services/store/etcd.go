//go:build !jinid_omit_etcd

package store

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd tells whether this build can keep its store in etcd: one built
// without the etcd feature (jinid_omit_etcd, as the router profile is)
// cannot.
const Etcd = true

// OpenEtcd opens the store kept in an etcd cluster. Every Update is a
// transaction of the cluster, committed (by a majority of its members,
// on disk) before it returns; a transaction whose reads another writer
// changed meanwhile runs again on what is there now (optimistic
// concurrency on revisions).
func OpenEtcd(ctx context.Context, cfg EtcdConfig) (*Store, error) {
	if cfg.Exclusive {
		n, err := JoinEtcd(ctx, cfg)
		if err != nil {
			return nil, err
		}
		st, err := n.Hold(ctx, "", HoldConfig{Waiting: cfg.Waiting, OnHolder: cfg.OnHolder, NoWait: cfg.NoWait})
		if err != nil {
			n.Close()
			return nil, err
		}
		// The store is the node's only use: closing it ends the node.
		st.be.(*etcdBackend).ownsNode = true
		return st, nil
	}
	cli, cfg, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	be := &etcdBackend{cli: cli, kv: cli, prefix: cfg.Prefix, timeout: cfg.Timeout}
	be.maxOps = probeMaxOps(ctx, cli, cfg.Prefix, cfg.Timeout)
	where := "etcd " + strings.Join(cfg.Endpoints, ",") + " " + cfg.Prefix
	return newStore(be, where)
}

// dial connects to the cluster cfg names (its defaults filled in) and
// reads a key: a cluster that cannot be read is not used.
func dial(ctx context.Context, cfg EtcdConfig) (*clientv3.Client, EtcdConfig, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, cfg, errors.New("etcd: no endpoints")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultEtcdPrefix
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	var tlsCfg *tls.Config
	if cfg.CertFile != "" || cfg.CAFile != "" {
		info := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.CAFile}
		var err error
		if tlsCfg, err = info.ClientConfig(); err != nil {
			return nil, cfg, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: cfg.Timeout, TLS: tlsCfg,
		Logger: zap.NewNop(), AutoSyncInterval: time.Minute})
	if err != nil {
		return nil, cfg, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if _, err := cli.Get(rctx, cfg.Prefix+"/meta/schema"); err != nil {
		cli.Close()
		return nil, cfg, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return cli, cfg, nil
}

// Node is this process's name in the deployment whose store in etcd it
// holds; "" for an embedded store.
func (s *Store) Node() string {
	if b, ok := s.be.(*etcdBackend); ok {
		return b.node
	}
	return ""
}

// Acting says whether this process may act for its clients now: nil for
// an embedded store, and for one in etcd while its hold is surely still
// its own; ErrNotHolding from a margin before the cluster could let a
// standby take over. Whatever jinid sends on someone's behalf (renewals,
// event deliveries, a transaction's decisions) waits on it.
func (s *Store) Acting() error {
	if b, ok := s.be.(*etcdBackend); ok {
		return b.valid()
	}
	return nil
}

// Revision is the etcd revision of the last change this process
// committed to the store (0 for the embedded store): a node following the
// store in etcd holds it once its copy reaches that revision.
func (s *Store) Revision() int64 {
	if b, ok := s.be.(*etcdBackend); ok {
		return b.rev.Load()
	}
	return 0
}

// etcdBackend keeps buckets as keys under the prefix: <prefix>/<bucket>/<key>,
// and beside each bucket a version key (<prefix>/.version/<bucket>) that
// every transaction writing to the bucket touches, so that a transaction
// that listed a bucket conflicts with one that added to it or removed
// from it.
type etcdBackend struct {
	cli     *clientv3.Client
	prefix  string
	timeout time.Duration
	// For a held store: the node that holds it (n), the node's lease, the
	// hold's key and the comparison every commit includes (the hold is
	// still this node's: the key's create revision when it took it).
	n       *EtcdNode
	lease   *lease
	holdKey string
	holdRev int64
	// holdMod is the hold key's mod revision as this node last moved it
	// (settle): every commit is fenced by it, so that a commit of unknown
	// outcome can be stopped for good once it is settled. Written and
	// read under the store's write lock (commits are one at a time).
	holdMod int64
	// kv is where commits go: the client (a test's may lose answers).
	kv       clientv3.KV
	node     string
	released atomic.Bool // the hold was let go (Close)
	ownsNode bool        // closing the store ends the node (OpenEtcd)
	// maxOps is the most operations the cluster takes in one
	// transaction (its members' --max-txn-ops), as probed at open.
	maxOps int
	// rev is the etcd revision of the last change committed.
	rev atomic.Int64
}

func (b *etcdBackend) key(bucket, key string) string { return b.prefix + "/" + bucket + "/" + key }
func (b *etcdBackend) bucketPrefix(bucket string) string {
	return b.prefix + "/" + bucket + "/"
}
func (b *etcdBackend) version(bucket string) string { return b.prefix + "/.version/" + bucket }

// ErrConflict is Update's error when its transaction lost to other
// writers too many times in a row.
var ErrConflict = errors.New("the transaction kept conflicting with other writers")

func (b *etcdBackend) update(fn func(kv) error) error {
	// A transaction another writer's commit invalidated runs again, after
	// a wait that grows and varies (two writers in step would otherwise
	// keep invalidating each other), until the request timeout.
	deadline := time.Now().Add(b.timeout)
	wait := time.Millisecond
	for first := true; first || time.Now().Before(deadline); first = false {
		if err := b.valid(); err != nil {
			return fmt.Errorf("%w: %w: it changes nothing", errUnavailable, err)
		}
		if !first {
			time.Sleep(wait/2 + rand.N(wait))
			wait = min(2*wait, 100*time.Millisecond)
		}
		t := &etcdTxn{b: b, writes: map[string]*[]byte{}, reads: map[string]int64{}}
		if err := fn(t); err != nil {
			return err
		}
		if len(t.writes) == 0 {
			return nil
		}
		ok, err := t.commit()
		if err != nil && errors.Is(err, rpctypes.ErrNoLeader) && time.Now().Before(deadline) {
			// The members are electing a leader: the change was not
			// proposed, so it runs again.
			continue
		}
		if err != nil && b.lease != nil && !errors.Is(err, ErrTooLarge) {
			// Sent, and no answer (a timeout, the leader lost): the
			// change may be committed, now or later. The services'
			// memory must not go on without it, nor with it if it
			// never is: settled, it is either done or never will be.
			applied, serr := b.settle(t)
			switch {
			case serr != nil:
				return fmt.Errorf("%w (and settling it: %w)", err, serr)
			case applied:
				return nil
			case time.Now().Before(deadline):
				continue // not made, and never will be: made again
			}
			return fmt.Errorf("%w: it was not made, and never will be", err)
		}
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return ErrConflict
}

// settle decides a commit of t whose outcome is unknown. It moves the
// hold's key on (put again, under the same lease, if it is still as
// this node last left it): t's commit, fenced by the key's mod
// revision, then fails if it was not applied yet. In the same
// transaction it reads a bucket version key t wrote: its mod revision
// past the last commit this hold made says t was applied (nothing else
// writes them while the hold is this node's). It tries until the hold's
// safe end, or twice the request timeout: past that the node stops
// acting (its lease given up), for what it holds in memory may differ
// from the store; so it does when the hold's key no longer shows the
// hold.
func (b *etcdBackend) settle(t *etcdTxn) (applied bool, err error) {
	deadline := time.Now().Add(2 * b.timeout)
	// The last revision this hold committed: every version key written
	// later is t's.
	last := max(b.rev.Load(), b.holdRev)
	version := b.version(t.buckets[0])
	wait := 50 * time.Millisecond
	for {
		if err := b.valid(); err != nil {
			return false, err
		}
		ctx, cancel := t.ctx()
		resp, err := b.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(b.holdKey), "=", b.holdMod)).
			Then(clientv3.OpPut(b.holdKey, b.node, clientv3.WithLease(b.lease.id)), clientv3.OpGet(version)).
			Else(clientv3.OpGet(b.holdKey), clientv3.OpGet(version)).Commit()
		cancel()
		if err == nil {
			hold, ver := resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange()
			switch {
			case resp.Succeeded:
				b.holdMod = resp.Header.Revision
			case hold != nil && len(hold.Kvs) == 1 && hold.Kvs[0].CreateRevision == b.holdRev:
				// An earlier try of this one moved it, its answer lost
				// (nothing else writes the key while the hold lives).
				b.holdMod = hold.Kvs[0].ModRevision
			default:
				b.lease.lose()
				return false, fmt.Errorf("%w: its key in etcd is gone", ErrNotHolding)
			}
			applied = ver != nil && len(ver.Kvs) == 1 && ver.Kvs[0].ModRevision > last
			if applied {
				b.noteRev(ver.Kvs[0].ModRevision)
			}
			return applied, nil
		}
		if !time.Now().Add(wait).Before(deadline) {
			b.lease.lose()
			return false, fmt.Errorf("%w: the etcd cluster did not answer in time: %w", ErrNotHolding, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// noteRev notes rev as committed by this process.
func (b *etcdBackend) noteRev(rev int64) {
	for r := b.rev.Load(); r < rev && !b.rev.CompareAndSwap(r, rev); r = b.rev.Load() {
	}
}

func (b *etcdBackend) view(fn func(kv) error) error {
	return fn(&etcdTxn{b: b, readOnly: true})
}

func (b *etcdBackend) writeSnapshot(io.Writer) (int64, error) {
	return 0, errors.New("a store kept in etcd is backed up by etcd (etcdctl snapshot save), not by jinid")
}

func (b *etcdBackend) size() (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	st, err := b.cli.Status(ctx, b.cli.Endpoints()[0])
	if err != nil {
		return 0, false
	}
	return st.DbSizeInUse, true
}

// reach asks the cluster for a key, with a linearizable read: answered
// only by a member of a quorum.
func (b *etcdBackend) reach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(b.timeout, 2*time.Second))
	defer cancel()
	if _, err := b.cli.Get(ctx, b.prefix+"/meta/schema"); err != nil {
		return fmt.Errorf("the etcd cluster does not answer: %w", err)
	}
	return nil
}

// probeMaxOps finds the most operations the cluster takes in one
// transaction (its --max-txn-ops, which no API reports) by asking it:
// transactions of count-only reads of one key, doubling from etcd's
// default 128 while they pass, then halving the gap; at most about 20
// small requests, once. It assumes etcd's default if the cluster does
// not answer.
func probeMaxOps(ctx context.Context, cli *clientv3.Client, prefix string, timeout time.Duration) int {
	const etcdDefault, ceiling = 128, 1 << 15
	ok := func(n int) bool {
		ops := make([]clientv3.Op, n)
		for i := range ops {
			ops[i] = clientv3.OpGet(prefix+"/meta/schema", clientv3.WithCountOnly())
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := cli.Txn(cctx).Then(ops...).Commit()
		return err == nil
	}
	lo, hi := 0, etcdDefault // lo passes (0 trivially), hi is to try
	for hi <= ceiling && ok(hi) {
		lo, hi = hi, 2*hi
	}
	if hi > ceiling {
		return lo
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return max(lo, 1)
}

// MaxTxnOps is the most operations the etcd cluster takes in one
// transaction, as probed when the store was opened; 0 for an embedded
// store.
func (s *Store) MaxTxnOps() int {
	if b, ok := s.be.(*etcdBackend); ok {
		return b.maxOps
	}
	return 0
}

// maxWrites leaves room in a transaction for the version keys of the
// buckets it writes.
func (b *etcdBackend) maxWrites() int { return max(b.maxOps-16, 1) }

func (b *etcdBackend) close() error {
	switch {
	case b.n == nil:
		return b.cli.Close()
	case b.ownsNode:
		// The hold goes with the process: the standby need not wait for
		// the lease to run out.
		b.released.Store(true)
		b.n.Close()
		return nil
	}
	return b.release()
}

// release lets the hold go while the node lives on (a shard given to
// another node): nothing is committed through this store from here on,
// and the hold's key is deleted if it is still this hold's, so the node
// waiting for it takes it at once.
func (b *etcdBackend) release() error {
	b.released.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	_, err := b.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(b.holdKey), "=", b.holdRev)).
		Then(clientv3.OpDelete(b.holdKey)).Commit()
	if err != nil {
		// Its lease ends it, then.
		return fmt.Errorf("etcd: letting %s go: %w", b.holdKey, err)
	}
	return nil
}

// valid says whether a held store may be acted on now: its node's lease
// is surely alive, and the hold was not let go.
func (b *etcdBackend) valid() error {
	if b.lease == nil {
		return nil
	}
	if b.released.Load() {
		return ErrNotHolding
	}
	return b.lease.valid()
}

// etcdTxn is one transaction: reads at one revision of the cluster (the
// first read's), writes buffered until the commit, which succeeds only
// if nothing read changed since that revision.
type etcdTxn struct {
	b        *etcdBackend
	readOnly bool
	rev      int64              // the revision read at; 0 before the first read
	reads    map[string]int64   // key read: its mod revision then (0: absent)
	writes   map[string]*[]byte // key: its new value, nil to delete
	buckets  []string           // buckets written
}

// ctx bounds a request by the timeout and, for a held store, by the
// hold's safe end: a commit still waiting when the node must stop acting
// fails then (503), rather than outlive the hold.
func (t *etcdTxn) ctx() (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(t.b.timeout)
	if t.b.lease != nil {
		if end := t.b.lease.safeEnd(); end.Before(deadline) {
			deadline = end
		}
	}
	return context.WithDeadline(context.Background(), deadline)
}

func (t *etcdTxn) readOpts() []clientv3.OpOption {
	if t.rev == 0 {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithRev(t.rev)}
}

func (t *etcdTxn) get(bucket, key string) ([]byte, error) {
	k := t.b.key(bucket, key)
	if v, ok := t.writes[k]; ok {
		if v == nil {
			return nil, nil
		}
		return *v, nil
	}
	ctx, cancel := t.ctx()
	defer cancel()
	resp, err := t.b.cli.Get(ctx, k, t.readOpts()...)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s/%s: %w", errUnavailable, bucket, key, err)
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	if t.reads != nil {
		t.reads[k] = 0
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	if t.reads != nil {
		t.reads[k] = resp.Kvs[0].ModRevision
	}
	return resp.Kvs[0].Value, nil
}

func (t *etcdTxn) put(bucket, key string, v []byte) error {
	if t.readOnly {
		return errors.New("store: a write in a read-only transaction")
	}
	v = bytes.Clone(v)
	t.writes[t.b.key(bucket, key)] = &v
	t.wrote(bucket)
	return nil
}

func (t *etcdTxn) delete(bucket, key string) error {
	if t.readOnly {
		return errors.New("store: a write in a read-only transaction")
	}
	t.writes[t.b.key(bucket, key)] = nil
	t.wrote(bucket)
	return nil
}

func (t *etcdTxn) wrote(bucket string) {
	if !slices.Contains(t.buckets, bucket) {
		t.buckets = append(t.buckets, bucket)
	}
}

// maxRange bounds the keys one listing of a bucket reads at a time.
const maxRange = 1000

func (t *etcdTxn) forEach(bucket string, fn func(key string, v []byte) error) error {
	p := t.b.bucketPrefix(bucket)
	// The bucket's version is read, so that a writer adding or removing
	// a key of it meanwhile makes this transaction conflict.
	if t.reads != nil {
		if _, err := t.get(".version", bucket); err != nil { // the key version(bucket)
			return err
		}
	}
	// What this transaction wrote to the bucket, merged in key order.
	var mine []string
	for k := range t.writes {
		if strings.HasPrefix(k, p) {
			mine = append(mine, k)
		}
	}
	slices.Sort(mine)
	visit := func(k string, v []byte) error { return fn(strings.TrimPrefix(k, p), v) }
	err := t.scan(p, func(k string, v []byte) error {
		for len(mine) > 0 && mine[0] < k {
			if w := t.writes[mine[0]]; w != nil {
				if err := visit(mine[0], *w); err != nil {
					return err
				}
			}
			mine = mine[1:]
		}
		if len(mine) > 0 && mine[0] == k {
			w := t.writes[k]
			mine = mine[1:]
			if w == nil {
				return nil
			}
			v = *w
		}
		return visit(k, v)
	})
	if err != nil {
		return err
	}
	for _, k := range mine {
		if v := t.writes[k]; v != nil {
			if err := visit(k, *v); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit writes the transaction if nothing it read changed; it reports
// false on such a conflict.
func (t *etcdTxn) commit() (bool, error) {
	var cmps []clientv3.Cmp
	if t.b.lease != nil {
		// The hold is still this node's, as it last moved it.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.b.holdKey), "=", t.b.holdMod))
	}
	for k, rev := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	var ops []clientv3.Op
	for k, v := range t.writes {
		if v == nil {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(*v)))
		}
	}
	for _, bucket := range t.buckets {
		ops = append(ops, clientv3.OpPut(t.b.version(bucket), ""))
	}
	if len(ops) > t.b.maxOps {
		return false, fmt.Errorf("%w: %d writes, the cluster takes %d (its --max-txn-ops)", ErrTooLarge, len(ops), t.b.maxOps)
	}
	ctx, cancel := t.ctx()
	defer cancel()
	resp, err := t.b.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, fmt.Errorf("%w: committing %d changes: %w", errUnavailable, len(ops), err)
	}
	if resp.Succeeded {
		t.b.noteRev(resp.Header.Revision)
	}
	return resp.Succeeded, nil
}

func (t *etcdTxn) all(fn func(bucket, key string, v []byte) error) error {
	p := t.b.prefix + "/"
	return t.scan(p, func(k string, v []byte) error {
		bucket, key, ok := strings.Cut(strings.TrimPrefix(k, p), "/")
		if ok && bucket == ".shards" {
			// A shard's buckets are the deployment's, in part: an
			// export holds them (an import puts them in the
			// deployment's own, whose services serve them as well).
			_, rest, _ := strings.Cut(key, "/")
			if bucket, key, ok = strings.Cut(rest, "/"); ok && bucket == string(metaBucket) {
				return nil
			}
		}
		if !ok || strings.HasPrefix(bucket, ".") {
			return nil // the bucket versions, the holds
		}
		return fn(bucket, key, v)
	})
}

// scan visits the keys under a prefix in order, at the transaction's
// revision, maxRange at a time.
func (t *etcdTxn) scan(p string, fn func(key string, v []byte) error) error {
	from, end := p, clientv3.GetPrefixRangeEnd(p)
	for {
		ctx, cancel := t.ctx()
		resp, err := t.b.cli.Get(ctx, from, append(t.readOpts(), clientv3.WithRange(end), clientv3.WithLimit(maxRange), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))...)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: listing %s: %w", errUnavailable, p, err)
		}
		if t.rev == 0 {
			t.rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if err := fn(string(kv.Key), kv.Value); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

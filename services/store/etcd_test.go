//go:build !jinid_omit_etcd

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jinid/jinid/internal/rig/etcdtest"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

func startEtcd(t testing.TB) (string, func()) { return etcdtest.Start(t) }

func openEtcd(t testing.TB, endpoint, prefix string) *Store {
	t.Helper()
	st, err := OpenEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The store's contract on etcd, as on bbolt: a transaction's writes are
// all there or none; what it wrote it reads back, in key order with the
// rest; hooks run once, after the commit.
func TestEtcdBackend(t *testing.T) {
	endpoint, _ := startEtcd(t)
	for name, st := range map[string]*Store{"bbolt": func() *Store {
		st, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}(), "etcd": openEtcd(t, endpoint, "/test-contract")} {
		t.Run(name, func(t *testing.T) {
			hooks := 0
			err := st.Update(func(tx *Tx) error {
				for _, k := range []string{"b", "a", "c"} {
					if err := tx.Put("items", k, k+"-1"); err != nil {
						return err
					}
				}
				tx.OnCommit(func() { hooks++ })
				return nil
			})
			if err != nil || hooks != 1 {
				t.Fatalf("update: %v, hooks %d", err, hooks)
			}
			boom := errors.New("boom")
			if err := st.Update(func(tx *Tx) error {
				tx.Put("items", "d", "never")
				tx.OnCommit(func() { hooks++ })
				return boom
			}); !errors.Is(err, boom) || hooks != 1 {
				t.Fatalf("a failed update: %v, hooks %d", err, hooks)
			}
			err = st.Update(func(tx *Tx) error {
				if err := tx.Delete("items", "b"); err != nil {
					return err
				}
				if err := tx.Put("items", "aa", "new"); err != nil {
					return err
				}
				var got []string
				if err := tx.ForEach("items", func(k string, _ []byte) error { got = append(got, k); return nil }); err != nil {
					return err
				}
				if !slices.Equal(got, []string{"a", "aa", "c"}) {
					return fmt.Errorf("inside the transaction: %v", got)
				}
				var v string
				if ok, err := tx.Get("items", "aa", &v); !ok || err != nil || v != "new" {
					return fmt.Errorf("read back: %q %v %v", v, ok, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			st.View(func(tx *Tx) error {
				return tx.ForEach("items", func(k string, _ []byte) error { got = append(got, k); return nil })
			})
			if !slices.Equal(got, []string{"a", "aa", "c"}) {
				t.Fatalf("after: %v", got)
			}
			var v string
			if ok, _ := func() (bool, error) {
				var ok bool
				err := st.View(func(tx *Tx) error { var err error; ok, err = tx.Get("items", "d", &v); return err })
				return ok, err
			}(); ok {
				t.Fatal("a failed update's write is there")
			}
		})
	}
}

// Two stores on one prefix (two jinid nodes) writing the same keys:
// every increment counted (none lost to the other's), and a transaction
// that listed a bucket runs again when the other adds to it.
func TestEtcdConcurrentWriters(t *testing.T) {
	endpoint, _ := startEtcd(t)
	a, b := openEtcd(t, endpoint, "/test-race"), openEtcd(t, endpoint, "/test-race")
	var wg sync.WaitGroup
	for _, st := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				err := st.Update(func(tx *Tx) error {
					var n int
					if _, err := tx.Get("counters", "n", &n); err != nil {
						return err
					}
					// The count of the bucket's other keys, too: a listing
					// that must see the other's additions.
					seen := 0
					if err := tx.ForEach("marks", func(string, []byte) error { seen++; return nil }); err != nil {
						return err
					}
					if seen != n {
						return fmt.Errorf("%d marks for a count of %d", seen, n)
					}
					if err := tx.Put("marks", fmt.Sprintf("%04d", n), true); err != nil {
						return err
					}
					return tx.Put("counters", "n", n+1)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var n int
	a.View(func(tx *Tx) error { _, err := tx.Get("counters", "n", &n); return err })
	if n != 100 {
		t.Fatalf("count %d after 100 increments", n)
	}
}

// An etcd cluster out of reach: writes fail with Unavailable (a client
// is told to try again), never acknowledged, and the store says why.
func TestEtcdUnavailable(t *testing.T) {
	endpoint, stop := startEtcd(t)
	st := openEtcd(t, endpoint, "/test-down")
	if err := st.Update(func(tx *Tx) error { return tx.Put("k", "v", 1) }); err != nil {
		t.Fatal(err)
	}
	stop()
	err := st.Update(func(tx *Tx) error { return tx.Put("k", "v", 2) })
	var f *fault.Error
	if !errors.As(err, &f) || f.Code != apitypes.Unavailable {
		t.Fatalf("a write with etcd gone: %v", err)
	}
	if ok, why := st.Health(); ok || why == "" {
		t.Fatalf("health %v %q", ok, why)
	}
}

// An exclusive store is held by one process at a time: a second waits
// (told who holds it) and takes over when the first's hold ends; the
// first, its hold gone (its lease revoked, as when it is cut off past
// the TTL), changes nothing more and says it lost the store.
func TestEtcdExclusive(t *testing.T) {
	endpoint, _ := startEtcd(t)
	cfg := func(node string, waiting func(string)) EtcdConfig {
		return EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-hold", Timeout: 2 * time.Second, Exclusive: true,
			Node: node, LeaseTTL: 2 * time.Second, Waiting: waiting}
	}
	a, err := OpenEtcd(t.Context(), cfg("node-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Update(func(tx *Tx) error { return tx.Put("k", "v", "a") }); err != nil {
		t.Fatal(err)
	}
	waited := make(chan string, 1)
	opened := make(chan *Store, 1)
	go func() {
		b, err := OpenEtcd(t.Context(), cfg("node-b", func(h string) { waited <- h }))
		if err != nil {
			t.Error(err)
		}
		opened <- b
	}()
	select {
	case h := <-waited:
		if h != "node-a" {
			t.Fatalf("b waits for %q", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b neither waited nor opened")
	}
	// a's hold ends as if cut off: its lease revoked.
	be := a.be.(*etcdBackend)
	if _, err := be.cli.Revoke(t.Context(), be.lease.id); err != nil {
		t.Fatal(err)
	}
	var b *Store
	select {
	case b = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("b did not take over")
	}
	defer b.Close()
	select {
	case <-a.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a was not told it lost the store")
	}
	var f *fault.Error
	if err := a.Update(func(tx *Tx) error { return tx.Put("k", "v", "a again") }); !errors.As(err, &f) || f.Code != apitypes.Unavailable {
		t.Fatalf("a write by the one that lost the store: %v", err)
	}
	var v string
	b.View(func(tx *Tx) error { _, err := tx.Get("k", "v", &v); return err })
	if v != "a" {
		t.Fatalf("b reads %q", v)
	}
	if err := b.Update(func(tx *Tx) error { return tx.Put("k", "v", "b") }); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCommit: one change committed, on the embedded store and on a
// one-member etcd cluster on loopback (data on the same disk), the cost
// of a registration's write either way.
func BenchmarkCommit(b *testing.B) {
	endpoint, _ := startEtcd(b)
	embedded, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer embedded.Close()
	for name, st := range map[string]*Store{"embedded": embedded, "etcd": openEtcd(b, endpoint, "/bench")} {
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if err := st.Update(func(tx *Tx) error { return tx.Put("items", fmt.Sprint(i%1000), i) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A single box's store moved to etcd and back: every key exported,
// imported into an empty store, the same there; a store with data is
// not imported into; a line that is not an export's is named.
func TestExportImport(t *testing.T) {
	endpoint, _ := startEtcd(t)
	box, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	for i := range 300 { // several import batches
		b := []string{"items", "leases", "notify"}[i%3]
		if err := box.Update(func(tx *Tx) error { return tx.Put(b, fmt.Sprintf("k%03d", i), map[string]int{"n": i}) }); err != nil {
			t.Fatal(err)
		}
	}
	dump := func(st *Store) string {
		var b strings.Builder
		if _, err := st.Export(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	exported := dump(box)
	cluster := openEtcd(t, endpoint, "/moved")
	if n, err := cluster.Import(strings.NewReader(exported)); err != nil || n != 300 {
		t.Fatalf("import into etcd: %d, %v", n, err)
	}
	if got := dump(cluster); got != exported {
		t.Fatalf("etcd holds another store:\n%s", got)
	}
	back, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if n, err := back.Import(strings.NewReader(dump(cluster))); err != nil || n != 300 {
		t.Fatalf("import back: %d, %v", n, err)
	}
	if dump(back) != exported {
		t.Fatal("the store moved back differs")
	}
	if _, err := back.Import(strings.NewReader(exported)); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into a store with data: %v", err)
	}
	fresh, _ := Open(t.TempDir())
	defer fresh.Close()
	if _, err := fresh.Import(strings.NewReader(`{"bucket":"items","key":"a","value":1}` + "\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a bad line: %v", err)
	}
}

// A holder cut off from the cluster stops acting before the cluster
// could end its lease and let a standby in: within the TTL less the
// margin of its last keep-alive, and it is told (Lost).
func TestEtcdHolderCutOffStopsActingFirst(t *testing.T) {
	endpoint, stop := startEtcd(t)
	const ttl = 3 * time.Second
	a, err := OpenEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-cut", Timeout: time.Second,
		Exclusive: true, Node: "node-a", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Acting(); err != nil {
		t.Fatalf("the holder does not act: %v", err)
	}
	be := a.be.(*etcdBackend)
	lostAt := make(chan time.Time, 1)
	go func() { <-a.Lost(); lostAt <- time.Now() }() // ends at Close at the latest
	stop()                                           // it may take seconds, its streams draining
	// When its last keep-alive was sent (the cluster, stopping, may have
	// answered some while its streams drained).
	lastKept := be.lease.safeEnd().Add(be.lease.margin - ttl)
	var stopped time.Time
	select {
	case stopped = <-lostAt:
	case <-time.After(2 * ttl):
		t.Fatal("a holder cut off from etcd was not told it lost the store")
	}
	if err := a.Acting(); !errors.Is(err, ErrNotHolding) {
		t.Fatalf("Acting after the hold was lost: %v", err)
	}
	// The cluster keeps the lease at least ttl from the last keep-alive
	// it received, which was sent at lastKept or later.
	if end := lastKept.Add(ttl); !stopped.Before(end) {
		t.Fatalf("stopped acting at %v, not before the cluster could end its lease (%v)", stopped, end)
	}
	if !be.lease.safeEnd().Before(lastKept.Add(ttl)) {
		t.Fatal("the safe end is not before the lease's end")
	}
}

// The store learns what the cluster takes in one transaction (etcd's
// default --max-txn-ops, 128, here) and refuses a larger change with
// ErrTooLarge, writing nothing of it; Chunk splits batches to fit.
func TestEtcdTransactionBound(t *testing.T) {
	endpoint, _ := startEtcd(t)
	st, err := OpenEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-bound", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.MaxTxnOps(); n != 128 {
		t.Fatalf("probed %d operations per transaction, want etcd's default 128", n)
	}
	mw := st.MaxWrites()
	write := func(n int) error {
		return st.Update(func(tx *Tx) error {
			for i := range n {
				if err := tx.Put("b", fmt.Sprint(i), i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := write(mw); err != nil {
		t.Fatalf("a change of MaxWrites (%d) keys: %v", mw, err)
	}
	if err := write(200); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a change of 200 keys: %v", err)
	}
	var v int
	var found bool
	if err := st.View(func(tx *Tx) error { var err error; found, err = tx.Get("b", "150", &v); return err }); err != nil || found {
		t.Fatalf("a refused change wrote: %v %v", found, err)
	}
	for _, c := range []struct{ n, per, want int }{{1000, 1, mw}, {1000, 4, mw / 4}, {10, 1, 10}, {0, 1, 1}} {
		if got := st.Chunk(c.n, c.per); got != c.want {
			t.Errorf("Chunk(%d, %d) = %d, want %d", c.n, c.per, got, c.want)
		}
	}
}

// Shards of a deployment: a node holds one under its lease, another node
// waits for it and takes it when the first lets it go (not before); a
// store let go commits nothing more; what the shards hold is in the
// deployment's export, and an import of it into one box serves it all.
func TestEtcdShards(t *testing.T) {
	endpoint, _ := startEtcd(t)
	join := func(node string) *EtcdNode {
		n, err := JoinEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-shards", Timeout: 2 * time.Second,
			Node: node, LeaseTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	a, b := join("node-a"), join("node-b")
	root, err := a.Hold(t.Context(), "", HoldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s3, err := a.Hold(t.Context(), "03", HoldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Update(func(tx *Tx) error { return tx.Put("renewal.sets", "set-1", "in shard 03") }); err != nil {
		t.Fatal(err)
	}
	if err := root.Update(func(tx *Tx) error { return tx.Put("lookup.items", "item-1", "in the root") }); err != nil {
		t.Fatal(err)
	}
	// node-b waits for shard 03 while node-a holds it.
	waited := make(chan string, 1)
	taken := make(chan *Store, 1)
	go func() {
		st, err := b.Hold(t.Context(), "03", HoldConfig{Waiting: func(h string) { waited <- h }})
		if err != nil {
			t.Error(err)
		}
		taken <- st
	}()
	if h := <-waited; h != "node-a" {
		t.Fatalf("node-b waits for shard 03 held by %q", h)
	}
	select {
	case <-taken:
		t.Fatal("node-b took shard 03 while node-a held it")
	default:
	}
	if err := s3.Close(); err != nil {
		t.Fatal(err)
	}
	var s3b *Store
	select {
	case s3b = <-taken:
	case <-time.After(10 * time.Second):
		t.Fatal("node-b did not take shard 03 once node-a let it go")
	}
	defer s3b.Close()
	if err := s3.Acting(); !errors.Is(err, ErrNotHolding) {
		t.Errorf("node-a's shard 03, let go: acting %v", err)
	}
	var f *fault.Error
	if err := s3.Update(func(tx *Tx) error { return tx.Put("renewal.sets", "set-2", "x") }); !errors.As(err, &f) || f.Code != apitypes.Unavailable {
		t.Errorf("a commit through a shard let go: %v", err)
	}
	var v string
	if err := s3b.View(func(tx *Tx) error { _, err := tx.Get("renewal.sets", "set-1", &v); return err }); err != nil || v != "in shard 03" {
		t.Errorf("node-b reads %q in shard 03: %v", v, err)
	}
	if err := a.Acting(); err != nil {
		t.Errorf("node-a acting after letting a shard go: %v", err)
	}

	st, err := ReadCluster(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-shards"})
	if err != nil || st.Holder != "node-a" || st.Shards["03"] != "node-b" || len(st.Shards) != 1 {
		t.Errorf("the status: holder %q, shards %v, %v", st.Holder, st.Shards, err)
	}
	var dump strings.Builder
	if _, err := root.Export(&dump); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"bucket":"renewal.sets","key":"set-1","value":"in shard 03"}`, `{"bucket":"lookup.items","key":"item-1","value":"in the root"}`} {
		if !strings.Contains(dump.String(), want) {
			t.Errorf("the export has no %s:\n%s", want, dump.String())
		}
	}
	if strings.Contains(dump.String(), "shardholds") || strings.Contains(dump.String(), `"meta"`) {
		t.Errorf("the export has the holds or the shards' meta:\n%s", dump.String())
	}
	box, _ := Open(t.TempDir())
	defer box.Close()
	if n, err := box.Import(strings.NewReader(dump.String())); err != nil || n != 2 {
		t.Errorf("import into one box: %d, %v", n, err)
	}
}

// A member record under no etcd lease is no node: written by whoever can
// write the prefix, it is not among the members, and the status names
// it apart; a hold it is named in is no live holder.
func TestEtcdMemberWithoutLease(t *testing.T) {
	endpoint, _ := startEtcd(t)
	const prefix = "/test-forged"
	a, err := JoinEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second,
		Node: "node-a", LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	forged := `{"node":"evil","addrs":["192.0.2.66"],"clusterPort":4163,"certSHA256":"00"}`
	if _, err := cli.Put(t.Context(), prefix+"/.members/evil", forged); err != nil {
		t.Fatal(err)
	}
	// A shard held in the forged node's name, under no lease either.
	if _, err := cli.Put(t.Context(), prefix+"/.shardholds/07", "evil"); err != nil {
		t.Fatal(err)
	}
	// node-a's own record, under its lease (services/cluster writes it).
	if err := a.PutLeased(t.Context(), ".members/node-a", []byte(`{"node":"node-a"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := ReadCluster(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 1 || !slices.Equal(st.Ignored, []string{prefix + "/.members/evil"}) || st.Shards["07"] != "evil" || st.ShardsLive["07"] {
		t.Fatalf("cluster status %+v", st)
	}
}

// A commit whose answer is lost (a timeout, the etcd leader gone) is
// settled before the store goes on: one that was applied is reported
// done, its hooks run (the services' memory keeps step with etcd); one
// not applied yet never will be (its fence moved on), and the change is
// made again. Before, the first was an error with etcd holding it (a
// holder's memory without a change every follower's copy had), and the
// second could land after it, over what came later.
func TestEtcdUnknownCommitSettled(t *testing.T) {
	endpoint, _ := startEtcd(t)
	st, err := OpenEtcd(t.Context(), EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-settle", Timeout: 2 * time.Second,
		Exclusive: true, Node: "node-a", LeaseTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	be := st.be.(*etcdBackend)
	read := func() string {
		var v string
		if err := st.View(func(tx *Tx) error { _, err := tx.Get("items", "k", &v); return err }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	lossy := &lossyKV{KV: be.kv}
	be.kv = lossy

	// Applied, its answer lost.
	lossy.arm(lostAnswer)
	hooks := 0
	err = st.Update(func(tx *Tx) error {
		tx.OnCommit(func() { hooks++ })
		return tx.Put("items", "k", "v1")
	})
	if err != nil || hooks != 1 {
		t.Fatalf("a commit applied, its answer lost: %v, hooks run %d times (want done, once)", err, hooks)
	}
	if v := read(); v != "v1" {
		t.Fatalf("read %q, want v1", v)
	}

	// Not sent yet when its caller gave up: held back, sent after.
	lossy.arm(heldBack)
	tries := 0
	err = st.Update(func(tx *Tx) error {
		tries++
		return tx.Put("items", "k", fmt.Sprintf("v2-try%d", tries))
	})
	if err != nil || tries != 2 {
		t.Fatalf("a commit held back: %v after %d tries (want done on the second)", err, tries)
	}
	late, err := lossy.release()
	if err != nil {
		t.Fatal(err)
	}
	if late.Succeeded {
		t.Error("the commit held back was applied after it was settled")
	}
	if v := read(); v != "v2-try2" {
		t.Fatalf("read %q, want v2-try2", v)
	}
	if err := st.Acting(); err != nil {
		t.Fatalf("the holder stopped acting: %v", err)
	}
	// The next commits go on as ever.
	if err := st.Update(func(tx *Tx) error { return tx.Put("items", "k", "v3") }); err != nil || read() != "v3" {
		t.Fatalf("a commit after settling: %v, read %q", err, read())
	}
}

type loss int

const (
	lostAnswer loss = iota + 1 // sent, applied, the answer lost
	heldBack                   // not sent; sent when released
)

// lossyKV loses the answer of the next commit, or holds it back, as
// armed.
type lossyKV struct {
	clientv3.KV
	mu   sync.Mutex
	next loss
	held clientv3.Txn
}

func (k *lossyKV) arm(l loss) {
	k.mu.Lock()
	k.next = l
	k.mu.Unlock()
}

// release sends the commit held back.
func (k *lossyKV) release() (*clientv3.TxnResponse, error) {
	k.mu.Lock()
	txn := k.held
	k.held = nil
	k.mu.Unlock()
	if txn == nil {
		return nil, errors.New("no commit was held back")
	}
	return txn.Commit()
}

func (k *lossyKV) Txn(ctx context.Context) clientv3.Txn {
	return &lossyTxn{Txn: k.KV.Txn(context.WithoutCancel(ctx)), kv: k}
}

type lossyTxn struct {
	clientv3.Txn
	kv *lossyKV
}

func (t *lossyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *lossyTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *lossyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *lossyTxn) Commit() (*clientv3.TxnResponse, error) {
	k := t.kv
	k.mu.Lock()
	l := k.next
	k.next = 0
	if l == heldBack {
		k.held = t.Txn
	}
	k.mu.Unlock()
	lost := errors.New("context deadline exceeded (the answer lost)")
	switch l {
	case lostAnswer:
		if _, err := t.Txn.Commit(); err != nil {
			return nil, err
		}
		return nil, lost
	case heldBack:
		return nil, lost
	}
	return t.Txn.Commit()
}

package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/store/storetest"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixture is a grantor with one kind, "thing", whose resources are names
// in a bucket.
type fixture struct {
	t        *testing.T
	dir      string
	st       *store.Store
	clk      *clock.Fake
	g        *Grantor
	mu       sync.Mutex
	released []string
}

const (
	minute = int64(60_000)
	hour   = 60 * minute
)

func newFixture(t *testing.T, dir string, clk *clock.Fake) *fixture {
	st := storetest.Open(t, dir)
	f := &fixture{t: t, dir: dir, st: st, clk: clk}
	f.g = New(st, clk, slog.New(slog.DiscardHandler))
	f.g.Register("thing", Policy{Default: 5 * minute, Max: hour, MaxKey: "thingLeaseMax"}, func(tx *store.Tx, res string) error {
		tx.OnCommit(func() {
			f.mu.Lock()
			f.released = append(f.released, res)
			f.mu.Unlock()
		})
		return tx.Delete("things", res)
	})
	f.g.Register("forever", Policy{Default: hour, Max: Forever}, func(*store.Tx, string) error { return nil })
	if err := f.g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.g.Shutdown(context.Background()); st.Close() })
	return f
}

func (f *fixture) grant(kind, res string, d int64) (Record, error) {
	var r Record
	err := f.st.Update(func(tx *store.Tx) error {
		if err := tx.Put("things", res, true); err != nil {
			return err
		}
		var err error
		r, err = f.g.Grant(tx, kind, res, "", d)
		return err
	})
	return r, err
}

func (f *fixture) releasedList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.released...)
}

func TestGrantDurations(t *testing.T) {
	f := newFixture(t, t.TempDir(), clock.NewFake(t0))
	now := t0.UnixMilli()
	for _, tc := range []struct {
		name      string
		kind      string
		requested int64
		want      int64  // expiration; 0: InvalidArgument
		cut       string // the limit the grant says cut it
	}{
		{"less than the maximum", "thing", 30_000, now + 30_000, ""},
		{"more than the maximum is cut", "thing", 2 * hour, now + hour, "thingLeaseMax"},
		{"ANY gets the default", "thing", Any, now + 5*minute, ""},
		{"FOREVER is capped", "thing", Forever, now + hour, "thingLeaseMax"},
		{"FOREVER without a cap never expires", "forever", Forever, Never, ""},
		{"huge duration saturates", "forever", Forever - 1, Never, ""},
		{"zero is invalid", "thing", 0, 0, ""},
		{"negative other than ANY is invalid", "thing", -2, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.grant(tc.kind, tc.name, tc.requested)
			if tc.want == 0 {
				if !fault.Is(err, apitypes.InvalidArgument) {
					t.Fatalf("error %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil || r.Expiration != tc.want || r.CutBy != tc.cut {
				t.Fatalf("expiration %d, cut by %q (%v), want %d, %q", r.Expiration, r.CutBy, err, tc.want, tc.cut)
			}
			if tc.cut == "" {
				return
			}
			// A renewal past the maximum says so too.
			res := f.g.RenewAll([]Renewal{{ID: r.ID, Duration: Forever}, {ID: r.ID, Duration: minute}})
			if res[0].Err != nil || res[0].Lease.CutBy != tc.cut || res[1].Lease.CutBy != "" {
				t.Fatalf("renewals: %+v", res)
			}
		})
	}
}

func TestRenewCancelExpire(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFixture(t, t.TempDir(), clk)
	a, _ := f.grant("thing", "a", minute)
	b, _ := f.grant("thing", "b", 2*minute)

	clk.Advance(30 * time.Second)
	r, err := f.g.Renew(a.ID, minute) // a new duration from now, not added
	if err != nil || r.Expiration != t0.UnixMilli()+90_000 {
		t.Fatalf("renew: %+v %v", r, err)
	}
	if _, err := f.g.Renew(a.ID, 0); !fault.Is(err, apitypes.InvalidArgument) {
		t.Fatalf("renew with 0: %v", err)
	}
	if got, _ := f.g.Get(a.ID); got.Expiration != r.Expiration {
		t.Fatal("a failed renewal must leave the lease as it was")
	}
	if _, err := f.g.Renew("nope", minute); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("renew unknown: %v", err)
	}

	clk.Advance(61 * time.Second) // t0+91s: a (t0+90s) expired, b (t0+120s) not
	if got := f.releasedList(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("released %v, want [a]", got)
	}
	if _, err := f.g.Renew(a.ID, minute); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("renewing an expired lease: %v", err)
	}
	if err := f.g.Cancel(b.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Cancel(b.ID); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("cancelling twice: %v", err)
	}
	if got := f.releasedList(); len(got) != 2 || got[1] != "b" {
		t.Fatalf("released %v, want [a b]", got)
	}
	clk.Advance(time.Hour)
	if len(f.releasedList()) != 2 || f.g.Count() != 0 {
		t.Fatalf("released %v, %d leases left", f.releasedList(), f.g.Count())
	}
	var exists bool
	f.st.View(func(tx *store.Tx) error { exists, _ = tx.Get("things", "a", new(bool)); return nil })
	if exists {
		t.Fatal("expiry did not free the resource in the store")
	}
}

func TestBatches(t *testing.T) {
	clk := clock.NewFake(t0)
	f := newFixture(t, t.TempDir(), clk)
	a, _ := f.grant("thing", "a", minute)
	b, _ := f.grant("thing", "b", minute)
	res := f.g.RenewAll([]Renewal{{a.ID, 10 * minute}, {"unknown", minute}, {b.ID, -5}})
	if res[0].Err != nil || res[0].Lease.Expiration != t0.UnixMilli()+10*minute {
		t.Errorf("a: %+v", res[0])
	}
	if !fault.Is(res[1].Err, apitypes.UnknownLease) || !fault.Is(res[2].Err, apitypes.InvalidArgument) {
		t.Errorf("failures: %v, %v", res[1].Err, res[2].Err)
	}
	if got, _ := f.g.Get(b.ID); got.Expiration != b.Expiration {
		t.Error("b's failed renewal changed it")
	}
	errs := f.g.CancelAll([]string{b.ID, "unknown", b.ID})
	if errs[0] != nil || !fault.Is(errs[1], apitypes.UnknownLease) {
		t.Errorf("cancelAll: %v", errs)
	}
	if _, err := f.g.Get(a.ID); err != nil {
		t.Error("a was not in the cancel batch")
	}
}

// Leases survive a restart; those that lapsed while down are released at
// start.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	f := newFixture(t, dir, clk)
	short, _ := f.grant("thing", "short", minute)
	long, _ := f.grant("thing", "long", hour)
	f.g.Shutdown(context.Background())
	f.st.Close()

	clk.Advance(2 * time.Minute) // down for two minutes
	f2 := newFixture(t, dir, clk)
	if got := f2.releasedList(); len(got) != 1 || got[0] != "short" {
		t.Fatalf("released at start %v, want [short]", got)
	}
	if _, err := f2.g.Get(short.ID); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatal("lapsed lease still known")
	}
	if got, err := f2.g.Get(long.ID); err != nil || got.Expiration != long.Expiration {
		t.Fatalf("long lease after restart: %+v %v", got, err)
	}
	clk.Advance(time.Hour)
	if got := f2.releasedList(); len(got) != 2 {
		t.Fatalf("released %v after the long lease's end", got)
	}
}

// A volatile kind's leases are granted, renewed, cancelled and expired
// without a store write, and are gone after a restart.
func TestVolatile(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	f := newFixture(t, dir, clk)
	var mu sync.Mutex
	var released []string
	f.g.RegisterVolatile("txn", Policy{Default: minute, Max: hour}, func(tx *store.Tx, res string) error {
		if tx != nil {
			t.Error("a volatile release got a store transaction")
		}
		mu.Lock()
		released = append(released, res)
		mu.Unlock()
		return nil
	})
	stored := func() int {
		n := 0
		f.st.View(func(tx *store.Tx) error {
			return tx.ForEach(bucket, func(string, []byte) error { n++; return nil })
		})
		return n
	}
	a, err := f.g.Grant(nil, "txn", "a", "", lease30s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.g.Grant(nil, "txn", "b", "", minute)
	c, _ := f.g.Grant(nil, "txn", "c", "", minute)
	if n := stored(); n != 0 || f.g.Count() != 3 {
		t.Fatalf("%d stored, %d tracked; want 0 and 3", n, f.g.Count())
	}
	if r, err := f.g.Renew(b.ID, hour); err != nil || r.Expiration != t0.UnixMilli()+hour {
		t.Fatalf("renew: %+v %v", r, err)
	}
	if err := f.g.Cancel(c.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Cancel(c.ID); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("cancelling twice: %v", err)
	}
	clk.Advance(31 * time.Second) // a expires
	mu.Lock()
	got := append([]string(nil), released...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "c" || got[1] != "a" {
		t.Fatalf("released %v, want [c a]", got)
	}
	if _, err := f.g.Get(a.ID); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("expired volatile lease: %v", err)
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d leases stored", n)
	}
	f.g.Shutdown(context.Background())
	f.st.Close()
	f2 := newFixture(t, dir, clk)
	f2.g.RegisterVolatile("txn", Policy{Default: minute, Max: hour}, func(*store.Tx, string) error { return nil })
	if _, err := f2.g.Get(b.ID); !fault.Is(err, apitypes.UnknownLease) {
		t.Fatalf("a volatile lease outlived a restart: %v", err)
	}
}

const lease30s = 30_000

// Leases expiring together on a store in etcd, which takes 128
// operations per transaction (etcd's default): all are released, in
// parts, each part one transaction.
func TestExpiryInParts(t *testing.T) {
	t.Setenv(storetest.Env, "etcd")
	clk := clock.NewFake(t0)
	f := newFixture(t, t.TempDir(), clk)
	const n = 300
	if f.st.Chunk(n, 4) >= n {
		t.Fatalf("the store takes %d leases' release at once: the test shows nothing", f.st.Chunk(n, 4))
	}
	for i := range n {
		if _, err := f.grant("thing", fmt.Sprint(i), minute); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Minute)
	testenv.Until(t, "every lease released", func() bool { return len(f.releasedList()) == n })
	if f.g.Count() != 0 {
		t.Fatalf("%d leases left", f.g.Count())
	}
}

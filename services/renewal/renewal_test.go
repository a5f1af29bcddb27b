package renewal

// The conformance suite of the lease renewal service: one named case per
// rule of the LR specification (shared/specs 000, 003) and of issue 8, on
// an injected clock and a fake grantor.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

const (
	g1 = "http://grantor1:4162"
	g2 = "http://grantor2:4162"
)

// fakeGrantors answers renewAll for its grantors; leases are known by ID.
// It fails the test on a call the service must not make: to another
// grantor, or renewing a lease the grantor said is gone (unknown, or
// denied: the service removes it from its set).
type fakeGrantors struct {
	t     testing.TB
	mu    sync.Mutex
	clk   *clock.Fake
	gone  map[string]string // lease → what the grantor said of it
	known []string          // the grantors
	exp   map[string]int64  // lease → expiration
	mode  map[string]string // lease → "unknown", "denied" or "fail"
	down  map[string]bool   // grantor → unreachable
	max   int64             // the most a renewal grants
	calls []call
	// hold makes calls to a grantor wait until it is closed (or the
	// call's context ends): a hung grantor.
	hold    map[string]chan struct{}
	waiting int // calls waiting in hold
}

func newFakeGrantors(t testing.TB, clk *clock.Fake, max int64, grantors ...string) *fakeGrantors {
	return &fakeGrantors{t: t, clk: clk, exp: map[string]int64{}, mode: map[string]string{}, down: map[string]bool{},
		gone: map[string]string{}, known: grantors, max: max}
}

func (f *fakeGrantors) hanging() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}

type call struct {
	grantor string
	at      int64
	rs      []lease.Renewal
}

func (f *fakeGrantors) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clk.Now().UnixMilli()
	f.calls = append(f.calls, call{grantor, now, slices.Clone(rs)})
	if !slices.Contains(f.known, grantor) {
		f.t.Errorf("renewal at %s, a grantor no lease names", grantor)
	}
	for _, r := range rs {
		if said, ok := f.gone[r.ID]; ok {
			f.t.Errorf("lease %s renewed again after its grantor said %s", r.ID, said)
		}
	}
	if hold := f.hold[grantor]; hold != nil {
		f.waiting++
		f.mu.Unlock()
		select {
		case <-hold:
		case <-ctx.Done():
		}
		f.mu.Lock()
		f.waiting--
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if f.down[grantor] {
		return nil, errors.New("connection refused")
	}
	out := make([]Result, len(rs))
	for i, r := range rs {
		switch f.mode[r.ID] {
		case "unknown":
			out[i].Err = &fault.Error{Code: apitypes.UnknownLease, Message: "gone"}
			f.gone[r.ID] = "unknown"
		case "denied":
			out[i].Err = &fault.Error{Code: apitypes.LeaseDenied, Message: "no more"}
			f.gone[r.ID] = "denied"
		case "fail":
			out[i].Err = &fault.Error{Code: apitypes.Internal, Message: "try later"}
		default:
			d := r.Duration
			if d == lease.Any || d == lease.Forever || d > f.max {
				d = f.max
			}
			exp := now + d
			if d >= lease.Never-now {
				exp = lease.Never
			}
			f.exp[r.ID] = exp
			out[i].Expiration = exp
		}
	}
	return out, nil
}

func (f *fakeGrantors) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeGrantors) callsTo(grantor string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.grantor == grantor {
			out = append(out, c)
		}
	}
	return out
}

type sent struct{ ch chan event.Delivery }

func (s *sent) Send(d event.Delivery) { s.ch <- d }

type rig struct {
	t    *testing.T
	clk  *clock.Fake
	dir  string
	st   *store.Store
	g    *lease.Grantor
	s    *Service
	fake *fakeGrantors
	ev   *sent
}

const margin = 10 * time.Second

func newRig(t *testing.T) *rig {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	r := &rig{t: t, clk: clk, dir: t.TempDir(), ev: &sent{ch: make(chan event.Delivery, 100)},
		fake: newFakeGrantors(t, clk, 60_000, g1, g2)}
	r.open()
	t.Cleanup(r.close)
	return r
}

func (r *rig) open() {
	st, err := store.Open(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
	r.g = lease.New(st, r.clk, slog.New(slog.DiscardHandler))
	r.s, err = New(Config{Store: st, Grantor: r.g, Dispatcher: r.ev, Renewer: r.fake, Clock: r.clk, SafetyMargin: margin})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.g.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.s.Start(context.Background())
}

func (r *rig) close() {
	if r.s == nil {
		return
	}
	r.s.Shutdown(context.Background())
	r.g.Shutdown(context.Background())
	r.st.Close()
	r.s = nil
}

func (r *rig) now() int64 { return r.clk.Now().UnixMilli() }

// advance moves the fake clock, letting each renewal call a timer starts
// finish (and set its own timers) before the clock moves on; calls to a
// grantor the test holds (hang) are not waited for.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.clk.AdvanceSettling(d, r.settle)
}

// release lets the calls held by hold return, and waits until they
// have been recorded.
func (r *rig) release(hold chan struct{}) {
	r.t.Helper()
	close(hold)
	testenv.Until(r.t, "the held calls to return", func() bool { return r.fake.hanging() == 0 })
	r.settle()
}

func (r *rig) settle() {
	testenv.Until(r.t, "the renewal calls in flight to end", func() bool { return r.s == nil || r.s.inflight.Load() <= int64(r.fake.hanging()) })
}

func (r *rig) create(d int64) Created {
	r.t.Helper()
	c, err := r.s.Create(d, "")
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// clientLease makes a lease at a grantor, expiring in d.
func (r *rig) clientLease(grantor, id string, d time.Duration) ClientLease {
	exp := r.now() + d.Milliseconds()
	r.fake.set(func() { r.fake.exp[id] = exp })
	return ClientLease{Grantor: grantor, ID: id, Expiration: exp}
}

// noTimerWithin fails if the service armed a timer due within d, but for
// the set leases' own expiration (a day at most).
func (r *rig) noTimerWithin(d time.Duration) {
	r.t.Helper()
	limit := r.clk.Now().Add(d)
	for _, at := range r.clk.Pending() {
		if !at.After(limit) {
			r.t.Fatalf("a timer is armed for %v from now, with nothing due", at.Sub(r.clk.Now()))
		}
	}
}

func (r *rig) event() event.Delivery {
	r.t.Helper()
	select {
	case d := <-r.ev.ch:
		return d
	case <-time.After(5 * time.Second):
		r.t.Fatal("no event")
	}
	return event.Delivery{}
}

func (r *rig) noEvent() {
	r.t.Helper()
	select {
	case d := <-r.ev.ch:
		r.t.Fatalf("unexpected event %s seq %d %+v", d.Event.Remote().Type, d.Event.Remote().SeqNum, d.Event)
	case <-time.After(50 * time.Millisecond):
	}
}

func codeOf(err error) fault.Code { return fault.CodeOf(err) }

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *rig)
	}{
		// createLeaseRenewalSet
		{"create/positive-duration-granted", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if c.Lease.Expiration != r.now()+60_000 {
				t.Fatalf("expiration %d", c.Lease.Expiration-r.now())
			}
		}},
		{"create/ANY-gets-the-default", func(t *testing.T, r *rig) {
			if c := r.create(lease.Any); c.Lease.Expiration-r.now() != DefaultPolicy.Default {
				t.Fatalf("granted %d", c.Lease.Expiration-r.now())
			}
		}},
		{"create/FOREVER-capped-at-the-maximum", func(t *testing.T, r *rig) {
			if c := r.create(lease.Forever); c.Lease.Expiration-r.now() != DefaultPolicy.Max {
				t.Fatalf("granted %d", c.Lease.Expiration-r.now())
			}
		}},
		{"create/zero-or-negative-is-InvalidArgument", func(t *testing.T, r *rig) {
			for _, d := range []int64{0, -2, math.MinInt64} {
				if _, err := r.s.Create(d, ""); codeOf(err) != apitypes.InvalidArgument {
					t.Errorf("Create(%d): %v", d, err)
				}
			}
		}},
		{"create/sets-never-equal", func(t *testing.T, r *rig) {
			a, b := r.create(60_000), r.create(60_000)
			if a.ID == b.ID || a.Lease.ID == b.Lease.ID {
				t.Fatal("two sets share an ID or a lease")
			}
		}},
		// renewFor arguments
		{"renewFor/null-lease-is-NullArgument", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.s.RenewFor(c.ID, ClientLease{}, 1000, 1000); codeOf(err) != apitypes.NullArgument {
				t.Fatal(err)
			}
		}},
		{"renewFor/bad-grantor-is-InvalidArgument", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.s.RenewFor(c.ID, ClientLease{Grantor: "ftp://x", ID: "a", Expiration: r.now() + 1000}, 1000, 1000); codeOf(err) != apitypes.InvalidArgument {
				t.Fatal(err)
			}
		}},
		{"renewFor/renewDuration-must-be-positive", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			for _, d := range []int64{0, -5} {
				if err := r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), 10_000, d); codeOf(err) != apitypes.InvalidArgument {
					t.Errorf("renewDuration %d: %v", d, err)
				}
			}
		}},
		{"renewFor/renewDuration-ANY-only-with-desired-FOREVER", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), 10_000, lease.Any); codeOf(err) != apitypes.InvalidArgument {
				t.Fatalf("ANY with a finite desired duration: %v", err)
			}
			if err := r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, lease.Any); err != nil {
				t.Fatalf("ANY with FOREVER: %v", err)
			}
		}},
		{"renewFor/unknown-set-is-NoSuchObject", func(t *testing.T, r *rig) {
			if err := r.s.RenewFor("nope", r.clientLease(g1, "a", time.Minute), 1000, 1000); codeOf(err) != apitypes.NoSuchObject {
				t.Fatal(err)
			}
		}},
		{"renewFor/desired-saturates-at-the-maximum", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), math.MaxInt64-1, lease.Forever); err != nil {
				t.Fatal(err)
			}
			ls, _ := r.s.Leases(c.ID)
			if ls[0].Desired != math.MaxInt64 {
				t.Fatalf("desired %d", ls[0].Desired)
			}
		}},
		{"renewFor/negative-desired-drops-at-once-without-event", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			if err := r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Any, 1000); err != nil {
				t.Fatalf("no exception: %v", err)
			}
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatalf("kept %v", ls)
			}
			r.noEvent() // its actual expiration is after the desired one
		}},
		{"renewFor/own-set-lease-refused-while-unexpired", func(t *testing.T, r *rig) {
			a, b := r.create(60_000), r.create(60_000)
			own := ClientLease{Grantor: "http://me:4162", ID: b.Lease.ID, Expiration: b.Lease.Expiration}
			if err := r.s.RenewFor(a.ID, own, 10_000, 1000); codeOf(err) != apitypes.InvalidArgument {
				t.Fatal(err)
			}
		}},
		{"renewFor/lease-in-another-set-refused", func(t *testing.T, r *rig) {
			a, b := r.create(60_000), r.create(60_000)
			l := r.clientLease(g1, "a", time.Minute)
			if err := r.s.RenewFor(a.ID, l, 10_000, 1000); err != nil {
				t.Fatal(err)
			}
			if err := r.s.RenewFor(b.ID, l, 10_000, 1000); codeOf(err) != apitypes.InvalidArgument {
				t.Fatalf("in another set: %v", err)
			}
		}},
		{"renewFor/again-takes-the-new-durations", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			l := r.clientLease(g1, "a", time.Minute)
			r.s.RenewFor(c.ID, l, 10_000, 1000)
			l.Expiration += 999 // another copy of it: the set keeps its own
			if err := r.s.RenewFor(c.ID, l, 20_000, 2000); err != nil {
				t.Fatal(err)
			}
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Desired != r.now()+20_000 || ls[0].RenewDuration != 2000 || ls[0].Expiration == l.Expiration {
				t.Fatalf("leases %+v", ls)
			}
		}},
		{"renewFor/expired-lease-dropped-with-event-when-before-desired", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			l := ClientLease{Grantor: g1, ID: "old", Expiration: r.now() - 1}
			if err := r.s.RenewFor(c.ID, l, 60_000, 1000); err != nil {
				t.Fatal(err)
			}
			e := r.event()
			if e.Event.Remote().Type != FailureEvent || e.Event.Remote().EventID != FailureEventID || e.Event.(apitypes.RenewalFailureEvent).Lease.ID != "old" {
				t.Fatalf("event %+v", e.Event)
			}
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatalf("kept %v", ls)
			}
		}},
		// renewals
		{"renew/a-safety-margin-before-expiration", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.advance(time.Minute - margin - time.Millisecond)
			if n := len(r.fake.callsTo(g1)); n != 0 {
				t.Fatalf("%d calls before the margin", n)
			}
			r.advance(time.Millisecond)
			if n := len(r.fake.callsTo(g1)); n != 1 {
				t.Fatalf("%d calls at the margin", n)
			}
		}},
		{"renew/for-the-renew-duration-capped-by-what-is-left-of-desired", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), 75_000, 40_000)
			r.advance(50 * time.Second) // renewed for 40 s (25 s left of desired > 40 s? no: 25 s)
			calls := r.fake.callsTo(g1)
			if len(calls) != 1 || calls[0].rs[0].Duration != 25_000 {
				t.Fatalf("calls %+v", calls)
			}
		}},
		{"renew/until-desired-then-leaves-without-event", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", 30*time.Second), 45_000, 60_000)
			r.advance(time.Minute)
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatalf("still in the set: %v", ls)
			}
			r.noEvent()
		}},
		{"renew/batch-for-one-grantor-due-close-together", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			for i, d := range []time.Duration{60 * time.Second, 61 * time.Second, 62 * time.Second} {
				r.s.RenewFor(c.ID, r.clientLease(g1, string(rune('a'+i)), d), lease.Forever, 60_000)
			}
			r.advance(51 * time.Second)
			calls := r.fake.callsTo(g1)
			if len(calls) != 1 || len(calls[0].rs) != 3 {
				t.Fatalf("calls %+v, want one with 3 leases", calls)
			}
		}},
		{"renew/far-apart-due-times-separate-calls", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", 60*time.Second), lease.Forever, 60_000)
			r.s.RenewFor(c.ID, r.clientLease(g1, "b", 90*time.Second), lease.Forever, 60_000)
			r.advance(81 * time.Second)
			if calls := r.fake.callsTo(g1); len(calls) != 2 || len(calls[0].rs) != 1 {
				t.Fatalf("calls %+v", calls)
			}
		}},
		{"renew/one-call-per-grantor", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.s.RenewFor(c.ID, r.clientLease(g2, "b", time.Minute), lease.Forever, 60_000)
			r.advance(51 * time.Second)
			if len(r.fake.callsTo(g1)) != 1 || len(r.fake.callsTo(g2)) != 1 {
				t.Fatalf("calls %+v", r.fake.calls)
			}
		}},
		{"renew/margin-at-most-half-the-period", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", 4*time.Second), lease.Forever, 4000)
			r.advance(2*time.Second - time.Millisecond)
			if n := len(r.fake.callsTo(g1)); n != 0 {
				t.Fatal("renewed before half its period")
			}
			r.advance(time.Millisecond)
			if n := len(r.fake.callsTo(g1)); n != 1 {
				t.Fatal("not renewed at half its period")
			}
		}},
		{"renew/keeps-a-lease-alive-for-long", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			for range 60 { // an hour, a minute at a time
				r.advance(time.Minute)
			}
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Expiration <= r.now() {
				t.Fatalf("leases %+v", ls)
			}
		}},
		{"renew/indefinite-failure-retried-until-success", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.fake.set(func() { r.fake.down[g1] = true })
			r.advance(55 * time.Second)
			r.fake.set(func() { r.fake.down[g1] = false })
			r.advance(4 * time.Second)
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Expiration <= r.now()+30_000 || len(r.fake.callsTo(g1)) < 3 {
				t.Fatalf("leases %+v after %d calls", ls, len(r.fake.callsTo(g1)))
			}
			r.noEvent()
		}},
		{"renew/indefinite-until-expiration-then-event-with-last-error", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.fake.set(func() { r.fake.mode["a"] = "fail" })
			r.advance(time.Minute)
			e := r.event()
			if e.Event.Remote().Type != FailureEvent || e.Event.(apitypes.RenewalFailureEvent).Error.Message != "try later" {
				t.Fatalf("event %+v", e.Event)
			}
			r.noEvent()
		}},
		{"renew/UnknownLease-ends-it-with-event", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.fake.set(func() { r.fake.mode["a"] = "unknown" })
			r.advance(51 * time.Second)
			if e := r.event(); e.Event.(apitypes.RenewalFailureEvent).Error.Code != apitypes.UnknownLease {
				t.Fatalf("event %+v", e.Event)
			}
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatal("kept after a definite failure")
			}
		}},
		{"renew/LeaseDenied-gives-exactly-one-event", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.fake.set(func() { r.fake.mode["a"] = "denied" })
			r.advance(2 * time.Minute)
			if e := r.event(); e.Event.(apitypes.RenewalFailureEvent).Error.Code != apitypes.LeaseDenied || e.Event.Remote().SeqNum != 1 {
				t.Fatalf("event %+v", e.Event)
			}
			r.noEvent()
			if n := len(r.fake.callsTo(g1)); n != 1 {
				t.Fatalf("%d calls after a denial", n)
			}
		}},
		// nothing due, no timer (issue 13.1)
		{"renew/FOREVER-lease-arms-no-timer", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever) // the set's lease: a day at most
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "f", Expiration: lease.Never}, lease.Forever, 60_000)
			r.noTimerWithin(time.Hour)
			r.advance(time.Hour)
			if n := len(r.fake.callsTo(g1)); n != 0 {
				t.Fatalf("%d renewal calls for a FOREVER lease", n)
			}
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 {
				t.Fatalf("leases %+v", ls)
			}
			r.close()
			r.open() // and after a restart
			r.noTimerWithin(time.Hour)
		}},
		{"renew/renewed-to-FOREVER-arms-no-timer", func(t *testing.T, r *rig) {
			r.fake.set(func() { r.fake.max = lease.Forever })
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, lease.Forever)
			r.advance(time.Minute) // renewed once, for ever
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 || ls[0].Expiration != lease.Never {
				t.Fatalf("leases %+v", ls)
			}
			r.noTimerWithin(time.Hour)
		}},
		{"renew/FOREVER-lease-with-a-desired-end-leaves-then", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "f", Expiration: lease.Never}, 60_000, 60_000)
			r.advance(time.Minute - time.Millisecond)
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 {
				t.Fatal("left before its desired expiration")
			}
			r.advance(time.Millisecond)
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatal("kept past its desired expiration")
			}
			r.noEvent()
			r.noTimerWithin(time.Hour)
		}},
		// a hung grantor holds up nothing (issue 13.3)
		{"renew/hung-call-lease-leaves-a-grace-after-its-expiration-with-event", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			l := r.clientLease(g1, "a", time.Minute)
			r.s.RenewFor(c.ID, l, lease.Forever, 60_000)
			hold := make(chan struct{})
			r.fake.set(func() { r.fake.hold = map[string]chan struct{}{g1: hold} })
			r.advance(50 * time.Second) // the renewal call starts and hangs
			if n := len(r.fake.callsTo(g1)); n != 1 {
				t.Fatalf("%d calls", n)
			}
			r.advance(10*time.Second - time.Millisecond)
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 {
				t.Fatalf("left before its expiration: %+v", ls)
			}
			r.noEvent()
			r.advance(time.Millisecond) // its actual expiration: its renewal is under way
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 {
				t.Fatalf("left while its renewal was under way: %+v", ls)
			}
			r.noEvent()
			r.advance(time.Second) // the grace: a round trip (none yet measured) and a second
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatalf("still listed a grace after its expiration: %+v", ls)
			}
			e := r.event()
			el := e.Event.(apitypes.RenewalFailureEvent).Lease
			if e.Event.Remote().Type != FailureEvent || el.ID != "a" || el.Expiration != l.Expiration || el.Remaining != 0 || e.Event.(apitypes.RenewalFailureEvent).Error != nil {
				t.Fatalf("event %+v", e.Event)
			}
			close(hold) // the call returns late: it changes nothing
			r.settle()
			r.noEvent()
			if ls, _ := r.s.Leases(c.ID); len(ls) != 0 {
				t.Fatalf("back after the late answer: %+v", ls)
			}
		}},
		{"renew/an-answer-just-after-the-expiration-keeps-what-the-grantor-renewed", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			hold := make(chan struct{})
			r.fake.set(func() { r.fake.hold = map[string]chan struct{}{g1: hold} })
			r.advance(60 * time.Second) // renewal sent at 50 s, answered after its expiration
			r.release(hold)
			r.advance(500 * time.Millisecond)
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Expiration <= r.now() {
				t.Fatalf("the lease its grantor renewed left the set: %+v", ls)
			}
			r.noEvent()
		}},
		{"renew/hung-call-other-leases-of-that-grantor-leave-on-time", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			b := r.clientLease(g1, "b", 70*time.Second) // due at 60 s, while the call for a hangs
			r.s.RenewFor(c.ID, b, lease.Forever, 60_000)
			r.s.RenewFor(c.ID, r.clientLease(g2, "c", time.Minute), lease.Forever, 60_000)
			hold := make(chan struct{})
			defer close(hold)
			r.fake.set(func() { r.fake.hold = map[string]chan struct{}{g1: hold} })
			r.advance(61 * time.Second) // a's expiration and its grace (its renewal hangs)
			if e := r.event(); e.Event.(apitypes.RenewalFailureEvent).Lease.ID != "a" {
				t.Fatalf("first event %+v", e.Event)
			}
			r.advance(9 * time.Second) // b's expiration: b waits for the call, not in it
			e := r.event()
			if el := e.Event.(apitypes.RenewalFailureEvent).Lease; el.ID != "b" || el.Expiration != b.Expiration || e.Event.Remote().SeqNum != 2 {
				t.Fatalf("second event %+v", e.Event)
			}
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].ID != "c" || ls[0].Expiration <= r.now() {
				t.Fatalf("another grantor's lease not renewed meanwhile: %+v", ls)
			}
		}},
		{"renew/due-renewal-not-yet-started-when-the-end-timer-runs-first", func(t *testing.T, r *rig) {
			// On a busy machine timers run late, and the one that ends
			// leases may run before the one that starts a renewal due
			// long ago: that lease is waited for, not dropped.
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.clk.Skip(60*time.Second + 500*time.Millisecond) // its renewal due 10 s ago; half a second past its end
			r.s.fireEnds()
			r.advance(0)
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Expiration <= r.now() {
				t.Fatalf("lease dropped or not renewed: %+v", ls)
			}
			r.noEvent()
		}},
		{"renew/lease-awaiting-its-answer-is-listed-past-its-end", func(t *testing.T, r *rig) {
			// A slow grantor's answer comes about when the last renewal
			// expires; until the end timer has run (late, on a busy
			// machine) the listing must not drop what it will keep.
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			hold := make(chan struct{})
			r.fake.set(func() { r.fake.hold = map[string]chan struct{}{g1: hold} })
			r.advance(59 * time.Second)         // the renewal is under way, held
			r.clk.Skip(1500 * time.Millisecond) // past its end (60 s), the end timer not yet run
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 {
				t.Fatalf("a lease whose renewal is under way not listed past its end: %+v", ls)
			}
			r.release(hold)
			r.advance(0)
			if ls, _ := r.s.Leases(c.ID); len(ls) != 1 || ls[0].Expiration <= r.now() {
				t.Fatalf("not renewed: %+v", ls)
			}
		}},
		// the lease in a failure event (issue 13.4)
		{"events/failure-lease-carries-the-original-expiration", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			l := r.clientLease(g1, "a", time.Minute)
			r.s.RenewFor(c.ID, l, lease.Forever, 60_000)
			r.fake.set(func() { r.fake.mode["a"] = "unknown" })
			r.advance(50 * time.Second)
			e := r.event()
			el := e.Event.(apitypes.RenewalFailureEvent).Lease
			if el.Expiration != l.Expiration || el.Remaining != 10_000 || el.Grantor != g1 {
				t.Fatalf("event lease %+v, want expiration %d (the original) and 10000 remaining", el, l.Expiration)
			}
		}},
		{"events/failure-lease-carries-the-last-renewal", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.advance(50 * time.Second) // renewed: now + 60 s
			renewed := r.now() + 60_000
			r.fake.set(func() { r.fake.mode["a"] = "denied" })
			r.advance(50 * time.Second)
			el := r.event().Event.(apitypes.RenewalFailureEvent).Lease
			if el.Expiration != renewed || el.Remaining != renewed-r.now() {
				t.Fatalf("event lease %+v, want expiration %d (the last renewal)", el, renewed)
			}
		}},
		{"events/failure-lease-JSON-has-remaining", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x", Expiration: r.now() - 1}, 60_000, 1000)
			b, err := json.Marshal(r.event().Event.(apitypes.RenewalFailureEvent).Lease)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`{"grantor":%q,"id":"x","expiration":%d,"remaining":0}`, g1, r.now()-1)
			if string(b) != want {
				t.Fatalf("lease JSON %s, want %s", b, want)
			}
		}},
		// remove, getLeases
		{"remove/returns-the-lease-and-renewals-stop", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			got, err := r.s.Remove(c.ID, g1+"|a")
			if err != nil || got == nil || got.ID != "a" {
				t.Fatalf("Remove: %v, %v", got, err)
			}
			r.advance(2 * time.Minute)
			if n := len(r.fake.callsTo(g1)); n != 0 {
				t.Fatalf("%d renewals after removal", n)
			}
		}},
		{"remove/absent-returns-null", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			if got, err := r.s.Remove(c.ID, "nope"); err != nil || got != nil {
				t.Fatalf("Remove: %v, %v", got, err)
			}
		}},
		{"getLeases/last-recorded-expiration", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			l := r.clientLease(g1, "a", time.Minute)
			r.s.RenewFor(c.ID, l, lease.Forever, 60_000)
			ls, _ := r.s.Leases(c.ID)
			if ls[0].Expiration != l.Expiration {
				t.Fatal("before any renewal: not the original expiration")
			}
			r.advance(50 * time.Second) // renewed now, for a minute
			ls, _ = r.s.Leases(c.ID)
			if ls[0].Expiration != r.now()+60_000 {
				t.Fatalf("after a renewal: %d", ls[0].Expiration-r.now())
			}
		}},
		// listeners
		{"warning/minWarning-negative-is-InvalidArgument", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if _, err := r.s.SetWarningListener(context.Background(), c.ID, "http://l/", -1, nil); codeOf(err) != apitypes.InvalidArgument {
				t.Fatal(err)
			}
		}},
		{"warning/null-listener-is-NullArgument", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if _, err := r.s.SetWarningListener(context.Background(), c.ID, "", 1000, nil); codeOf(err) != apitypes.NullArgument {
				t.Fatal(err)
			}
			if _, err := r.s.SetFailureListener(context.Background(), c.ID, "", nil); codeOf(err) != apitypes.NullArgument {
				t.Fatal(err)
			}
		}},
		{"warning/event-ID-1-failure-event-ID-0", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			w, _ := r.s.SetWarningListener(context.Background(), c.ID, "http://l/", 1000, nil)
			f, _ := r.s.SetFailureListener(context.Background(), c.ID, "http://l/", nil)
			if w.EventID != 1 || f.EventID != 0 || w.Lease != c.Lease.ID || f.Lease != c.Lease.ID {
				t.Fatalf("registrations %+v %+v", w, f)
			}
		}},
		{"warning/once-minWarning-before-the-set-expires", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetWarningListener(context.Background(), c.ID, "http://l/", 10_000, []byte("hb"))
			r.advance(50*time.Second - time.Millisecond)
			r.noEvent()
			r.advance(time.Millisecond)
			e := r.event()
			if e.Event.Remote().Type != WarningEvent || e.Event.Remote().EventID != WarningEventID || string(e.Event.Remote().Handback) != "hb" || e.Event.Remote().Source.ID != c.ID {
				t.Fatalf("event %+v", e.Event)
			}
			r.advance(5 * time.Second)
			r.noEvent()
		}},
		{"warning/at-once-when-already-inside-the-window", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetWarningListener(context.Background(), c.ID, "http://l/", 120_000, nil)
			r.advance(0)
			if e := r.event(); e.Event.Remote().Type != WarningEvent {
				t.Fatalf("event %+v", e.Event)
			}
		}},
		{"warning/again-after-the-set-lease-is-renewed", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetWarningListener(context.Background(), c.ID, "http://l/", 10_000, nil)
			r.advance(50 * time.Second)
			r.event()
			if _, err := r.g.Renew(c.Lease.ID, 60_000); err != nil {
				t.Fatal(err)
			}
			r.advance(50*time.Second - time.Millisecond)
			r.noEvent()
			r.advance(time.Millisecond)
			if e := r.event(); e.Event.Remote().SeqNum != 2 {
				t.Fatalf("second warning seq %d", e.Event.Remote().SeqNum)
			}
		}},
		{"listeners/sequence-continues-across-replacement", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l1/", nil)
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x1", Expiration: r.now() - 1}, 60_000, 1000)
			if e := r.event(); e.Listener != "http://l1/" || e.Event.Remote().SeqNum != 1 {
				t.Fatalf("first %+v", e)
			}
			reg, _ := r.s.SetFailureListener(context.Background(), c.ID, "http://l2/", nil)
			if reg.SeqNum != 1 {
				t.Fatalf("new registration's seqNum %d", reg.SeqNum)
			}
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x2", Expiration: r.now() - 1}, 60_000, 1000)
			if e := r.event(); e.Listener != "http://l2/" || e.Event.Remote().SeqNum != 2 {
				t.Fatalf("second %+v", e)
			}
		}},
		{"listeners/refusal-by-a-replaced-listener-keeps-its-replacement", func(t *testing.T, r *rig) {
			for _, o := range []event.Outcome{event.UnknownEvent, event.Definite} {
				c := r.create(lease.Forever)
				r.s.SetFailureListener(context.Background(), c.ID, "http://l1/", nil)
				r.s.SetWarningListener(context.Background(), c.ID, "http://w1/", lease.Forever, nil) // inside the window: at once
				r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x1-" + c.ID, Expiration: r.now() - 1}, 60_000, 1000)
				old := r.event()
				r.advance(0)
				oldWarning := r.event()
				r.s.SetFailureListener(context.Background(), c.ID, "http://l2/", nil)
				r.s.SetWarningListener(context.Background(), c.ID, "http://w2/", 1000, nil)
				old.Done(o, errors.New("refused"))
				oldWarning.Done(o, errors.New("refused"))
				info, err := r.s.Get(c.ID)
				if err != nil || info.Failure == nil || info.Failure.URL != "http://l2/" || info.Warning == nil || info.Warning.URL != "http://w2/" {
					t.Fatalf("%v from replaced listeners cleared their replacements: %+v, %v", o, info, err)
				}
				// The replacement's own refusal clears it.
				r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x2-" + c.ID, Expiration: r.now() - 1}, 60_000, 1000)
				r.event().Done(o, errors.New("refused"))
				if info, _ := r.s.Get(c.ID); info.Failure != nil || info.Warning == nil {
					t.Fatalf("%v from the current failure listener: %+v", o, info)
				}
			}
		}},
		{"listeners/clear-without-registration-is-fine", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.s.ClearWarningListener(c.ID); err != nil {
				t.Fatal(err)
			}
			if err := r.s.ClearFailureListener(c.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"listeners/cleared-warning-sends-nothing", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetWarningListener(context.Background(), c.ID, "http://l/", 10_000, nil)
			r.s.ClearWarningListener(c.ID)
			r.advance(55 * time.Second)
			r.noEvent()
		}},
		{"listeners/UnknownEvent-clears-only-that-registration", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			r.s.SetFailureListener(context.Background(), c.ID, "http://f/", nil)
			r.s.SetWarningListener(context.Background(), c.ID, "http://w/", 120_000, nil)
			r.advance(0)
			e := r.event()
			e.Done(event.UnknownEvent, errors.New("UnknownEvent"))
			info, err := r.s.Get(c.ID)
			if err != nil || info.Warning != nil || info.Failure == nil {
				t.Fatalf("after UnknownEvent: %+v, %v", info, err)
			}
			if _, err := r.g.Get(c.Lease.ID); err != nil {
				t.Fatal("the set's lease was cancelled")
			}
		}},
		// the set's lease
		{"set/lease-end-destroys-the-set-not-the-leases", func(t *testing.T, r *rig) {
			c := r.create(30_000)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Hour), lease.Forever, 60_000)
			r.advance(31 * time.Second)
			if _, err := r.s.Leases(c.ID); codeOf(err) != apitypes.NoSuchObject {
				t.Fatalf("set after its lease ended: %v", err)
			}
			r.advance(2 * time.Hour)
			if n := len(r.fake.callsTo(g1)); n != 0 {
				t.Fatalf("%d renewals for a destroyed set", n)
			}
		}},
		{"set/cancel-destroys-the-set", func(t *testing.T, r *rig) {
			c := r.create(60_000)
			if err := r.g.Cancel(c.Lease.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := r.s.Get(c.ID); codeOf(err) != apitypes.NoSuchObject {
				t.Fatal(err)
			}
		}},
		// persistence
		{"restart/renewals-resume-and-a-due-one-is-renewed-at-once", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.RenewFor(c.ID, r.clientLease(g1, "a", time.Minute), lease.Forever, 60_000)
			r.close()
			r.advance(55 * time.Second) // down across its renewal time, back before it expires
			r.open()
			r.advance(0)
			if calls := r.fake.callsTo(g1); len(calls) != 1 || calls[0].at != r.now() {
				t.Fatalf("calls %+v", calls)
			}
			ls, _ := r.s.Leases(c.ID)
			if len(ls) != 1 || ls[0].Expiration != r.now()+60_000 {
				t.Fatalf("leases %+v", ls)
			}
		}},
		{"restart/sets-listeners-and-sequence-numbers-persist", func(t *testing.T, r *rig) {
			c := r.create(lease.Forever)
			r.s.SetFailureListener(context.Background(), c.ID, "http://l/", []byte("x"))
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x1", Expiration: r.now() - 1}, 60_000, 1000)
			r.event()
			r.close()
			r.open()
			info, err := r.s.Get(c.ID)
			if err != nil || info.Failure == nil || info.Failure.URL != "http://l/" {
				t.Fatalf("after restart: %+v, %v", info, err)
			}
			r.s.RenewFor(c.ID, ClientLease{Grantor: g1, ID: "x2", Expiration: r.now() - 1}, 60_000, 1000)
			if e := r.event(); e.Event.Remote().SeqNum != 2 {
				t.Fatalf("sequence after restart %d", e.Event.Remote().SeqNum)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newRig(t)) })
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// When a client lease is renewed: one round trip of its grantor plus the
// safety margin before its expiration; the safety part is half the
// lease's period at most; and at once when even that does not fit.
func TestNextRenewal(t *testing.T) {
	s := &Service{cfg: Config{SafetyMargin: 30 * time.Second}}
	const now = 1_000_000
	for _, c := range []struct {
		name         string
		period, left int64 // ms: the lease's period, and what is left of it now
		rtt, last    time.Duration
		want         int64 // ms from now
	}{
		{"long lease, fast grantor", 3_600_000, 3_600_000, time.Millisecond, time.Millisecond, 3_600_000 - 30_001},
		{"long lease, slow grantor", 3_600_000, 3_600_000, 2 * time.Second, 2 * time.Second, 3_600_000 - 32_000},
		{"a grantor slowing down: its last round trip counts", 3_600_000, 3_600_000, 100 * time.Millisecond, 5 * time.Second, 3_600_000 - 35_000},
		{"3 s lease, 0.3 s round trip", 3_000, 3_000, 300 * time.Millisecond, 300 * time.Millisecond, 1_200},
		{"3 s lease answered after 1 s: 2 s left", 2_000, 2_000, time.Second, time.Second, 0},
		{"3 s lease, 1 s round trip, answered at once", 3_000, 3_000, time.Second, time.Second, 500},
		{"shorter than a round trip: at once", 1_500, 1_500, 1500 * time.Millisecond, 1500 * time.Millisecond, 0},
	} {
		g := &grantorQueue{rtt: c.rtt, last: c.last}
		m := &member{ClientLease: ClientLease{Expiration: now + c.left}, Desired: math.MaxInt64, period: c.period}
		due, ok := s.nextRenewal(g, m, now)
		if !ok || due-now != c.want {
			t.Errorf("%s: renewed %d ms from now (%v), want %d", c.name, due-now, ok, c.want)
		}
	}
}

package lds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

const listener = "http://client.invalid/events"

// got is one event as the recorder saw it.
type got struct {
	reg       string
	seq       int64
	discarded bool
	ids       []discovery.ServiceID
	del       event.Delivery
}

type recorder struct{ ch chan got }

func (r *recorder) Send(d event.Delivery) {
	var ids []discovery.ServiceID
	e := d.Event.(apitypes.RemoteDiscoveryEvent)
	for _, reg := range e.Registrars {
		id, _ := discovery.ParseServiceID(reg.ServiceID)
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	r.ch <- got{reg: e.Source.ID, seq: e.SeqNum, discarded: e.Discarded, ids: ids, del: d}
}

type rig struct {
	t   *testing.T
	clk *clock.Fake
	lan *discoverytest.LAN
	dir string
	st  *store.Store
	g   *lease.Grantor
	s   *Service
	rec *recorder
}

func newRig(t *testing.T) *rig {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	return openRig(t)
}

// openRig is newRig for tests that check for leaks themselves (parallel
// subtests: a parent's check runs once they have all ended).
func openRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), lan: discoverytest.NewLAN(), dir: t.TempDir(), rec: &recorder{ch: make(chan got, 1000)}}
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
	r.s, err = New(Config{Store: st, Grantor: r.g, Dispatcher: r.rec, Clock: r.clk,
		Group:   group.Config{Network: r.lan},
		Locator: locator.Config{Dial: r.lan.Dial, LookupSRV: r.lan.LookupSRV, Jitter: -1}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.lan.OnResponse(r.s.g.HandleResponse)
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

// restart closes everything and opens it again from the store.
func (r *rig) restart() {
	r.close()
	r.open()
}

func (r *rig) register(groups []string, locs ...string) Registration {
	r.t.Helper()
	var ls []discovery.Locator
	for _, s := range locs {
		l, err := discovery.ParseLocator(s)
		if err != nil {
			r.t.Fatal(err)
		}
		ls = append(ls, l)
	}
	reg, err := r.s.Register(RegisterRequest{Groups: groups, Locators: ls, Listener: listener, Duration: lease.Any})
	if err != nil {
		r.t.Fatal(err)
	}
	return reg
}

func (r *rig) announce(l *discoverytest.SimLUS) {
	r.s.g.HandleAnnouncement(r.lan.Announcement(l, discovery.ProtocolV2), "sim0")
}

// next waits for the next event and checks it.
func (r *rig) next(reg Registration, discarded bool, ls ...*discoverytest.SimLUS) got {
	r.t.Helper()
	var want []discovery.ServiceID
	for _, l := range ls {
		want = append(want, l.ID)
	}
	sort.Slice(want, func(i, j int) bool { return want[i].String() < want[j].String() })
	select {
	case e := <-r.rec.ch:
		if e.reg != reg.ID || e.discarded != discarded || !slices.Equal(e.ids, want) {
			r.t.Fatalf("event for %s discarded=%v %v; want for %s discarded=%v %v", e.reg, e.discarded, e.ids, reg.ID, discarded, want)
		}
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatalf("no event; want for %s discarded=%v %v", reg.ID, discarded, want)
	}
	return got{}
}

// discoveredAll takes discovered events for reg until each of ls was in
// one, and returns the last.
func (r *rig) discoveredAll(reg Registration, ls ...*discoverytest.SimLUS) got {
	r.t.Helper()
	missing := map[discovery.ServiceID]bool{}
	for _, l := range ls {
		missing[l.ID] = true
	}
	var last got
	for len(missing) > 0 {
		select {
		case last = <-r.rec.ch:
			if last.reg != reg.ID || last.discarded {
				r.t.Fatalf("event for %s discarded=%v %v while waiting for discoveries", last.reg, last.discarded, last.ids)
			}
			for _, id := range last.ids {
				if !missing[id] {
					r.t.Fatalf("%s discovered twice, or not wanted", id)
				}
				delete(missing, id)
			}
		case <-time.After(5 * time.Second):
			r.t.Fatalf("not discovered: %v", missing)
		}
	}
	return last
}

// locators waits until the service holds l through n locators.
func (r *rig) locators(l *discoverytest.SimLUS, n int) {
	r.t.Helper()
	testenv.Until(r.t, fmt.Sprintf("%s held through %d locators", l.ID, n), func() bool {
		held := 0
		for _, k := range r.s.Known() {
			if k.ID == l.ID {
				held = len(k.Locators)
			}
		}
		return held == n
	})
}

func (r *rig) none() {
	r.t.Helper()
	select {
	case e := <-r.rec.ch:
		r.t.Fatalf("unexpected event for %s discarded=%v %v", e.reg, e.discarded, e.ids)
	case <-time.After(100 * time.Millisecond):
	}
}

func code(err error) fault.Code { return fault.CodeOf(err) }

func TestRegisterArguments(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		req  RegisterRequest
		want fault.Code
	}{
		{RegisterRequest{Duration: 1000}, apitypes.NullArgument},
		{RegisterRequest{Listener: "ftp://x/y", Duration: 1000}, apitypes.InvalidArgument},
		{RegisterRequest{Listener: listener, Duration: 0}, apitypes.InvalidArgument},
		{RegisterRequest{Listener: listener, Duration: -2}, apitypes.InvalidArgument},
	} {
		if _, err := r.s.Register(c.req); code(err) != c.want {
			t.Errorf("Register(%+v): %v, want %s", c.req, err, c.want)
		}
	}
	if r.s.Count() != 0 {
		t.Fatalf("refused registrations left %d behind", r.s.Count())
	}
	a := r.register([]string{"a", "a", "b"}, "jini://10.0.0.1", "jini://10.0.0.1:4160", "jini://10.0.0.2")
	b := r.register(nil)
	if a.EventID == b.EventID {
		t.Fatalf("two registrations share event ID %d", a.EventID)
	}
	info, err := r.s.Get(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Groups, []string{"a", "b"}) || len(info.Locators) != 2 || info.AllGroups {
		t.Fatalf("duplicates not removed: %+v", info)
	}
	if info, _ := r.s.Get(b.ID); !info.AllGroups {
		t.Fatal("nil groups is not ALL_GROUPS")
	}
	if rec, _ := r.g.Get(a.Lease.ID); rec.Expiration-r.clk.Now().UnixMilli() != DefaultPolicy.Default {
		t.Fatalf("ANY granted %d ms, want the default", rec.Expiration-r.clk.Now().UnixMilli())
	}
	if _, err := r.s.Get("nope"); code(err) != apitypes.NoSuchObject {
		t.Fatalf("Get of an unknown registration: %v", err)
	}
}

func TestDiscoveredOnceAndBatched(t *testing.T) {
	r := newRig(t)
	l1 := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	l2 := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"a", "b"}})
	first := r.register([]string{"a"})
	r.announce(l1)
	r.next(first, false, l1)
	r.announce(l2)
	r.next(first, false, l2)
	r.announce(l1) // again: nothing
	r.none()
	// A later registration gets both at once, in one event.
	second := r.register([]string{"a"})
	if e := r.next(second, false, l1, l2); e.seq != 1 {
		t.Fatalf("first event's sequence number %d, want 1", e.seq)
	}
	regs, err := r.s.Registrars(second.ID)
	if err != nil || len(regs) != 2 {
		t.Fatalf("Registrars: %v, %v", regs, err)
	}
}

func TestGroupMutators(t *testing.T) {
	r := newRig(t)
	la := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	lb := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"b"}})
	other := r.register([]string{"a", "b"})
	r.announce(la)
	r.next(other, false, la)
	r.announce(lb)
	r.next(other, false, lb)

	reg := r.register([]string{"a"})
	r.next(reg, false, la)
	// Adding b: lb is already discovered (for another registration), new
	// to this one: discovered.
	if err := r.s.MutateGroups(reg.ID, Add, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	r.next(reg, false, lb)
	// Adding a again: nothing new.
	if err := r.s.MutateGroups(reg.ID, Add, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	r.none()
	// Removing a: la discarded.
	if err := r.s.MutateGroups(reg.ID, Remove, []string{"a", "zzz"}); err != nil {
		t.Fatal(err)
	}
	r.next(reg, true, la)
	// Set to none: lb discarded; then all: both discovered in one event.
	if err := r.s.MutateGroups(reg.ID, Set, []string{}); err != nil {
		t.Fatal(err)
	}
	r.next(reg, true, lb)
	if err := r.s.MutateGroups(reg.ID, Set, nil); err != nil {
		t.Fatal(err)
	}
	r.next(reg, false, la, lb)
	for _, m := range []Mutation{Add, Remove} {
		if err := r.s.MutateGroups(reg.ID, m, []string{"x"}); code(err) != apitypes.UnsupportedOperation {
			t.Fatalf("mutation %d on ALL_GROUPS: %v, want UnsupportedOperation", m, err)
		}
	}
	if err := r.s.MutateGroups(reg.ID, Add, nil); code(err) != apitypes.NullArgument {
		t.Fatalf("Add(nil): %v", err)
	}
	if err := r.s.MutateGroups("nope", Set, nil); code(err) != apitypes.NoSuchObject {
		t.Fatalf("unknown registration: %v", err)
	}
	r.none()
}

func TestLocatorMutatorsAndTheGroupRule(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	reg := r.register([]string{"a"})
	r.announce(l)
	r.next(reg, false, l)
	// Its locator added: already discovered by group, no event.
	loc, _ := discovery.ParseLocator("jini://10.0.0.1")
	if err := r.s.MutateLocators(reg.ID, Add, []discovery.Locator{loc}); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(0)
	r.locators(l, 1) // held by locator too
	r.none()
	// Group removed: still wanted by locator, no event.
	if err := r.s.MutateGroups(reg.ID, Set, []string{}); err != nil {
		t.Fatal(err)
	}
	r.none()
	// Locator removed: discarded.
	if err := r.s.MutateLocators(reg.ID, Remove, []discovery.Locator{loc}); err != nil {
		t.Fatal(err)
	}
	r.next(reg, true, l)
	// Once locator discovery has let it go too (its own event, which
	// would otherwise come after the next change, a discard of what that
	// change found, out of order with it).
	r.locators(l, 0)
	// By locator alone: discovered when found.
	if err := r.s.MutateLocators(reg.ID, Set, []discovery.Locator{loc}); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(0)
	r.next(reg, false, l)
	if err := r.s.MutateLocators(reg.ID, Add, nil); code(err) != apitypes.NullArgument {
		t.Fatalf("Add(nil locators): %v", err)
	}
}

func TestPassiveDiscards(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	byGroup := r.register([]string{"a"})
	byLoc := r.register([]string{}, "jini://10.0.0.1")
	both := r.register([]string{"a"}, "jini://10.0.0.1")
	r.announce(l)
	r.clk.Advance(0)
	seen := map[string]bool{}
	for range 3 {
		e := <-r.rec.ch
		if e.discarded || len(e.ids) != 1 || e.ids[0] != l.ID {
			t.Fatalf("event %+v", e)
		}
		seen[e.reg] = true
	}
	if !seen[byGroup.ID] || !seen[byLoc.ID] || !seen[both.ID] {
		t.Fatalf("discovered for %v", seen)
	}
	// No interest any more: only the group-only registration hears.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"z"} })
	r.announce(l)
	r.next(byGroup, true, l)
	r.none()
	// Back in group a: discovered again for it.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"a"} })
	r.announce(l)
	r.next(byGroup, false, l)
	// Silent and unreachable (LD.3.1): discarded for every registration
	// wanting it through group discovery, by locator too or not; kept by
	// the one wanting it by locator alone (issue 15, item 1).
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(group.DefaultDiscardMultiple * group.DefaultAnnouncementInterval)
	r.events(t, map[string]bool{byGroup.ID: true, both.ID: true}, l)
	r.none()
	if regs, _ := r.s.Registrars(byLoc.ID); len(regs) != 1 {
		t.Fatalf("the locator-only registration lost it: %v", regs)
	}
	if regs, _ := r.s.Registrars(both.ID); len(regs) != 0 {
		t.Fatalf("the registration wanting it by group and locator still holds it: %v", regs)
	}
	// Back, announcing: found again for both of them; the locator-only
	// one heard nothing throughout.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = false })
	r.announce(l)
	r.events(t, map[string]bool{byGroup.ID: false, both.ID: false}, l)
	r.none()
}

// events takes one event per registration in want (true: discarded, false:
// discovered), each of ls alone, in any order.
func (r *rig) events(t *testing.T, want map[string]bool, ls ...*discoverytest.SimLUS) {
	t.Helper()
	var ids []discovery.ServiceID
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	for n := len(want); n > 0; n-- { // not range: entries are deleted as they come
		select {
		case e := <-r.rec.ch:
			discarded, ok := want[e.reg]
			if !ok || e.discarded != discarded || !slices.Equal(e.ids, ids) {
				t.Fatalf("event for %s discarded=%v %v; want one for each of %v", e.reg, e.discarded, e.ids, want)
			}
			delete(want, e.reg)
		case <-time.After(5 * time.Second):
			t.Fatalf("no event; still want %v", want)
		}
	}
}

// After a passive communication discard, a registration wanting the
// lookup service by group and by locator finds it again by its locator
// alone once it answers, although it does not announce (locator
// discovery is made to look again); the group-only one does not.
func TestLostFoundAgainByLocator(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	byGroup := r.register([]string{"a"})
	both := r.register([]string{"a"}, "jini://10.0.0.1")
	r.announce(l)
	r.clk.Advance(0)
	r.events(t, map[string]bool{byGroup.ID: false, both.ID: false}, l)
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(group.DefaultDiscardMultiple * group.DefaultAnnouncementInterval)
	r.events(t, map[string]bool{byGroup.ID: true, both.ID: true}, l)
	// It answers its locator again, but neither announces nor answers
	// multicast requests: locator discovery, made to look again, finds
	// it 15 s after the discard; group discovery cannot. (Were it to
	// answer requests, one the engine sent at the discard, in a goroutine
	// of its own, could reach it after it came back: under load, the
	// group-only registration found it again too.)
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down, l.AnswerVersions = false, []int{} })
	r.clk.Advance(20 * time.Second)
	r.next(both, false, l)
	r.none()
}

func TestNewGroupOfLookupService(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	ra := r.register([]string{"a"})
	rb := r.register([]string{"b"})
	r.announce(l)
	r.next(ra, false, l)
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"a", "b"} })
	r.announce(l)
	r.next(rb, false, l) // it joined b: discovered for the b registration only
	r.none()
}

func TestDiscardRules(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r1, r2, r3 := r.register([]string{"a"}), r.register([]string{"a"}), r.register([]string{"a"})
	r.announce(l)
	for range 3 {
		<-r.rec.ch
	}
	if err := r.s.Discard(r1.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	r.next(r1, true, l)
	// Another registration discards it before it is found again.
	if err := r.s.Discard(r2.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	r.next(r2, true, l)
	r.none() // r3 keeps it, told nothing
	if regs, _ := r.s.Registrars(r3.ID); len(regs) != 1 {
		t.Fatal("a registration that did not discard lost the lookup service")
	}
	// Discarding one not in the set does nothing.
	if err := r.s.Discard(r1.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	r.none()
	// A registration made meanwhile hears at rediscovery too.
	r4 := r.register([]string{"a"})
	r.none()
	r.announce(l)
	seen := map[string]bool{}
	for range 3 {
		e := <-r.rec.ch
		if e.discarded {
			t.Fatalf("discarded event %+v at rediscovery", e)
		}
		seen[e.reg] = true
	}
	if !seen[r1.ID] || !seen[r2.ID] || !seen[r4.ID] || seen[r3.ID] {
		t.Fatalf("rediscovery told %v; want r1, r2 and r4", seen)
	}
	r.none()
	if err := r.s.Discard("nope", l.ID); code(err) != apitypes.NoSuchObject {
		t.Fatalf("Discard on an unknown registration: %v", err)
	}
}

func TestLeaseEndStopsEvents(t *testing.T) {
	r := newRig(t)
	reg, err := r.s.Register(RegisterRequest{Groups: []string{"a"}, Listener: listener, Duration: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(61 * time.Second)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}}) // appears after the lease ended
	r.announce(l)
	r.none()
	if _, err := r.s.Get(reg.ID); code(err) != apitypes.NoSuchObject {
		t.Fatalf("after the lease ended: %v", err)
	}
	if err := r.s.MutateGroups(reg.ID, Set, nil); code(err) != apitypes.NoSuchObject {
		t.Fatalf("mutating an ended registration: %v", err)
	}
}

func TestUnknownEventCancels(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	bad, good := r.register([]string{"a"}), r.register([]string{"a"})
	r.announce(l)
	for range 2 {
		e := <-r.rec.ch
		if e.reg == bad.ID {
			e.del.Done(event.UnknownEvent, errors.New("listener answered UnknownEvent"))
		}
	}
	if _, err := r.s.Get(bad.ID); code(err) != apitypes.NoSuchObject {
		t.Fatalf("registration whose listener answered UnknownEvent: %v", err)
	}
	if _, err := r.s.Get(good.ID); err != nil {
		t.Fatalf("the other registration: %v", err)
	}
}

func TestRestartKeepsStateAndSequence(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	gone := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"a"}})
	loc := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.3", Groups: []string{"z"}})
	reg := r.register([]string{"a"}, "jini://10.0.0.3")
	r.clk.Advance(0) // the first requests and locator tries
	r.announce(l)
	r.announce(gone)
	e := r.discoveredAll(reg, l, gone, loc)

	r.restart()
	r.lan.Set(gone, func(l *discoverytest.SimLUS) { l.Down = true })
	r.lan.Set(loc, func(l *discoverytest.SimLUS) { l.Down = true })
	info, err := r.s.Get(reg.ID)
	if err != nil || !slices.Equal(info.Groups, []string{"a"}) || len(info.Locators) != 1 || info.SeqNum != e.seq {
		t.Fatalf("after restart: %+v, %v", info, err)
	}
	// Found again: no second discovered event.
	r.announce(l)
	r.none()
	// The silent one is discarded when the window ends; the one wanted by
	// locator is kept though unreachable.
	r.clk.Advance(group.DefaultDiscardMultiple * group.DefaultAnnouncementInterval)
	d := r.next(reg, true, gone)
	if d.seq != e.seq+1 {
		t.Fatalf("sequence %d after %d: not consecutive", d.seq, e.seq)
	}
	r.none()
	if regs, _ := r.s.Registrars(reg.ID); len(regs) != 2 {
		t.Fatalf("registrars after restart: %v", regs)
	}
}

// A Java lookup service that answers requests in both versions with
// different proxies and announces with sequence number 0 (as Reggie
// does) is one lookup service for a registration: one discovered event;
// getRegistrars shows it under its announced ServiceID once it has
// announced; no event while it announces; one discarded event, under
// that ID, when it stops (issue 13, item 9).
func TestReggieIsOneLookupService(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.Reggie("10.0.0.9", "lab"))
	reg := r.register([]string{"lab"})
	r.clk.Advance(0) // the first request: answers in version 1 and 2
	var first got
	select {
	case first = <-r.rec.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	if first.reg != reg.ID || first.discarded || len(first.ids) != 1 {
		t.Fatalf("first event: %+v, want one lookup service discovered", first)
	}
	r.clk.Advance(time.Minute) // the rest of the round, answered in both versions each time
	r.none()
	r.announce(l)
	for range 5 {
		r.clk.Advance(group.DefaultAnnouncementInterval)
		r.announce(l)
	}
	r.none()
	regs, err := r.s.Registrars(reg.ID)
	if err != nil || len(regs) != 1 || regs[0].ID != l.ID || regs[0].Port != l.Port {
		t.Fatalf("getRegistrars: %+v, %v; want one, %s at port %d", regs, err, l.ID, l.Port)
	}
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(group.DefaultDiscardMultiple * group.DefaultAnnouncementInterval)
	r.next(reg, true, l)
	r.none()
}

// One registration's discard leaves another that holds the lookup
// service by locator alone undisturbed: no discarded event when group
// discovery finds it again, no discovered event when locator discovery
// looks again 15 s later (LD.4.1; issue 15, item 2).
func TestDiscardLeavesLocatorOnlyRegistrationsAlone(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	byGroup := r.register([]string{"a"})
	byLoc := r.register([]string{}, "jini://10.0.0.1")
	r.announce(l)
	r.clk.Advance(0)
	r.events(t, map[string]bool{byGroup.ID: false, byLoc.ID: false}, l)
	if err := r.s.Discard(byGroup.ID, l.ID); err != nil {
		t.Fatal(err)
	}
	r.next(byGroup, true, l)
	r.announce(l)
	r.next(byGroup, false, l)
	r.clk.Advance(time.Minute)
	r.none()
	if regs, _ := r.s.Registrars(byLoc.ID); len(regs) != 1 {
		t.Fatalf("the locator-only registration's set: %v", regs)
	}
}

// A jinid from before it read Java proxies stored a Java lookup service
// under a ServiceID it made up (IDFromProxy). After the upgrade the
// registrations holding it are told it is discarded, under that ID, and
// discovered under its real one once discovery finds it again.
func TestLegacyStandInsRetired(t *testing.T) {
	r := newRig(t)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}, Java: true})
	reg := r.register([]string{"a"}, "jini://10.0.0.1")
	r.clk.Advance(0)
	r.announce(l)
	r.next(reg, false, l)
	r.close()

	// The records as the old jinid wrote them: under a made-up ID.
	madeUp := discovery.ServiceID{0x5a, 0x5a}
	st, err := store.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx *store.Tx) error {
		var rec map[string]any
		if _, err := tx.Get(registrarBucket, l.ID.String(), &rec); err != nil {
			return err
		}
		ls := rec["ls"].(map[string]any)
		ls["ID"], ls["IDFromProxy"] = madeUp, true
		delete(ls, "StandIn")
		rec["locatorID"] = madeUp
		if err := tx.Delete(registrarBucket, l.ID.String()); err != nil {
			return err
		}
		if err := tx.Put(registrarBucket, madeUp.String(), rec); err != nil {
			return err
		}
		var rg map[string]any
		if _, err := tx.Get(regBucket, reg.ID, &rg); err != nil {
			return err
		}
		rg["discovered"] = []discovery.ServiceID{madeUp}
		return tx.Put(regBucket, reg.ID, rg)
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	r.open()
	var e got
	select {
	case e = <-r.rec.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no event after the upgrade")
	}
	if e.reg != reg.ID || !e.discarded || !slices.Equal(e.ids, []discovery.ServiceID{madeUp}) {
		t.Fatalf("after the upgrade: %+v, want %s discarded", e, madeUp)
	}
	r.clk.Advance(0)
	r.announce(l)
	r.next(reg, false, l)
	r.none()
	if regs, _ := r.s.Registrars(reg.ID); len(regs) != 1 || regs[0].ID != l.ID {
		t.Fatalf("getRegistrars: %+v, want %s", regs, l.ID)
	}
}

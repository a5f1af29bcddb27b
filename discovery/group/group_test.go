package group

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/clock"
)

const interval = DefaultAnnouncementInterval

// rig is an engine on a simulated LAN with a fake clock.
type rig struct {
	t       *testing.T
	clk     *clock.Fake
	lan     *discoverytest.LAN
	d       *Discovery
	events  chan discovery.Event
	updates chan discovery.Event
}

func newRig(t *testing.T, groups []string) *rig {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), lan: discoverytest.NewLAN(), events: make(chan discovery.Event, 10000),
		updates: make(chan discovery.Event, 10000)}
	// Updated events (where a lookup service is reached) are what
	// consumers refresh descriptions by, not what they report: the
	// tests that look at them read updates.
	d, err := New(Config{Groups: groups, Network: r.lan, Clock: r.clk, OnEvent: func(e discovery.Event) {
		if e.Kind == discovery.Updated {
			r.updates <- e
			return
		}
		r.events <- e
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	r.lan.OnResponse(d.HandleResponse)
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	return r
}

// next waits for the next event and checks its kind, lookup service and
// reason.
func (r *rig) next(kind discovery.EventKind, l *discoverytest.SimLUS, reason string) discovery.Event {
	r.t.Helper()
	select {
	case e := <-r.events:
		if e.Kind != kind || e.ID != l.ID || e.Reason != reason {
			r.t.Fatalf("event %s %s (reason %q, groups %q), want %s %s (reason %q)", e.Kind, e.ID, e.Reason, e.Groups, kind, l.ID, reason)
		}
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatalf("no event; want %s %s", kind, l.ID)
	}
	return discovery.Event{}
}

// none checks that no event comes. Whatever a synchronous step caused is
// queued by the time it returns, and delivery takes microseconds.
func (r *rig) none() {
	r.t.Helper()
	select {
	case e := <-r.events:
		r.t.Fatalf("unexpected event %s %s (reason %q, groups %q)", e.Kind, e.ID, e.Reason, e.Groups)
	case <-time.After(100 * time.Millisecond):
	}
}

func (r *rig) announce(l *discoverytest.SimLUS) {
	r.d.HandleAnnouncement(r.lan.Announcement(l, discovery.ProtocolV2), "sim0")
}

func TestRequestSchedule(t *testing.T) {
	r := newRig(t, []string{"a"})
	r.d.Start(context.Background())
	r.clk.Advance(0)
	if n := r.lan.RequestCount(); n != 1 {
		t.Fatalf("%d requests at start, want 1", n)
	}
	for i := 2; i <= DefaultRequestCount; i++ {
		r.clk.Advance(DefaultRequestInterval - time.Millisecond)
		if n := r.lan.RequestCount(); n != i-1 {
			t.Fatalf("%d requests before the interval passed, want %d", n, i-1)
		}
		r.clk.Advance(time.Millisecond)
		if n := r.lan.RequestCount(); n != i {
			t.Fatalf("%d requests, want %d", n, i)
		}
	}
	// Then the slow interval.
	r.clk.Advance(DefaultFinalRequestInterval - time.Millisecond)
	if n := r.lan.RequestCount(); n != DefaultRequestCount {
		t.Fatalf("%d requests before the slow interval passed, want %d", n, DefaultRequestCount)
	}
	r.clk.Advance(time.Millisecond)
	if n := r.lan.RequestCount(); n != DefaultRequestCount+1 {
		t.Fatalf("%d requests after the slow interval, want %d", n, DefaultRequestCount+1)
	}
	if got := r.lan.LastRequest().Groups; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("request groups %q", got)
	}

	// Adding a group starts a new round at once, with every group.
	if err := r.d.AddGroups("b"); err != nil {
		t.Fatal(err)
	}
	before := r.lan.RequestCount()
	r.clk.Advance(0)
	r.clk.Advance(DefaultRequestInterval * (DefaultRequestCount - 1))
	if n := r.lan.RequestCount() - before; n != DefaultRequestCount {
		t.Fatalf("%d requests in the round after adding a group, want %d", n, DefaultRequestCount)
	}
	if got := r.lan.LastRequest().Groups; !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("request groups %q", got)
	}
	// Removing one does not.
	if err := r.d.RemoveGroups("a"); err != nil {
		t.Fatal(err)
	}
	before = r.lan.RequestCount()
	r.clk.Advance(DefaultRequestInterval)
	if n := r.lan.RequestCount() - before; n != 0 {
		t.Fatalf("%d requests after removing a group", n)
	}

	// NO_GROUPS sends none; ALL_GROUPS sends an empty list.
	r.d.SetGroups([]string{})
	before = r.lan.RequestCount()
	r.clk.Advance(10 * DefaultFinalRequestInterval)
	if n := r.lan.RequestCount() - before; n != 0 {
		t.Fatalf("%d requests with no groups of interest", n)
	}
	r.d.SetGroups(nil)
	r.clk.Advance(0)
	if n := r.lan.RequestCount() - before; n != 1 {
		t.Fatalf("%d requests after setting all groups, want 1", n)
	}
	if got := r.lan.LastRequest().Groups; len(got) != 0 {
		t.Fatalf("ALL_GROUPS request names groups %q", got)
	}
	if err := r.d.AddGroups("x"); err != ErrAllGroups {
		t.Fatalf("AddGroups with all groups: %v, want ErrAllGroups", err)
	}
	r.none()
}

func TestDiscoveredByRequestThenKnown(t *testing.T) {
	r := newRig(t, []string{"a"})
	in := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a", "b"}})
	r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"c"}})
	r.d.Start(context.Background())
	r.clk.Advance(0)
	e := r.next(discovery.Discovered, in, "")
	if e.Host != "10.0.0.1" || e.Port != 4160 || !slices.Equal(e.Groups, []string{"a", "b"}) || e.IDIsStandIn() {
		t.Fatalf("discovered %+v", e.LookupService)
	}
	r.clk.Advance(DefaultRequestInterval)
	if known := r.lan.LastRequest().Known; !slices.Equal(known, []discovery.ServiceID{in.ID}) {
		t.Fatalf("next request names known %v, want %v", known, in.ID)
	}
	r.none() // the other is in no group of interest; the known one stays quiet
	if got := r.d.Discovered(); len(got) != 1 || got[0].ID != in.ID {
		t.Fatalf("Discovered() = %+v", got)
	}
}

func TestLateJoinerByAnnouncement(t *testing.T) {
	r := newRig(t, []string{"a"})
	r.d.Start(context.Background())
	r.clk.Advance(time.Hour) // all rounds over
	late := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.9", Groups: []string{"a"}})
	other := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.8", Groups: []string{"z"}})
	r.announce(other)
	r.announce(late)
	r.next(discovery.Discovered, late, "")
	r.announce(late)
	r.none()
	if n := r.lan.DialCount("10.0.0.9:4160"); n != 1 {
		t.Fatalf("contacted %d times, want 1", n)
	}
	if n := r.lan.DialCount("10.0.0.8:4160"); n != 0 {
		t.Fatalf("a lookup service of no interest contacted %d times", n)
	}
}

func TestGroupsInAndOutOfInterest(t *testing.T) {
	r := newRig(t, []string{"a"})
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "")

	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"a", "b"} })
	r.announce(l)
	if e := r.next(discovery.Changed, l, ""); !slices.Equal(e.Groups, []string{"a", "b"}) {
		t.Fatalf("changed groups %q", e.Groups)
	}
	r.announce(l) // nothing new
	r.none()

	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"b"} })
	r.announce(l)
	if e := r.next(discovery.Discarded, l, discovery.ReasonNoInterest); !slices.Equal(e.Groups, []string{"b"}) {
		t.Fatalf("discarded with groups %q, want the new ones", e.Groups)
	}
	r.announce(l) // still of no interest
	r.none()

	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"b", "a"} })
	r.announce(l)
	r.next(discovery.Discovered, l, "")
}

func TestStaleAnnouncementIgnored(t *testing.T) {
	r := newRig(t, []string{"a"})
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	old := r.lan.Announcement(l, discovery.ProtocolV2)
	r.announce(l)
	r.next(discovery.Discovered, l, "")
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"a", "b"} })
	r.announce(l)
	r.next(discovery.Changed, l, "")
	r.d.HandleAnnouncement(old, "sim0") // a late copy with the old groups
	r.none()
}

func TestSetGroupsDiscardsWhatLeavesInterest(t *testing.T) {
	r := newRig(t, []string{"a", "b"})
	la := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	lb := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"b", "c"}})
	r.announce(la)
	r.next(discovery.Discovered, la, "")
	r.announce(lb)
	r.next(discovery.Discovered, lb, "")
	if err := r.d.RemoveGroups("b"); err != nil {
		t.Fatal(err)
	}
	r.next(discovery.Discarded, lb, discovery.ReasonNoInterest)
	r.d.SetGroups([]string{"c"})
	r.next(discovery.Discarded, la, discovery.ReasonNoInterest)
	r.none()
	// lb is a member of c: back on its next announcement.
	r.announce(lb)
	r.next(discovery.Discovered, lb, "")
}

func TestFlappingAnnouncementsKeepIt(t *testing.T) {
	r := newRig(t, []string{"a"})
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "")
	// Irregular gaps, each shorter than the window (3 intervals), for a
	// long time: never discarded, never probed.
	window := DefaultDiscardMultiple * interval
	for _, gap := range []time.Duration{window - time.Second, time.Second, 2 * interval, window - time.Millisecond, interval / 2, window - time.Second} {
		r.clk.Advance(gap)
		r.announce(l)
	}
	r.none()
	if n := r.lan.DialCount("10.0.0.1:4160"); n != 1 {
		t.Fatalf("contacted %d times, want only the first", n)
	}

	// Then it stops (and is down): discarded exactly when the window after
	// its last announcement ends.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	last := r.clk.Now()
	r.clk.Advance(window - time.Millisecond)
	r.none()
	r.clk.Advance(time.Millisecond)
	e := r.next(discovery.Discarded, l, discovery.ReasonCommunication)
	if got := e.At.Sub(last); got != window {
		t.Fatalf("discarded %s after the last announcement, want %s", got, window)
	}
	if !slices.Equal(e.Groups, []string{"a"}) {
		t.Fatalf("discarded with groups %q, want the last known", e.Groups)
	}
	// Back: rediscovered on its next announcement.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = false })
	r.announce(l)
	r.next(discovery.Discovered, l, "")
}

func TestSilentButReachableIsKept(t *testing.T) {
	r := newRig(t, []string{"a"})
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "")
	window := DefaultDiscardMultiple * interval
	r.clk.Advance(window) // silent, but answers the probe
	r.none()
	if n := r.lan.DialCount("10.0.0.1:4160"); n != 2 {
		t.Fatalf("contacted %d times, want 2 (discovery, probe)", n)
	}
	// Its groups changed while silent: the next probe tells.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"a", "x"} })
	r.clk.Advance(window)
	r.next(discovery.Changed, l, "")
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"x"} })
	r.clk.Advance(window)
	r.next(discovery.Discarded, l, discovery.ReasonNoInterest)
}

func TestDiscardThenRediscovery(t *testing.T) {
	r := newRig(t, []string{"a"})
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "")
	if !r.d.Discard(l.ID) {
		t.Fatal("Discard of a discovered lookup service reported false")
	}
	r.next(discovery.Discarded, l, discovery.ReasonRequested)
	if r.d.Discard(l.ID) {
		t.Fatal("second Discard reported true")
	}
	r.none()
	r.announce(l)
	r.next(discovery.Discovered, l, "")

	// By request response too: a discarded one is not named as known, so
	// it answers the next request.
	r.d.Discard(l.ID)
	r.next(discovery.Discarded, l, discovery.ReasonRequested)
	r.d.Start(context.Background())
	r.clk.Advance(0)
	if known := r.lan.LastRequest().Known; len(known) != 0 {
		t.Fatalf("request names discarded %v as known", known)
	}
	r.next(discovery.Discovered, l, "")
}

// A Java lookup service's proxy carries its ServiceID: discovered under
// it from its first answer, nothing more when it announces.
func TestJavaProxyGivesTheServiceID(t *testing.T) {
	r := newRig(t, nil)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}, Java: true})
	r.d.Start(context.Background())
	r.clk.Advance(0)
	if e := r.next(discovery.Discovered, l, ""); e.IDIsStandIn() || !e.StandIn.IsZero() {
		t.Fatalf("discovered under a stand-in: %+v", e.LookupService)
	}
	r.announce(l)
	r.none()
}

// A proxy jinid cannot read gets a stand-in; the announcement that tells
// the real ServiceID discards the stand-in and discovers the real one,
// in that order, and the same lookup service is then known by either.
func TestOpaqueProxyIdentifiedByAnnouncement(t *testing.T) {
	r := newRig(t, nil)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}, Java: true, Opaque: true})
	r.d.Start(context.Background())
	r.clk.Advance(0)
	e := r.nextEvent()
	if e.Kind != discovery.Discovered || !e.IDIsStandIn() || e.ID == l.ID {
		t.Fatalf("first event %s %s (stand-in %s), want discovered under a stand-in", e.Kind, e.ID, e.StandIn)
	}
	r.announce(l)
	if d := r.nextEvent(); d.Kind != discovery.Discarded || d.ID != e.ID || d.Reason != discovery.ReasonIdentified {
		t.Fatalf("after the announcement: %s %s (%s), want the stand-in %s discarded (identified)", d.Kind, d.ID, d.Reason, e.ID)
	}
	if d := r.next(discovery.Discovered, l, ""); d.IDIsStandIn() || d.StandIn != e.ID {
		t.Fatalf("discovered %s with stand-in %s, want the real ID with stand-in %s", d.ID, d.StandIn, e.ID)
	}
	r.none()
	got := r.d.Discovered()
	if len(got) != 1 || got[0].ID != l.ID || got[0].IDIsStandIn() {
		t.Fatalf("Discovered() = %+v, want one with the announced ID", got)
	}
	// Its answers to later requests carry only the proxy: the same one.
	r.d.SetGroups([]string{"a"})
	r.clk.Advance(0)
	r.none()
	if !r.d.Discard(l.ID) {
		t.Fatal("Discard by the announced ID failed")
	}
	r.next(discovery.Discarded, l, discovery.ReasonRequested)
}

// nextEvent waits for the next event, whatever it is.
func (r *rig) nextEvent() discovery.Event {
	r.t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatal("no event")
	}
	return discovery.Event{}
}

// A Java lookup service that answers requests in both versions with
// different containers of its proxy (and without its port in version 1)
// and announces in version 2 only, always with sequence number 0, is one
// lookup service: discovered once, under its real ServiceID from the
// first answer when jinid can read its proxy (Reggie's), or under a
// stand-in replaced by its first announcement (a custom registrar's);
// kept while it announces, discarded once when it stops (issue 13, item
// 9; issue 31).
func TestReggieIsOneLookupService(t *testing.T) {
	for _, opaque := range []bool{false, true} {
		t.Run(map[bool]string{false: "Reggie", true: "custom"}[opaque], func(t *testing.T) {
			r := newRig(t, []string{"lab"})
			sim := discoverytest.Reggie("10.0.0.9", "", "lab")
			if opaque {
				sim = discoverytest.Custom("10.0.0.9", "", "lab")
			}
			l := r.lan.Add(sim)
			r.d.Start(context.Background())
			r.clk.Advance(0) // the first request: answers in version 1 and 2
			first := r.nextEvent()
			if first.Kind != discovery.Discovered || first.IDIsStandIn() != opaque || !opaque && first.ID != l.ID {
				t.Fatalf("first event %s %s (stand-in %v), want discovered under %s", first.Kind, first.ID, first.IDIsStandIn(),
					map[bool]string{false: l.ID.String(), true: "a stand-in"}[opaque])
			}
			r.none()
			if got := r.d.Discovered(); len(got) != 1 || got[0].Port != l.Port || got[0].Version != discovery.ProtocolV2 {
				t.Fatalf("after both answers: %+v, want one lookup service at port %d, probed in version 2", got, l.Port)
			}

			r.announce(l)
			if opaque {
				if d := r.nextEvent(); d.Kind != discovery.Discarded || d.ID != first.ID || d.Reason != discovery.ReasonIdentified {
					t.Fatalf("after its announcement: %s %s (%s), want the stand-in discarded", d.Kind, d.ID, d.Reason)
				}
				r.next(discovery.Discovered, l, "")
			}
			// Announcing every interval, always with sequence 0: kept, never
			// probed, nothing reported; the requests of the rounds name it.
			for range 10 {
				r.clk.Advance(interval)
				r.announce(l)
			}
			r.none()
			if n := r.lan.DialCount(l.Host + ":4160"); n != 0 {
				t.Fatalf("probed %d times while it announced", n)
			}
			if known := r.lan.LastRequest().Known; !slices.Contains(known, l.ID) {
				t.Fatalf("requests name %v as known, not %s", known, l.ID)
			}
			got := r.d.Discovered()
			if len(got) != 1 || got[0].ID != l.ID || got[0].IDIsStandIn() {
				t.Fatalf("Discovered() = %+v, want one under %s", got, l.ID)
			}

			// It stops: discarded once, under its real ID, when the window after
			// its last announcement has passed and the probe fails.
			r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
			r.clk.Advance(3 * interval)
			r.next(discovery.Discarded, l, discovery.ReasonCommunication)
			r.none()
		})
	}
}

// Reggie's answers in either order, version 1 (without its port) or
// version 2 first: one lookup service under its real ServiceID from the
// first, its port learnt from the version 2 answer (an update, nothing a
// client hears), and its announcement adds nothing.
func TestReggieAnswersInEitherOrder(t *testing.T) {
	for _, order := range [][]int{{discovery.ProtocolV1, discovery.ProtocolV2}, {discovery.ProtocolV2, discovery.ProtocolV1}} {
		r := newRig(t, []string{"lab"})
		sim := discoverytest.Reggie("10.0.0.9", "lab")
		sim.AnswerVersions = order
		l := r.lan.Add(sim)
		r.d.Start(context.Background())
		r.clk.Advance(0)
		if e := r.next(discovery.Discovered, l, ""); e.IDIsStandIn() {
			t.Fatalf("order %v: discovered under a stand-in", order)
		}
		r.announce(l)
		r.none()
		got := r.d.Discovered()
		if len(got) != 1 || got[0].ID != l.ID || got[0].Port != l.Port || got[0].Version != discovery.ProtocolV2 {
			t.Fatalf("order %v: Discovered() = %+v, want one under %s at port %d, probed in version 2", order, got, l.ID, l.Port)
		}
		if order[0] == discovery.ProtocolV1 {
			select {
			case u := <-r.updates:
				if u.ID != l.ID || u.Port != l.Port {
					t.Fatalf("update %s at port %d", u.ID, u.Port)
				}
			default:
				t.Fatalf("no update when the version 2 answer gave the port")
			}
		}
	}
}

// Announced first, then the answers to requests sent before it was known
// arrive: still one lookup service, no event.
func TestReggieAnnouncedThenLateAnswers(t *testing.T) {
	for _, sim := range []discoverytest.SimLUS{discoverytest.Reggie("10.0.0.9", "lab"), discoverytest.Custom("10.0.0.9", "lab")} {
		r := newRig(t, []string{"lab"})
		l := r.lan.Add(sim)
		r.announce(l)
		r.next(discovery.Discovered, l, "")
		for _, v := range []int{discovery.ProtocolV1, discovery.ProtocolV2} {
			resp, err := r.lan.Unicast(t.Context(), l.Host, l.Port, v)
			if err != nil {
				t.Fatal(err)
			}
			if v == discovery.ProtocolV1 {
				resp.Port = 0 // as a connect-back gives it
			}
			r.d.HandleResponse(resp, "sim0")
		}
		r.none()
		if got := r.d.Discovered(); len(got) != 1 || got[0].ID != l.ID {
			t.Fatalf("opaque %v: Discovered() = %+v, want one under %s", sim.Opaque, got, l.ID)
		}
	}
}

// Two Java lookup services on one host: a version 1 answer, which lacks
// its port, is not pinned on the wrong one.
func TestTwoJavaLookupServicesOnOneHost(t *testing.T) {
	for _, opaque := range []bool{false, true} {
		r := newRig(t, []string{"lab"})
		a := discoverytest.Reggie("10.0.0.9", "lab")
		b := discoverytest.Reggie("10.0.0.9", "lab", "b")
		a.Opaque, b.Opaque = opaque, opaque
		b.Port = 4170
		la, lb := r.lan.Add(a), r.lan.Add(b)
		r.d.Start(context.Background())
		r.clk.Advance(0)
		seen := map[discovery.ServiceID]bool{}
		for range 2 {
			e := r.nextEvent()
			if e.Kind != discovery.Discovered || e.IDIsStandIn() != opaque {
				t.Fatalf("opaque %v: event %s %s (stand-in %v)", opaque, e.Kind, e.ID, e.IDIsStandIn())
			}
			seen[e.ID] = true
		}
		r.none()
		if len(seen) != 2 || len(r.d.Discovered()) != 2 {
			t.Fatalf("opaque %v: discovered %v, now %+v; want two", opaque, seen, r.d.Discovered())
		}
		if !opaque && (!seen[la.ID] || !seen[lb.ID]) {
			t.Fatalf("discovered %v, want %s and %s", seen, la.ID, lb.ID)
		}
		r.announce(la)
		r.announce(lb)
		if opaque {
			for _, l := range []*discoverytest.SimLUS{la, lb} {
				d := r.nextEvent()
				if d.Kind != discovery.Discarded || d.Reason != discovery.ReasonIdentified || !seen[d.ID] {
					t.Fatalf("%s %s (%s), want a stand-in discarded", d.Kind, d.ID, d.Reason)
				}
				if e := r.next(discovery.Discovered, l, ""); e.StandIn != d.ID || slices.Compare(e.Groups, l.Groups) != 0 {
					t.Fatalf("%s discovered from stand-in %s with groups %q, want from %s", l.ID, e.StandIn, e.Groups, d.ID)
				}
			}
		}
		r.none()
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{},
		{Network: discoverytest.NewLAN(), RequestInterval: -time.Second},
		{Network: discoverytest.NewLAN(), DiscardMultiple: -1},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// A lookup service heard over both families is reported and dialed at the
// best of its addresses whatever order they came in, and is not discarded
// while another of its addresses answers.
func TestAddressChoiceIsDeterministic(t *testing.T) {
	id := discovery.ServiceID{0x42}
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		r := newRig(t, []string{"a"})
		ls := []*discoverytest.SimLUS{
			r.lan.Add(discoverytest.SimLUS{ID: id, Host: "fe80::1%sim0", Groups: []string{"a"}}),
			r.lan.Add(discoverytest.SimLUS{ID: id, Host: "10.0.0.1", Groups: []string{"a"}}),
		}
		r.announce(ls[order[0]])
		r.next(discovery.Discovered, ls[order[0]], "")
		r.announce(ls[order[1]])
		r.none()
		got := r.d.Discovered()
		if len(got) != 1 || got[0].Host != "10.0.0.1" || got[0].Interface != "sim0" {
			t.Fatalf("order %v: discovered %+v; want one, at 10.0.0.1 on sim0", order, got)
		}

		// The IPv4 address stops answering; the link-local one still
		// does: kept, and reported there.
		r.lan.Set(ls[1], func(l *discoverytest.SimLUS) { l.Down = true })
		r.clk.Advance(DefaultDiscardMultiple * interval)
		r.none()
		if got := r.d.Discovered(); len(got) != 1 || got[0].Host != "fe80::1%sim0" {
			t.Fatalf("order %v: after the IPv4 address failed, discovered %+v; want it at fe80::1%%sim0", order, got)
		}
		r.lan.Set(ls[0], func(l *discoverytest.SimLUS) { l.Down = true })
		r.clk.Advance(DefaultDiscardMultiple * interval)
		r.next(discovery.Discarded, ls[0], discovery.ReasonCommunication)
	}
}

// A lookup service reached over two interfaces stays when one goes, at
// its address on the other; reached over none left, it is discarded.
func TestInterfaceGoneDiscardsForThatInterfaceOnly(t *testing.T) {
	r := newRig(t, []string{"a"})
	id := discovery.ServiceID{0x43}
	on0 := r.lan.Add(discoverytest.SimLUS{ID: id, Host: "10.0.0.1", Groups: []string{"a"}})
	on1 := r.lan.Add(discoverytest.SimLUS{ID: id, Host: "10.1.0.1", Groups: []string{"a"}})
	other := r.lan.Add(discoverytest.SimLUS{Host: "10.1.0.9", Groups: []string{"a"}})
	r.d.HandleAnnouncement(r.lan.Announcement(on0, discovery.ProtocolV2), "sim0")
	r.next(discovery.Discovered, on0, "")
	r.d.HandleAnnouncement(r.lan.Announcement(on1, discovery.ProtocolV2), "sim1")
	r.d.HandleAnnouncement(r.lan.Announcement(other, discovery.ProtocolV2), "sim1")
	r.next(discovery.Discovered, other, "")

	r.d.HandleLinks([]string{"sim1"}) // sim0 went away
	r.none()
	got := r.d.Discovered()
	i := slices.IndexFunc(got, func(ls discovery.LookupService) bool { return ls.ID == id })
	if i < 0 || got[i].Host != "10.1.0.1" || got[i].Interface != "sim1" {
		t.Fatalf("after sim0 went: %+v; want it kept at 10.1.0.1 on sim1", got)
	}
	r.d.HandleLinks(nil) // and sim1
	evs := []discovery.Event{r.nextEvent(), r.nextEvent()}
	for _, e := range evs {
		if e.Kind != discovery.Discarded || e.Reason != discovery.ReasonCommunication {
			t.Fatalf("event %s (%s) for %s; want both discarded for communication", e.Kind, e.Reason, e.ID)
		}
	}
	if len(r.d.Discovered()) != 0 {
		t.Fatalf("still discovered: %+v", r.d.Discovered())
	}
}

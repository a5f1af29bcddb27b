package manager

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
)

type rig struct {
	t      *testing.T
	clk    *clock.Fake
	lan    *discoverytest.LAN
	m      *Manager
	events chan Event
	found  chan Discovered
}

func newRig(t *testing.T, groups []string, locs ...string) *rig {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), lan: discoverytest.NewLAN(), events: make(chan Event, 1000), found: make(chan Discovered, 1000)}
	var ls []discovery.Locator
	for _, s := range locs {
		ls = append(ls, r.locator(s))
	}
	m, err := New(Config{
		Groups: groups, Locators: ls, Clock: r.clk,
		OnEvent: func(e Event) { r.events <- e },
		OnFound: func(d Discovered) { r.found <- d },
		Group:   group.Config{Network: r.lan},
		Locator: locator.Config{Dial: r.lan.Dial, LookupSRV: r.lan.LookupSRV, Jitter: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	r.lan.OnResponse(m.HandleResponse)
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	// Locator discovery runs from the start; group discovery sends
	// requests only in the tests that Start the manager (the others hear
	// announcements alone).
	if err := m.l.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) locator(s string) discovery.Locator {
	l, err := discovery.ParseLocator(s)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

func (r *rig) next(kind discovery.EventKind, l *discoverytest.SimLUS, reason string, byGroup, byLocator bool) Event {
	r.t.Helper()
	select {
	case e := <-r.events:
		if e.Kind != kind || e.ID != l.ID || e.Reason != reason || e.ByGroup != byGroup || e.ByLocator != byLocator {
			r.t.Fatalf("event %s %s (reason %q, by group %v, by locator %v), want %s %s (reason %q, by group %v, by locator %v)",
				e.Kind, e.ID, e.Reason, e.ByGroup, e.ByLocator, kind, l.ID, reason, byGroup, byLocator)
		}
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatalf("no event; want %s %s", kind, l.ID)
	}
	return Event{}
}

// nextAny waits for the next event, whatever it is.
func (r *rig) nextAny() Event {
	r.t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatal("no event")
	}
	return Event{}
}

func (r *rig) none() {
	r.t.Helper()
	select {
	case e := <-r.events:
		r.t.Fatalf("unexpected event %s %s (reason %q)", e.Kind, e.ID, e.Reason)
	case <-time.After(100 * time.Millisecond):
	}
}

func (r *rig) announce(l *discoverytest.SimLUS) {
	r.m.HandleAnnouncement(r.lan.Announcement(l, discovery.ProtocolV2), "sim0")
}

const window = group.DefaultDiscardMultiple * group.DefaultAnnouncementInterval

func TestTwoLocatorsOneLookupService(t *testing.T) {
	r := newRig(t, []string{}, "jini://10.0.0.1", "jini://lus.test")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1"})
	r.lan.Add(discoverytest.SimLUS{Host: "lus.test", ID: l.ID})
	r.clk.Advance(0)
	r.next(discovery.Discovered, l, "", false, true)
	r.none() // the second locator finds the same one
	r.m.RemoveLocators(r.locator("jini://10.0.0.1"))
	r.none() // the other locator still wants it
	r.m.RemoveLocators(r.locator("jini://lus.test"))
	r.next(discovery.Discarded, l, discovery.ReasonLocatorRemoved, false, false)
}

func TestFoundByBothIsOneLookupService(t *testing.T) {
	r := newRig(t, []string{"a"}, "jini://10.0.0.1")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.clk.Advance(0)
	r.next(discovery.Discovered, l, "", false, true)
	r.announce(l)
	r.none() // already discovered: now by group too
	got := r.m.Discovered()
	if len(got) != 1 || !got[0].ByGroup || !got[0].ByLocator {
		t.Fatalf("Discovered() = %+v", got)
	}
}

// A lookup service found another way once discovered — by group after
// a locator, by locator after a group, by a second locator — is told to
// OnFound (no event says so), with every locator that found it: the join
// manager wants it for each.
func TestFoundAnotherWay(t *testing.T) {
	found := func(r *rig, byGroup bool, locs ...string) {
		t.Helper()
		select {
		case d := <-r.found:
			var got []string
			for _, l := range d.Locators {
				got = append(got, l.String())
			}
			if d.ByGroup != byGroup || !slices.Equal(got, locs) {
				t.Fatalf("found again: by group %v, locators %v; want %v, %v", d.ByGroup, got, byGroup, locs)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not told it was found another way")
		}
	}
	t.Run("a group after a locator", func(t *testing.T) {
		r := newRig(t, []string{"a"}, "jini://10.0.0.1")
		l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
		r.clk.Advance(0)
		r.next(discovery.Discovered, l, "", false, true)
		r.announce(l)
		found(r, true, "jini://10.0.0.1:4160")
		r.announce(l)
		select {
		case d := <-r.found:
			t.Fatalf("told again of a way already known: %+v", d)
		case <-time.After(100 * time.Millisecond):
		}
	})
	t.Run("a locator after a group", func(t *testing.T) {
		r := newRig(t, []string{"a"})
		l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
		r.announce(l)
		r.next(discovery.Discovered, l, "", true, false)
		r.m.AddLocators(r.locator("jini://10.0.0.1"))
		r.clk.Advance(0)
		found(r, true, "jini://10.0.0.1:4160")
	})
	t.Run("a second locator", func(t *testing.T) {
		r := newRig(t, []string{}, "jini://10.0.0.1")
		l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1"})
		r.lan.Add(discoverytest.SimLUS{Host: "lus.test", ID: l.ID})
		r.clk.Advance(0)
		r.next(discovery.Discovered, l, "", false, true)
		r.m.AddLocators(r.locator("jini://lus.test"))
		r.clk.Advance(0)
		found(r, false, "jini://10.0.0.1:4160", "jini://lus.test:4160")
	})
}

func TestLocatorWantedIsNeverPassivelyDiscarded(t *testing.T) {
	r := newRig(t, []string{"a"}, "jini://10.0.0.1")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "", true, false)
	r.clk.Advance(0) // locator discovery finds it too
	r.none()

	// Silent and unreachable: group discovery discards it, the manager
	// keeps it.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(window)
	r.none()
	if got := r.m.Discovered(); len(got) != 1 || got[0].ByGroup || !got[0].ByLocator {
		t.Fatalf("Discovered() = %+v, want it kept by locator only", got)
	}
	// Back: group discovery has it again, quietly.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = false })
	r.announce(l)
	r.none()
	if got := r.m.Discovered(); len(got) != 1 || !got[0].ByGroup || !got[0].ByLocator {
		t.Fatalf("Discovered() = %+v, want it by both again", got)
	}
	// Its groups leave the interest: still kept, and the change told.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"z"} })
	r.announce(l)
	if e := r.next(discovery.Changed, l, "", false, true); !slices.Equal(e.Groups, []string{"z"}) {
		t.Fatalf("changed to %q", e.Groups)
	}
}

func TestRemoveGroupWhileWantedByLocator(t *testing.T) {
	r := newRig(t, []string{"a"}, "jini://10.0.0.1")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	other := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.2", Groups: []string{"a"}})
	r.clk.Advance(0)
	r.next(discovery.Discovered, l, "", false, true)
	r.announce(l)
	r.announce(other)
	r.next(discovery.Discovered, other, "", true, false)

	if err := r.m.RemoveGroups("a"); err != nil {
		t.Fatal(err)
	}
	// Only the one no locator wants is discarded.
	r.next(discovery.Discarded, other, discovery.ReasonNoInterest, false, false)
	r.none()
	// Then removing the locator discards it.
	r.m.RemoveLocators(r.locator("jini://10.0.0.1"))
	r.next(discovery.Discarded, l, discovery.ReasonLocatorRemoved, false, false)
	if got := r.m.Discovered(); len(got) != 0 {
		t.Fatalf("Discovered() = %+v", got)
	}
}

func TestRemoveLocatorWhileWantedByGroup(t *testing.T) {
	r := newRig(t, []string{"a"}, "jini://10.0.0.1")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.clk.Advance(0)
	r.next(discovery.Discovered, l, "", false, true)
	r.announce(l)
	r.none()
	r.m.SetLocators(nil)
	r.none() // a group still wants it
	if got := r.m.Discovered(); len(got) != 1 || !got[0].ByGroup || got[0].ByLocator {
		t.Fatalf("Discovered() = %+v", got)
	}
	// Now group discovery's rules apply to it again.
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(window)
	r.next(discovery.Discarded, l, discovery.ReasonCommunication, false, false)
}

func TestDiscardAndRediscovery(t *testing.T) {
	r := newRig(t, []string{"a"}, "jini://10.0.0.1")
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.clk.Advance(0)
	r.next(discovery.Discovered, l, "", false, true)
	r.announce(l)
	r.none()
	if !r.m.Discard(l.ID) {
		t.Fatal("Discard reported false")
	}
	r.next(discovery.Discarded, l, discovery.ReasonRequested, false, false)
	r.none() // one discarded event, not one per engine
	// Its next announcement brings it back.
	r.announce(l)
	r.next(discovery.Discovered, l, "", true, false)
	// And locator discovery, not before 15 s, adds itself.
	r.clk.Advance(locator.DefaultRediscoverDelay)
	r.none()
	if got := r.m.Discovered(); len(got) != 1 || !got[0].ByGroup || !got[0].ByLocator {
		t.Fatalf("Discovered() = %+v", got)
	}
	if r.m.Discard([16]byte{9}) {
		t.Fatal("Discard of an unknown ServiceID reported true")
	}
}

// A Java lookup service found by locator, then heard announcing: one
// lookup service. Reggie's proxy gives its ServiceID from the start; a
// proxy jinid cannot read gives a stand-in, discarded (identified) when
// the announcement tells the real ID, which is then discovered.
func TestJavaLookupServiceByLocatorAndAnnouncement(t *testing.T) {
	for _, opaque := range []bool{false, true} {
		r := newRig(t, []string{"a"}, "jini://10.0.0.1")
		l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}, Java: true, Opaque: opaque})
		r.clk.Advance(0)
		first := r.nextAny()
		if first.Kind != discovery.Discovered || first.IDIsStandIn() != opaque || !opaque && first.ID != l.ID {
			t.Fatalf("opaque %v: first event %s %s (stand-in %v)", opaque, first.Kind, first.ID, first.IDIsStandIn())
		}
		r.announce(l)
		if opaque {
			if d := r.nextAny(); d.Kind != discovery.Discarded || d.ID != first.ID || d.Reason != discovery.ReasonIdentified {
				t.Fatalf("after the announcement: %s %s (%s), want the stand-in discarded (identified)", d.Kind, d.ID, d.Reason)
			}
			if e := r.next(discovery.Discovered, l, "", true, true); e.StandIn != first.ID {
				t.Fatalf("discovered with stand-in %s, want %s", e.StandIn, first.ID)
			}
		}
		r.none()
		got := r.m.Discovered()
		if len(got) != 1 || got[0].ID != l.ID || !got[0].ByGroup || !got[0].ByLocator {
			t.Fatalf("opaque %v: Discovered() = %+v", opaque, got)
		}
		// Discard by the real ID reaches both engines.
		if !r.m.Discard(l.ID) {
			t.Fatal("Discard reported false")
		}
		r.next(discovery.Discarded, l, discovery.ReasonRequested, false, false)
		r.none()
	}
}

func TestLateJoinerAndGroupChanges(t *testing.T) {
	r := newRig(t, []string{"a", "b"})
	r.m.Start(context.Background())
	r.clk.Advance(time.Hour)
	l := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.3", Groups: []string{"a"}})
	r.announce(l)
	r.next(discovery.Discovered, l, "", true, false)
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"b"} })
	r.announce(l)
	r.next(discovery.Changed, l, "", true, false)
	r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = []string{"c"} })
	r.announce(l)
	r.next(discovery.Discarded, l, discovery.ReasonNoInterest, false, false)
}

// A Java lookup service answering in both versions and announcing with
// sequence 0 (as Reggie does), wanted by group and by locator: one lookup
// service, discovered once under its real ServiceID (Reggie's proxy
// carries it) or under a stand-in then its real one (a proxy jinid cannot
// read); discarded once when it stops, by group (LD.3.1: the locator
// still wants it, so it stays).
func TestReggieByGroupAndLocator(t *testing.T) {
	for _, opaque := range []bool{false, true} {
		for _, byLocator := range []bool{false, true} {
			var locs []string
			if byLocator {
				locs = append(locs, "jini://10.0.0.9")
			}
			r := newRig(t, []string{"lab"}, locs...)
			sim := discoverytest.Reggie("10.0.0.9", "lab")
			sim.Opaque = opaque
			l := r.lan.Add(sim)
			r.m.Start(context.Background())
			r.clk.Advance(0)
			first := r.nextAny()
			if first.Kind != discovery.Discovered || first.IDIsStandIn() != opaque || !opaque && first.ID != l.ID {
				t.Fatalf("opaque %v: first event %s %s (stand-in %v)", opaque, first.Kind, first.ID, first.IDIsStandIn())
			}
			r.clk.Advance(time.Minute) // the rest of the round of requests, answered in both versions
			// Locator discovery dials in its own goroutine: wait until it has
			// found it too (one lookup service, wanted both ways).
			if byLocator {
				testenv.Until(t, "found by group and by locator", func() bool {
					got := r.m.Discovered()
					return len(got) == 1 && got[0].ByGroup && got[0].ByLocator
				})
			}
			r.announce(l)
			if opaque {
				if d := r.nextAny(); d.Kind != discovery.Discarded || d.ID != first.ID || d.Reason != discovery.ReasonIdentified {
					t.Fatalf("after the announcement: %s %s (%s), want the stand-in discarded (identified)", d.Kind, d.ID, d.Reason)
				}
				r.next(discovery.Discovered, l, "", true, byLocator)
			}
			for range 5 {
				r.clk.Advance(group.DefaultAnnouncementInterval)
				r.announce(l)
			}
			r.none()
			if got := r.m.Discovered(); len(got) != 1 || got[0].ID != l.ID || got[0].ByLocator != byLocator {
				t.Fatalf("Discovered() = %+v", got)
			}
			r.lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
			r.clk.Advance(window)
			if byLocator {
				r.none() // wanted by locator: never passively discarded
			} else {
				r.next(discovery.Discarded, l, discovery.ReasonCommunication, false, false)
			}
			r.none()
		}
	}
}

// Identified by its announcement first, then found by a locator added
// later (which knows only its stand-in): the same lookup service, no new
// event.
func TestCustomIdentifiedThenByLocator(t *testing.T) {
	r := newRig(t, []string{"lab"})
	l := r.lan.Add(discoverytest.Custom("10.0.0.9", "lab"))
	r.m.Start(context.Background())
	r.clk.Advance(0)
	first := r.nextAny()
	r.announce(l)
	if d := r.nextAny(); d.Kind != discovery.Discarded || d.ID != first.ID || d.Reason != discovery.ReasonIdentified {
		t.Fatalf("after the announcement: %s %s (%s), want the stand-in discarded (identified)", d.Kind, d.ID, d.Reason)
	}
	r.next(discovery.Discovered, l, "", true, false)
	r.m.AddLocators(r.locator("jini://10.0.0.9"))
	r.clk.Advance(0)
	testenv.Until(t, "the locator to find it too", func() bool {
		got := r.m.Discovered()
		if len(got) != 1 || got[0].ID != l.ID {
			t.Fatalf("Discovered() = %+v, want one under %s", got, l.ID)
		}
		return got[0].ByLocator
	})
	r.none()
}

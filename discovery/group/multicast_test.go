package group

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
)

// javaRegistrar is the proxy a Java lookup service hands out in a
// protocol version: Reggie's (JGDMS), which carries its ServiceID, or
// with opaque one of a class jinid cannot read.
func javaRegistrar(id discovery.ServiceID, opaque bool, version int) discovery.Registrar {
	return unicast.ReadRegistrar(discoverytest.JavaProxy(id, opaque, version))
}

// TestMulticastJavaLookupServices runs group discovery on a real LAN of
// namespaces against Java lookup services of both versions, one with
// Reggie's proxy (its ServiceID read from its first answer), one with a
// proxy jinid cannot read (a stand-in until it announces): each is
// discovered under its real ServiceID in the end, every discard names an
// ID discovered before (a stand-in, when its announcement came after an
// answer), and one that stops is discarded within the window.
func TestMulticastJavaLookupServices(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1, h2, h3 := lab.Host("client"), lab.Host("lus1"), lab.Host("lus2"), lab.Host("lus3")
	for _, h := range []*netlab.Host{client, h1, h2, h3} {
		h.Attach(lan)
	}
	const every = 300 * time.Millisecond
	start := func(h *netlab.Host, version int, id byte, opaque bool, groups ...string) *discoverytest.LookupService {
		sid := discovery.ServiceID{id}
		l, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: version, ServiceID: sid, Groups: groups,
			Registrar: javaRegistrar(sid, opaque, version), Namespace: h.Namespace(), Announce: every})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	start(h1, 1, 1, false, "lab")
	l2 := start(h2, 2, 2, true, "lab", "x")
	start(h3, 2, 3, false, "other")

	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: client.Namespace(), NoIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Shutdown(context.Background())
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	mc, err := NewMulticast(MulticastConfig{Host: host, Namespace: client.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan discovery.Event, 100)
	d, err := New(Config{Groups: []string{"lab"}, Network: mc, AnnouncementInterval: every,
		OnEvent: func(e discovery.Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	mc.SetSink(d)
	defer func() { mc.Shutdown(context.Background()); d.Shutdown(context.Background()) }()
	if err := mc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	d.Start(t.Context())

	// The events as a client would follow them: a discovered ID is new,
	// a discarded one was discovered; only a stand-in is discarded
	// before lus2 stops, for its real ID.
	live := map[discovery.ServiceID]bool{}
	follow := func(e discovery.Event) {
		t.Helper()
		switch {
		case e.Kind == discovery.Updated && live[e.ID]:
			// Where it is reached: nothing a client hears.
		case e.Kind == discovery.Discovered && !live[e.ID]:
			if e.ID == (discovery.ServiceID{1}) && e.IDIsStandIn() {
				t.Errorf("lus1 (Reggie's proxy) discovered under a stand-in")
			}
			live[e.ID] = true
		case e.Kind == discovery.Discarded && live[e.ID] && e.IDIsStandIn() && e.Reason == discovery.ReasonIdentified:
			delete(live, e.ID)
		default:
			t.Fatalf("event %s %s (reason %q, stand-in %v) with %v discovered", e.Kind, e.ID, e.Reason, e.IDIsStandIn(), live)
		}
	}
	realIDs := func() []discovery.ServiceID {
		var ids []discovery.ServiceID
		for _, ls := range d.Discovered() {
			if ls.Registrar.Descriptor != nil {
				t.Errorf("%s: a descriptor from a Java proxy", ls.ID)
			}
			if !ls.IDIsStandIn() {
				ids = append(ids, ls.ID)
			}
		}
		slices.SortFunc(ids, func(a, b discovery.ServiceID) int { return bytes.Compare(a[:], b[:]) })
		return ids
	}
	for settled := time.After(10 * every); !slices.Equal(realIDs(), []discovery.ServiceID{{1}, {2}}) || len(live) != 2; {
		select {
		case e := <-events:
			follow(e)
		case <-settled:
			t.Fatalf("discovered %v (events: %v), want lus1 and lus2 under their real IDs", d.Discovered(), live)
		}
	}
	// The engine's state runs ahead of its ordered events: follow them
	// until they too leave lus1 and lus2 (and no stand-in) discovered.
	for caughtUp := time.After(10 * every); !live[discovery.ServiceID{1}] || !live[discovery.ServiceID{2}] || len(live) != 2; {
		select {
		case e := <-events:
			follow(e)
		case <-caughtUp:
			t.Fatalf("events leave %v discovered, want lus1 and lus2", live)
		}
	}

	// lus2 stops: discarded once the window (3 × 300 ms) has passed.
	l2.Close()
	stopped := time.Now()
	e := discovery.Event{Kind: discovery.Updated}
	for e.Kind == discovery.Updated { // where lus1 is reached: nothing a client hears
		select {
		case e = <-events:
		case <-time.After(5 * time.Second):
			t.Fatal("lus2 not discarded")
		}
	}
	if e.Kind != discovery.Discarded || e.ID != (discovery.ServiceID{2}) || e.Reason != discovery.ReasonCommunication {
		t.Fatalf("event %s %s (reason %q), want lus2 discarded for communication", e.Kind, e.ID, e.Reason)
	}
	if after := time.Since(stopped); after < 2*every || after > 3*every+time.Second {
		t.Fatalf("discarded %v after it stopped; window %v", after, 3*every)
	}
}

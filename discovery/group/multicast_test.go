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
	"github.com/jinid/jinid/internal/netlab"
	"github.com/jinid/jinid/internal/vectors"
)

// javaRegistrar is the proxy River's lookup service hands out in a
// protocol version, as the Java implementation encoded it.
func javaRegistrar(t *testing.T, version int) discovery.Registrar {
	t.Helper()
	name := map[int]string{1: "v1.unicast.response", 2: "v2.unicast.response"}[version]
	resp, err := unicast.ReadResponse(bytes.NewReader(vectors.Named(name).Bytes()), unicast.DefaultMaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Registrar
}

// TestMulticastJavaLookupServices runs group discovery on a real LAN of
// namespaces against Java-style lookup services (River's proxies, which
// jinid cannot read the ServiceID from) of both versions: each is
// discovered once, under the ServiceID its announcements give, and one
// that stops is discarded within the window.
func TestMulticastJavaLookupServices(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1, h2, h3 := lab.Host("client"), lab.Host("lus1"), lab.Host("lus2"), lab.Host("lus3")
	for _, h := range []*netlab.Host{client, h1, h2, h3} {
		h.Attach(lan)
	}
	const every = 300 * time.Millisecond
	start := func(h *netlab.Host, version int, id byte, groups ...string) *discoverytest.LookupService {
		l, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: version, ServiceID: discovery.ServiceID{id}, Groups: groups,
			Registrar: javaRegistrar(t, version), Namespace: h.Namespace(), Announce: every})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	start(h1, 1, 1, "lab")
	l2 := start(h2, 2, 2, "lab", "x")
	start(h3, 2, 3, "other")

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

	found := map[discovery.ServiceID]int{}
	deadline := time.After(5 * time.Second)
	for len(found) < 2 {
		select {
		case e := <-events:
			switch {
			case e.Kind == discovery.Discovered:
				found[e.ID]++
			case e.Kind == discovery.Identified && found[e.StandIn] == 1:
				// One found under a stand-in announced its real ID.
			default:
				t.Fatalf("event %s %s before both were discovered", e.Kind, e.ID)
			}
		case <-deadline:
			t.Fatalf("discovered only %v", found)
		}
	}
	// Whichever way each was found first (a request's answer, under a
	// stand-in ID, or an announcement), announcements settle it: two
	// lookup services, under their real ServiceIDs, each stand-in
	// reported identified and nothing else.
	realIDs := func() []discovery.ServiceID {
		var ids []discovery.ServiceID
		for _, ls := range d.Discovered() {
			if ls.Registrar.Descriptor != nil {
				t.Errorf("%s: a descriptor from a Java proxy", ls.ID)
			}
			if !ls.IDFromProxy {
				ids = append(ids, ls.ID)
			}
		}
		slices.SortFunc(ids, func(a, b discovery.ServiceID) int { return bytes.Compare(a[:], b[:]) })
		return ids
	}
	for settled := time.After(10 * every); !slices.Equal(realIDs(), []discovery.ServiceID{{1}, {2}}); {
		select {
		case e := <-events:
			if e.Kind != discovery.Identified || found[e.StandIn] != 1 {
				t.Fatalf("unexpected event %s %s (reason %q, stand-in %s)", e.Kind, e.ID, e.Reason, e.StandIn)
			}
		case <-settled:
			t.Fatalf("discovered %v, want lus1 and lus2 under their real IDs", d.Discovered())
		}
	}
	for drained := false; !drained; {
		select {
		case e := <-events:
			if e.Kind != discovery.Identified {
				t.Fatalf("unexpected event %s %s (reason %q)", e.Kind, e.ID, e.Reason)
			}
		default:
			drained = true
		}
	}

	// lus2 stops: discarded once the window (3 × 300 ms) has passed.
	l2.Close()
	stopped := time.Now()
	select {
	case e := <-events:
		if e.Kind != discovery.Discarded || e.ID != (discovery.ServiceID{2}) || e.Reason != discovery.ReasonCommunication {
			t.Fatalf("event %s %s (reason %q), want lus2 discarded for communication", e.Kind, e.ID, e.Reason)
		}
		if after := time.Since(stopped); after < 2*every || after > 3*every+time.Second {
			t.Fatalf("discarded %v after it stopped; window %v", after, 3*every)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lus2 not discarded")
	}
}

package netmon

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/rig/netlab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func waitFor(t *testing.T, m Monitor, what string, cond func(State) bool) {
	t.Helper()
	changed := make(chan struct{}, 1)
	defer m.Subscribe(func(Delta) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})()
	deadline := time.After(3 * time.Second)
	for {
		st, err := m.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if cond(st) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; state %+v", what, st)
		}
	}
}

func byName(st State, name string) (Interface, bool) {
	for _, i := range st {
		if i.Name == name {
			return i, true
		}
	}
	return Interface{}, false
}

// startNetlink follows h's interfaces until the test ends.
func startNetlink(t *testing.T, h *netlab.Host) *Netlink {
	t.Helper()
	m, err := NewNetlink(h.Namespace(), slog.New(slog.DiscardHandler), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNetlinkFollowsInterfaces(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("h")
	m := startNetlink(t, h)
	waitFor(t, m, "loopback", func(st State) bool { _, ok := byName(st, "lo"); return ok })

	link := h.Attach(lan)
	waitFor(t, m, "eth0 up with its addresses", func(st State) bool {
		i, ok := byName(st, "eth0")
		a4, ok4 := i.Addr(4)
		a6, ok6 := i.Addr(6)
		return ok && i.IsUp() && i.Flags&net.FlagMulticast != 0 && ok4 && a4 == link.IPv4 && ok6 && a6 == link.IPv6
	})
	link.Down()
	waitFor(t, m, "eth0 down", func(st State) bool { i, ok := byName(st, "eth0"); return ok && !i.IsUp() })
	link.Up()
	link.Delete()
	waitFor(t, m, "eth0 gone", func(st State) bool { _, ok := byName(st, "eth0"); return !ok })
}

func TestStatic(t *testing.T) {
	s := NewStatic(State{1: {Index: 1, Name: "lo"}})
	var got []Delta
	unsubscribe := s.Subscribe(func(d Delta) { got = append(got, d) })
	s.Set(State{2: {Index: 2, Name: "eth0", Addrs: []netip.Prefix{netip.MustParsePrefix("fe80::1/64"), netip.MustParsePrefix("2001:db8::1/64")}}}, nil)
	if len(got) != 1 || !got[0].Changed() || len(got[0].Old) != 1 || len(got[0].New) != 1 {
		t.Fatalf("deltas %+v, want the one change", got)
	}
	st, _ := s.Snapshot()
	if a, _ := st[2].Addr(6); a != netip.MustParseAddr("2001:db8::1") {
		t.Fatalf("preferred address %s, want the global one", a)
	}
	unsubscribe()
	s.Set(nil, nil)
	if len(got) != 1 {
		t.Fatal("called after unsubscribing")
	}
}

// Every subscriber hears of every change (issue 16: three transports
// reading one single-slot channel each heard only some).
func TestEverySubscriberHearsEveryChange(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("h")
	m := startNetlink(t, h)
	const n = 3
	var subs [n]chan Delta
	for i := range subs {
		subs[i] = make(chan Delta, 100)
		defer m.Subscribe(func(d Delta) { subs[i] <- d })()
	}
	h.Attach(lan)
	h.Attach(lan)
	// One delta may bring both interfaces (a change coalesces): each
	// subscriber must have heard of each, in whichever deltas.
	for i, ch := range subs {
		heard := map[string]bool{}
		for deadline := time.After(3 * time.Second); !heard["eth0"] || !heard["eth1"]; {
			var d Delta
			select {
			case d = <-ch:
			case <-deadline:
				t.Fatalf("subscriber %d heard of only %v", i, heard)
			}
			for _, name := range []string{"eth0", "eth1"} {
				if ifc, ok := byName(d.New, name); ok && ifc.IsUp() && ifc.HasFamily(4) && ifc.HasFamily(6) {
					if _, before := byName(d.Old, name); !before || d.Changed() {
						heard[name] = true
					}
				}
			}
		}
	}
}

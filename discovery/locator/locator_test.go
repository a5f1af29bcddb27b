package locator_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
)

type locRig struct {
	t      *testing.T
	clk    *clock.Fake
	lan    *discoverytest.LAN
	d      *locator.Discovery
	events chan discovery.Event
}

func newLocRig(t *testing.T, cfg locator.Config) *locRig {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := &locRig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), lan: discoverytest.NewLAN(), events: make(chan discovery.Event, 1000)}
	cfg.Clock, cfg.Dial, cfg.LookupSRV = r.clk, r.lan.Dial, r.lan.LookupSRV
	cfg.OnEvent = func(e discovery.Event) { r.events <- e }
	if cfg.Jitter == 0 {
		cfg.Jitter = -1
	}
	d, err := locator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *locRig) next(kind discovery.EventKind, l *discoverytest.SimLUS, reason string) discovery.Event {
	r.t.Helper()
	select {
	case e := <-r.events:
		if e.Kind != kind || e.ID != l.ID || e.Reason != reason {
			r.t.Fatalf("event %s %s (reason %q), want %s %s (reason %q)", e.Kind, e.ID, e.Reason, kind, l.ID, reason)
		}
		return e
	case <-time.After(5 * time.Second):
		r.t.Fatalf("no event; want %s %s", kind, l.ID)
	}
	return discovery.Event{}
}

func (r *locRig) none() {
	r.t.Helper()
	select {
	case e := <-r.events:
		r.t.Fatalf("unexpected event %s %s (reason %q)", e.Kind, e.ID, e.Reason)
	case <-time.After(100 * time.Millisecond):
	}
}

func mustLocator(t *testing.T, s string) discovery.Locator {
	t.Helper()
	l, err := discovery.ParseLocator(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLocatorUnreachableThenAppears(t *testing.T) {
	loc := mustLocator(t, "jini://10.0.0.1")
	r := newLocRig(t, locator.Config{Locators: []discovery.Locator{loc}})
	const addr = "10.0.0.1:4160"
	r.clk.Advance(0)
	if n := r.lan.DialCount(addr); n != 1 {
		t.Fatalf("%d tries at once, want 1", n)
	}
	// Each wait of the schedule, to the millisecond; the last repeats.
	waits := append(locator.DefaultBackoff[1:], 15*time.Minute, 15*time.Minute)
	for i, w := range waits {
		r.clk.Advance(w - time.Millisecond)
		if n := r.lan.DialCount(addr); n != i+1 {
			t.Fatalf("try %d came before its wait of %s", i+2, w)
		}
		r.clk.Advance(time.Millisecond)
		if n := r.lan.DialCount(addr); n != i+2 {
			t.Fatalf("after a wait of %s: %d tries, want %d", w, n, i+2)
		}
	}
	r.none()

	// It appears: found on the next try, and then left alone.
	lus := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1", Groups: []string{"a"}})
	r.clk.Advance(15 * time.Minute)
	e := r.next(discovery.Discovered, lus, "")
	if e.Locator == nil || !e.Locator.Equal(loc) || e.Address() != addr {
		t.Fatalf("discovered %s via locator %v", e.Address(), e.Locator)
	}
	before := r.lan.DialCount(addr)
	r.clk.Advance(time.Hour)
	if n := r.lan.DialCount(addr); n != before {
		t.Fatalf("found locator tried %d more times", n-before)
	}
	if got := r.d.Discovered(); len(got) != 1 || got[0].ID != lus.ID {
		t.Fatalf("Discovered() = %+v", got)
	}
}

func TestLocatorJitter(t *testing.T) {
	for _, c := range []struct {
		rand float64
		wait time.Duration // the first retry, nominally 5 s
	}{
		{0, 4500 * time.Millisecond},
		{0.5, 5 * time.Second},
		{0.9999, 5500 * time.Millisecond},
	} {
		r := newLocRig(t, locator.Config{Locators: []discovery.Locator{mustLocator(t, "jini://10.0.0.1")},
			Jitter: 0.1, Rand: func() float64 { return c.rand }})
		r.clk.Advance(0)
		r.clk.Advance(c.wait - time.Millisecond)
		if n := r.lan.DialCount("10.0.0.1:4160"); n != 1 {
			t.Fatalf("rand %g: retried before %s", c.rand, c.wait)
		}
		r.clk.Advance(time.Millisecond)
		if n := r.lan.DialCount("10.0.0.1:4160"); n != 2 {
			t.Fatalf("rand %g: not retried at %s", c.rand, c.wait)
		}
		r.d.Shutdown(context.Background())
	}
}

func TestLocatorSRV(t *testing.T) {
	r := newLocRig(t, locator.Config{})
	a := r.lan.Add(discoverytest.SimLUS{Host: "lus1.lab.test", Port: 4160})
	b := r.lan.Add(discoverytest.SimLUS{Host: "lus2.lab.test", Port: 4170, Down: true})
	r.lan.SetSRV("lab.test", "lus1.lab.test:4160", "lus2.lab.test:4170")
	r.d.Add(mustLocator(t, "jini://lab.test"))
	r.clk.Advance(0)
	r.next(discovery.Discovered, a, "")
	r.none()
	// Only the missing one is tried again.
	r.lan.Set(b, func(l *discoverytest.SimLUS) { l.Down = false })
	r.clk.Advance(5 * time.Second)
	r.next(discovery.Discovered, b, "")
	if n := r.lan.DialCount("lus1.lab.test:4160"); n != 1 {
		t.Fatalf("found target tried %d times", n)
	}
	// A name without SRV records is tried as a host.
	c := r.lan.Add(discoverytest.SimLUS{Host: "plain.test"})
	r.d.Add(mustLocator(t, "jini://plain.test"))
	r.clk.Advance(0)
	r.next(discovery.Discovered, c, "")
}

func TestLocatorDiscardAndRediscovery(t *testing.T) {
	loc := mustLocator(t, "jini://10.0.0.1")
	r := newLocRig(t, locator.Config{Locators: []discovery.Locator{loc}})
	lus := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1"})
	r.clk.Advance(0)
	r.next(discovery.Discovered, lus, "")
	if !r.d.Discard(lus.ID) {
		t.Fatal("Discard reported false")
	}
	r.next(discovery.Discarded, lus, discovery.ReasonRequested)
	// Down for the first retry: not before 15 s, then the backoff resumes
	// (20 s).
	r.lan.Set(lus, func(l *discoverytest.SimLUS) { l.Down = true })
	r.clk.Advance(locator.DefaultRediscoverDelay - time.Millisecond)
	if n := r.lan.DialCount("10.0.0.1:4160"); n != 1 {
		t.Fatalf("retried before %s", locator.DefaultRediscoverDelay)
	}
	r.clk.Advance(time.Millisecond)
	if n := r.lan.DialCount("10.0.0.1:4160"); n != 2 {
		t.Fatalf("not retried at %s", locator.DefaultRediscoverDelay)
	}
	r.lan.Set(lus, func(l *discoverytest.SimLUS) { l.Down = false })
	r.clk.Advance(20*time.Second - time.Millisecond)
	r.none()
	r.clk.Advance(time.Millisecond)
	r.next(discovery.Discovered, lus, "")
	if r.d.Discard([16]byte{1}) {
		t.Fatal("Discard of an unknown lookup service reported true")
	}
}

func TestLocatorRemove(t *testing.T) {
	byIP := mustLocator(t, "jini://10.0.0.1")
	byName := mustLocator(t, "jini://LUS.test")
	r := newLocRig(t, locator.Config{Locators: []discovery.Locator{byIP, byName}})
	lus := r.lan.Add(discoverytest.SimLUS{Host: "10.0.0.1"})
	r.lan.Add(discoverytest.SimLUS{Host: "lus.test", ID: lus.ID}) // the same one, by name
	r.clk.Advance(0)
	// Once per locator that reaches it.
	for _, want := range []discovery.Locator{byIP, byName} {
		if e := r.next(discovery.Discovered, lus, ""); !e.Locator.Equal(want) {
			t.Fatalf("discovered via %v, want %v", e.Locator, want)
		}
	}
	if got := r.d.Discovered(); len(got) != 1 {
		t.Fatalf("Discovered() lists %d, want the one lookup service", len(got))
	}

	r.d.Remove(mustLocator(t, "jini://lus.test")) // case does not matter
	if e := r.next(discovery.Discarded, lus, discovery.ReasonLocatorRemoved); !e.Locator.Equal(byName) {
		t.Fatalf("discarded via %v", e.Locator)
	}
	r.d.Set(nil)
	if e := r.next(discovery.Discarded, lus, discovery.ReasonLocatorRemoved); e.Locator == nil || !e.Locator.Equal(byIP) {
		t.Fatalf("discarded via %v", e.Locator)
	}
	if len(r.d.Locators()) != 0 || len(r.d.Discovered()) != 0 {
		t.Fatalf("after Set(nil): %v, %v", r.d.Locators(), r.d.Discovered())
	}

	// A removed locator is not tried again.
	r.lan.Set(lus, func(l *discoverytest.SimLUS) { l.Down = true })
	r.d.Add(byIP)
	r.clk.Advance(0)
	n := r.lan.DialCount("10.0.0.1:4160")
	r.d.Remove(byIP)
	r.clk.Advance(time.Hour)
	if m := r.lan.DialCount("10.0.0.1:4160"); m != n {
		t.Fatalf("removed locator tried %d more times", m-n)
	}
}

func TestLocatorConfigErrors(t *testing.T) {
	for _, c := range []locator.Config{
		{Backoff: []time.Duration{}},
		{Backoff: []time.Duration{-time.Second}},
		{RediscoverDelay: -1},
		{Jitter: 1},
	} {
		if _, err := locator.New(c); err == nil {
			t.Errorf("NewLocatorDiscovery(%+v) succeeded", c)
		}
	}
}

// TestLocatorRealDial finds a lookup service on loopback by host name,
// with the default dialer (the name resolved by the system resolver on
// each try), and counts tries until it starts listening.
func TestLocatorRealDial(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing there at first
	id := discovery.ServiceID{7}
	events := make(chan discovery.Event, 10)
	failed := &failures{}
	d, err := locator.New(locator.Config{
		Locators: []discovery.Locator{{Host: "localhost", Port: port}},
		Backoff:  []time.Duration{0, 50 * time.Millisecond}, Jitter: -1,
		OnEvent: func(e discovery.Event) { events <- e },
		Logger:  slog.New(failed),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "three failed tries", func() bool { return failed.n.Load() >= 3 })
	ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", port, err)
	}
	srv := unicast.NewServer(ln, unicast.ServerConfig{Respond: func(q unicast.Request, _ net.Addr) (*unicast.Response, error) {
		return &unicast.Response{Version: q.Version, Format: discovery.PlaintextFormat, Host: "127.0.0.1", Port: port,
			Groups: []string{"a"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: id}}}, nil
	}})
	defer srv.Shutdown(context.Background())
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-events:
		if e.Kind != discovery.Discovered || e.ID != id || e.Version != discovery.ProtocolV2 || e.Locator.Host != "localhost" {
			t.Fatalf("event %s %s v%d via %v", e.Kind, e.ID, e.Version, e.Locator)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not discovered")
	}
}

// failures counts the failed tries locator discovery logs.
type failures struct{ n atomic.Int64 }

func (f *failures) Enabled(context.Context, slog.Level) bool { return true }
func (f *failures) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f *failures) WithGroup(string) slog.Handler            { return f }
func (f *failures) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "locator unreachable") {
		f.n.Add(1)
	}
	return nil
}

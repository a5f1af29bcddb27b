package joiner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lus is a lookup service on loopback as Java sees one: a registrar
// served over Jini ERI, its proxy handed out by unicast discovery.
type lus struct {
	jeri    *jeri.Server
	reg     *lookup.Registrar
	grantor *lease.Grantor
	locator discovery.Locator
}

func startLUS(t *testing.T, maxLease time.Duration) *lus {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := lease.New(st, clock.Real{}, nil)
	reg, err := lookup.New(lookup.Config{Store: st, Grantor: g,
		ItemPolicy: lease.Policy{Default: maxLease.Milliseconds(), Max: maxLease.Milliseconds()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Shutdown(context.Background()) })
	jln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	id := javalookup.Identity{Object: jeri.Uuid{1, 2, 3}, Port: jln.Addr().(*net.TCPAddr).Port}
	uln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uport := uln.Addr().(*net.TCPAddr).Port
	java, err := javalookup.New(javalookup.Config{Registrar: reg, Grantor: g, Identity: id, UnicastPort: func() int { return uport },
		MayRegister: func(jeri.Conn) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	disp := jeri.NewDispatcher()
	disp.Export(id.Object, java)
	srv := jeri.NewServer(jln, jeri.ServerConfig{Handler: disp.Handle})
	ud := unicast.NewServer(uln, unicast.ServerConfig{Respond: func(req unicast.Request, _ net.Addr) (*unicast.Response, error) {
		proxy, err := java.Proxy("127.0.0.1", nil)
		if err != nil {
			return nil, err
		}
		return &unicast.Response{Version: req.Version, Format: discovery.PlaintextFormat, Host: "127.0.0.1", Port: uport,
			Groups: []string{"lab"}, Registrar: discovery.Registrar{Proxy: proxy}}, nil
	}})
	for _, s := range []interface {
		Start(context.Context) error
		Shutdown(context.Context) error
	}{srv, ud} {
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(context.Background()) })
	}
	return &lus{jeri: srv, reg: reg, grantor: g, locator: discovery.Locator{Host: "127.0.0.1", Port: uport}}
}

// holds reports whether the lookup service holds the service, and its
// item there.
func (l *lus) holds(sid string) (lookup.Item, bool) {
	items, _, err := l.reg.Query(lookup.Template{ServiceID: sid}, 1)
	if err != nil || len(items) == 0 {
		return lookup.Item{}, false
	}
	return items[0], true
}

func newJoiner(t *testing.T) *Joiner { return newJoinerWith(t, Config{}) }

// newJoinerWith makes a join manager of cfg, its codec and dial filled in.
func newJoinerWith(t *testing.T, cfg Config) *Joiner {
	t.Helper()
	l, err := lineage.JGDMS()
	if err != nil {
		t.Fatal(err)
	}
	codec, err := reggie.NewCodec(l)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Codec, cfg.Lease, cfg.Dial = codec, time.Minute, (&net.Dialer{}).DialContext
	j, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return j
}

// The join manager's rules on a lookup service found by locator: the
// service is registered as soon as it is found, renewed past its lease
// (a second here), registered again when the lookup service loses it,
// registered anew when it changes, cancelled when it leaves the set,
// and cancelled when the join manager stops; a service naming another
// locator is not registered there.
func TestJoinRules(t *testing.T) {
	ls := startLUS(t, time.Second)
	other := discovery.Locator{Host: "127.0.0.1", Port: 1} // nothing answers
	printer := reggie.Item{ServiceID: "5a7e1c00-0000-4000-8000-00000000000a", Types: []string{"org.example.Printer"},
		Attributes: []reggie.Entry{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "lobby"}}}, Endpoint: "ipp://10.0.0.9:631/"}
	elsewhere := reggie.Item{ServiceID: "5a7e1c00-0000-4000-8000-00000000000b", Types: []string{"org.example.Door"}}
	j := newJoiner(t)
	if err := j.Set([]Service{{Item: printer, Locators: []discovery.Locator{ls.locator}}, {Item: elsewhere, Locators: []discovery.Locator{other}}}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the printer registered", func() bool { _, ok := ls.holds(printer.ServiceID); return ok })
	if it, _ := ls.holds(printer.ServiceID); it.Endpoint != printer.Endpoint || len(it.Types) == 0 || it.Types[0] != "org.example.Printer" {
		t.Fatalf("registered as %+v", it)
	}
	rec, _ := ls.reg.Lease(printer.ServiceID)
	// Renewed past three of its leases (a second each), on the same lease.
	testenv.Until(t, "the printer's lease renewed past three terms", func() bool {
		now, err := ls.reg.Lease(printer.ServiceID)
		if err != nil || now.ID != rec.ID {
			t.Fatalf("the printer's lease %+v (%v), was %s: lapsed or registered again instead of renewed", now, err, rec.ID)
		}
		return now.Expiration > rec.Expiration+3000
	})
	if _, ok := ls.holds(elsewhere.ServiceID); ok {
		t.Fatal("a service of another locator was registered here")
	}
	// Lost by the lookup service (its lease cancelled there): registered
	// again at the next renewal.
	if err := ls.grantor.Cancel(rec.ID); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the printer registered again", func() bool { _, ok := ls.holds(printer.ServiceID); return ok })
	// Changed: the new item replaces the old.
	changed := printer
	changed.Endpoint = "ipp://10.0.0.10:631/"
	if err := j.Set([]Service{{Item: changed, Locators: []discovery.Locator{ls.locator}}}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the changed printer", func() bool { it, _ := ls.holds(printer.ServiceID); return it.Endpoint == changed.Endpoint })
	// Out of the set: cancelled.
	if err := j.Set(nil); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the printer cancelled", func() bool { _, ok := ls.holds(printer.ServiceID); return !ok })
	// Back, then the join manager stops: cancelled on the way out.
	if err := j.Set([]Service{{Item: printer, Locators: []discovery.Locator{ls.locator}}}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the printer back", func() bool { _, ok := ls.holds(printer.ServiceID); return ok })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := ls.holds(printer.ServiceID); ok {
		t.Fatal("still registered after the join manager stopped")
	}
}

// A failed call discards the lookup service only when it got no answer:
// one that refuses (a jinid that does not let this host register Java
// services) or an item jinid cannot send is tried again, with a growing
// wait, on the same lookup service.
func TestAnswered(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&reggie.RemoteError{Class: "java.rmi.AccessException", Message: "may not register"}, true},
		{fmt.Errorf("%w (%w)", reggie.ErrUnknownLease, &reggie.RemoteError{}), true},
		{errors.New("an item registered in a Java lookup service needs a type"), true},
		{fmt.Errorf("%w at 10.0.0.7:4170: connection refused", reggie.ErrUnreachable), false},
		{reggie.ErrNoSuchObject, false},
	} {
		if got := answered(c.err); got != c.want {
			t.Errorf("answered(%v) = %v", c.err, got)
		}
	}
}

// A lease granted under the floor (0 ms: a broken or hostile lookup
// service) is renewed no sooner than minGrant, backing off each time
// (so at most a handful of calls, where it was one per turn of the loop:
// 241 a second); a grant of at least the floor is renewed at its half,
// the backoff reset.
func TestShortGrantsBackOff(t *testing.T) {
	j := &Joiner{}
	log := slog.New(slog.DiscardHandler)
	r := &reg{backoff: minBackoff}
	var total time.Duration
	for range 6 {
		before := time.Now()
		j.schedule(log, r, 0)
		wait := r.due.Sub(before)
		if wait < minGrant {
			t.Fatalf("a 0 ms grant renewed after %v, under the floor %v", wait, minGrant)
		}
		total += wait
	}
	// Backing off: 1 s, 2 s, 4 s... a minute at most.
	if total < 30*time.Second {
		t.Errorf("six 0 ms grants in a row renewed over %v: no backoff", total)
	}
	j.schedule(log, r, 10*time.Second)
	if wait := time.Until(r.due); wait < 4*time.Second || wait > 5*time.Second || r.backoff != minBackoff {
		t.Errorf("a 10 s grant renewed after %v (backoff %v), want at its half, the backoff reset", wait, r.backoff)
	}
}

// A service is joined to a lookup service however it was found, in
// either order: here one lookup service named by two locators
// (127.0.0.1 and localhost), a service naming each. The second way the
// lookup service is found makes the service naming it wanted there
// (before, only the first way was kept: the second service was never
// registered, as a service naming a locator was never registered with a
// lookup service its group had found first).
func TestJoinEveryWayFound(t *testing.T) {
	for _, nameFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("localhost first %v", nameFirst), func(t *testing.T) {
			ls := startLUS(t, time.Minute)
			byName := discovery.Locator{Host: "localhost", Port: ls.locator.Port}
			byIP := Service{Item: reggie.Item{ServiceID: "5a7e1c00-0000-4000-8000-0000000000a1", Types: []string{"org.example.Printer"}},
				Locators: []discovery.Locator{ls.locator}}
			named := Service{Item: reggie.Item{ServiceID: "5a7e1c00-0000-4000-8000-0000000000a2", Types: []string{"org.example.Door"}},
				Locators: []discovery.Locator{byName}}
			first, second := byIP, named
			if nameFirst {
				first, second = named, byIP
			}
			j := newJoiner(t)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				j.Shutdown(ctx)
			})
			if err := j.Set([]Service{first}); err != nil {
				t.Fatal(err)
			}
			testenv.Until(t, "the first service registered", func() bool { _, ok := ls.holds(first.Item.ServiceID); return ok })
			if err := j.Set([]Service{first, second}); err != nil {
				t.Fatal(err)
			}
			testenv.Until(t, "the second service registered, the lookup service found its way too", func() bool {
				_, ok := ls.holds(second.Item.ServiceID)
				return ok
			})
		})
	}
}

// A lookup service whose registrar does not answer while discovery keeps
// finding it (its discovery port answers: found again by locator each
// RediscoverDelay, 15 s by default) was called at once each time it was
// found and the failure warned about each time, for as long as it was
// out. The first failure is warned about and the rest are not, and the
// calls back off across the finds.
func TestSilentLookupServiceBacksOff(t *testing.T) {
	ls := startLUS(t, time.Minute)
	if err := ls.jeri.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	j := newJoinerWith(t, Config{RediscoverDelay: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		j.Shutdown(ctx)
	})
	printer := Service{Item: reggie.Item{ServiceID: "5a7e1c00-0000-4000-8000-0000000000c1", Types: []string{"org.example.Printer"}},
		Locators: []discovery.Locator{ls.locator}}
	if err := j.Set([]Service{printer}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "three calls to the silent lookup service", func() bool { return j.Calls() >= 3 })
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings for one lookup service out, want 1:\n%s", n, logs.String())
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.silent) != 1 {
		t.Fatalf("silent lookup services: %v", j.silent)
	}
	for _, s := range j.silent {
		if s.backoff < 4*minBackoff {
			t.Errorf("after three calls without an answer the wait is %v: no backoff across finds", s.backoff)
		}
	}
}

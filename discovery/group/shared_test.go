package group

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// sharedEngines are engines of several lookup discovery services (a
// cluster node's shards) on one SharedContacts, fed one fan-out.
type sharedEngines struct {
	lan     *discoverytest.LAN
	net     *SharedContacts
	fan     *Fanout
	engines []*Discovery

	mu     sync.Mutex
	events []map[discovery.ServiceID][]discovery.EventKind // by engine
}

func newSharedEngines(t *testing.T, interests ...[]string) *sharedEngines {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	s := &sharedEngines{lan: discoverytest.NewLAN(), fan: NewFanout()}
	s.net = &SharedContacts{Network: s.lan}
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	for i, groups := range interests {
		s.events = append(s.events, map[discovery.ServiceID][]discovery.EventKind{})
		d, err := New(Config{Groups: groups, Network: s.net, Clock: clk, OnEvent: func(e discovery.Event) {
			if e.Kind == discovery.Updated {
				return
			}
			s.mu.Lock()
			s.events[i][e.ID] = append(s.events[i][e.ID], e.Kind)
			s.mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Shutdown(context.Background()) })
		s.fan.Add(d)
		s.engines = append(s.engines, d)
	}
	return s
}

// kinds are the events engine i told of l.
func (s *sharedEngines) kinds(i int, l *discoverytest.SimLUS) []discovery.EventKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]discovery.EventKind(nil), s.events[i][l.ID]...)
}

func (s *sharedEngines) announce(l *discoverytest.SimLUS) {
	s.fan.HandleAnnouncement(s.lan.Announcement(l, discovery.ProtocolV2), "sim0")
}

// Engines sharing their contacts: a lookup service new to all of them
// is contacted once, and each applies its own rules to the answer: the
// engines interested in one of its groups discover it, the others do
// not; one engine discarding it leaves it discovered by the others, and
// rediscovers it on its next announcement; a change of its groups is
// each engine's to judge (discarded by those no longer interested,
// changed for the others).
func TestSharedContactsOnePerLookupService(t *testing.T) {
	s := newSharedEngines(t, []string{"a"}, []string{"b"}, []string{"a", "b"}, []string{"c"}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"c"})
	lus := s.lan.Add(discoverytest.SimLUS{Host: "10.0.0.5", Groups: []string{"a", "b"}})
	addr := net.JoinHostPort(lus.Host, strconv.Itoa(lus.Port))
	s.announce(lus)
	interested := []int{0, 1, 2, 4, 5, 6}
	testenv.Until(t, "every engine interested in a or b discovers it", func() bool {
		for _, i := range interested {
			if len(s.kinds(i, lus)) == 0 {
				return false
			}
		}
		return true
	})
	if n := s.lan.DialCount(addr); n != 1 {
		t.Errorf("a lookup service heard by %d interested engines contacted %d times, want once", len(interested), n)
	}
	for _, i := range []int{3, 7} {
		if k := s.kinds(i, lus); len(k) != 0 {
			t.Errorf("engine %d (groups c) told %v of a lookup service of groups a and b", i, k)
		}
	}
	// One engine discards it: the others keep it.
	if !s.engines[0].Discard(lus.ID) {
		t.Fatal("engine 0 had not discovered it")
	}
	testenv.Until(t, "engine 0 tells of the discard", func() bool { return len(s.kinds(0, lus)) == 2 })
	for _, i := range interested[1:] {
		if got := s.engines[i].Discovered(); len(got) != 1 {
			t.Errorf("engine %d lost the lookup service another engine discarded: %v", i, got)
		}
	}
	// Its next announcement: engine 0 discovers it again (a discarded
	// lookup service is rediscovered), with the shared answer.
	s.announce(lus)
	testenv.Until(t, "engine 0 rediscovers it", func() bool { return len(s.kinds(0, lus)) == 3 })
	if got := s.kinds(0, lus); got[0] != discovery.Discovered || got[1] != discovery.Discarded || got[2] != discovery.Discovered {
		t.Errorf("engine 0 told %v, want discovered, discarded, discovered", got)
	}
	// Its groups change to b alone: engines of a alone discard it; those
	// of b keep it. No contact: the announcement says the groups.
	s.lan.Set(lus, func(l *discoverytest.SimLUS) { l.Groups = []string{"b"} })
	s.announce(lus)
	for _, i := range []int{4, 5} {
		testenv.Until(t, "an engine of group a alone discards it", func() bool {
			k := s.kinds(i, lus)
			return len(k) == 2 && k[1] == discovery.Discarded
		})
	}
	for _, i := range []int{1, 2, 6} {
		testenv.Until(t, "an engine of group b tells the change", func() bool {
			k := s.kinds(i, lus)
			return len(k) == 2 && k[1] == discovery.Changed
		})
	}
	if n := s.net.Contacts(); n != 1 {
		t.Errorf("%d contacts made in all, want 1", n)
	}
}

// blockedNet is a Network whose contacts wait until released, counting
// them.
type blockedNet struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (n *blockedNet) Request([]string, []discovery.ServiceID) error { return nil }
func (n *blockedNet) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	n.mu.Lock()
	n.calls++
	n.mu.Unlock()
	select {
	case <-n.release:
		return &unicast.Response{Host: host, Port: port, Version: version, Groups: []string{"a"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Callers that ask while a contact runs wait for its answer; one whose
// context ends stops waiting without ending it for the others; a failed
// contact is not handed to later callers, who try again.
func TestSharedContactsInFlight(t *testing.T) {
	bn := &blockedNet{release: make(chan struct{})}
	n := &SharedContacts{Network: bn, Linger: time.Minute}
	var wg sync.WaitGroup
	answers := make(chan *unicast.Response, 4)
	first, cancelFirst := context.WithCancel(context.Background())
	wg.Go(func() {
		if r, err := n.Unicast(first, "10.0.0.9", 4160, 2); err == nil {
			answers <- r
		}
	})
	testenv.Until(t, "the first contact under way", func() bool { bn.mu.Lock(); defer bn.mu.Unlock(); return bn.calls == 1 })
	for range 3 {
		wg.Go(func() {
			if r, err := n.Unicast(context.Background(), "10.0.0.9", 4160, 2); err == nil {
				answers <- r
			}
		})
	}
	cancelFirst() // the engine that began it stops; the contact goes on
	close(bn.release)
	wg.Wait()
	close(answers)
	got := 0
	for r := range answers {
		if r.Host != "10.0.0.9" {
			t.Errorf("answer %+v", r)
		}
		got++
	}
	if got < 3 || bn.calls != 1 {
		t.Errorf("%d answers from %d contacts; want the 3 waiting callers answered by 1", got, bn.calls)
	}
	// Within Linger, the answer is shared with a later caller too.
	if _, err := n.Unicast(context.Background(), "10.0.0.9", 4160, 2); err != nil || bn.calls != 1 {
		t.Errorf("a caller within Linger: %v, contacts %d", err, bn.calls)
	}
	// A failure is not kept.
	fail := &SharedContacts{Network: UnicastNetwork{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if _, err := fail.Unicast(ctx, "192.0.2.1", 4160, 2); err == nil {
		t.Fatal("a contact with a context ended answered")
	}
	fail.mu.Lock()
	kept := len(fail.contacts)
	fail.mu.Unlock()
	if kept != 0 {
		t.Errorf("a failed contact kept for later callers")
	}
}

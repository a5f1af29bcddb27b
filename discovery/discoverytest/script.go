package discoverytest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/jinid/jinid/discovery"
)

// Script is a random but consistent stream of the events a pair of
// discovery engines (group and locator discovery) report about a small
// world of lookup services, some of whose proxies jinid cannot read (a
// stand-in ServiceID until an announcement tells the real one): for
// property tests of what consumes them, the discovery manager and the
// lookup discovery service. Each engine's stream is one the engine could
// send: it discovers what it does not hold, and changes, updates and
// discards what it holds, under the ID it holds it by.
type Script struct {
	rnd    *rand.Rand
	World  []*ScriptLUS
	Groups []string // every group of the world
	queue  []Step   // the second half of an identification
}

// ScriptLUS is one lookup service of a Script's world, and what each
// engine holds of it.
type ScriptLUS struct {
	ID discovery.ServiceID
	// StandIn is set when its proxy cannot be read.
	StandIn  discovery.ServiceID
	Host     string
	Port     int
	Groups   []string
	Locators []discovery.Locator // two names for it

	group   bool                // group discovery holds it
	groupID discovery.ServiceID // by this ID
	locs    []bool              // locator discovery holds it through Locators[i]
}

// Step is one event of one engine.
type Step struct {
	By    string // "group" or "locator"
	Event discovery.Event
}

// NewScript returns a script over n lookup services, half of them with
// proxies jinid cannot read, drawn from seed.
func NewScript(seed uint64, n int) *Script {
	s := &Script{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Groups: []string{"", "a", "b", "c"}}
	for i := range n {
		l := &ScriptLUS{ID: discovery.ServiceID{0xaa, byte(i + 1)}, Host: fmt.Sprintf("10.0.0.%d", i+1), Port: discovery.Port,
			locs: make([]bool, 2)}
		if i%2 == 1 {
			l.StandIn = discovery.ServiceID{0x5a, byte(i + 1)}
		}
		l.Locators = []discovery.Locator{{Host: l.Host, Port: discovery.Port}, {Host: fmt.Sprintf("lus%d.example", i+1), Port: discovery.Port}}
		l.Groups = s.groups()
		s.World = append(s.World, l)
	}
	return s
}

// groups draws a non-empty set of groups.
func (s *Script) groups() []string {
	var out []string
	for _, g := range s.Groups {
		if s.rnd.IntN(2) == 0 {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		out = []string{s.Groups[s.rnd.IntN(len(s.Groups))]}
	}
	return out
}

// describe is l as an engine describes it, under id.
func (l *ScriptLUS) describe(id discovery.ServiceID) discovery.LookupService {
	return discovery.LookupService{ID: id, StandIn: l.StandIn, Host: l.Host, Port: l.Port, Groups: slices.Clone(l.Groups),
		Version: discovery.ProtocolV2, Registrar: discovery.Registrar{Marshalled: []byte("proxy of " + l.ID.String())}}
}

// Next returns the next event of one engine.
func (s *Script) Next() Step {
	if len(s.queue) > 0 {
		st := s.queue[0]
		s.queue = s.queue[1:]
		return st
	}
	l := s.World[s.rnd.IntN(len(s.World))]
	if s.rnd.IntN(3) == 0 {
		return s.locatorStep(l)
	}
	return s.groupStep(l)
}

func (s *Script) groupStep(l *ScriptLUS) Step {
	ev := func(kind discovery.EventKind, reason string) Step {
		return Step{By: "group", Event: discovery.Event{Kind: kind, LookupService: l.describe(l.groupID), Reason: reason}}
	}
	if !l.group {
		// Found by an answer to a request (a stand-in, if its proxy
		// cannot be read) or by its announcement (its real ID).
		l.group, l.groupID = true, l.ID
		if !l.StandIn.IsZero() && s.rnd.IntN(2) == 0 {
			l.groupID = l.StandIn
		}
		if s.rnd.IntN(3) == 0 {
			l.Port = 0 // a version 1 answer
		}
		return ev(discovery.Discovered, "")
	}
	switch r := s.rnd.IntN(10); {
	case l.groupID == l.StandIn && r < 4:
		// Its announcement tells the real ID.
		first := ev(discovery.Discarded, discovery.ReasonIdentified)
		l.groupID = l.ID
		s.queue = append(s.queue, ev(discovery.Discovered, ""))
		return first
	case r < 6:
		l.Groups = s.groups()
		return ev(discovery.Changed, "")
	case r < 7:
		l.Port, l.Host = discovery.Port, fmt.Sprintf("10.1.0.%d", s.rnd.IntN(250)+1)
		return ev(discovery.Updated, "")
	case r < 8:
		l.Groups = s.groups()
		l.group = false
		return ev(discovery.Discarded, discovery.ReasonNoInterest)
	default:
		l.group = false
		return ev(discovery.Discarded, discovery.ReasonCommunication)
	}
}

func (s *Script) locatorStep(l *ScriptLUS) Step {
	i := s.rnd.IntN(len(l.Locators))
	id := l.ID
	if !l.StandIn.IsZero() {
		id = l.StandIn // locator discovery never hears announcements
	}
	ev := discovery.Event{LookupService: l.describe(id), Locator: &l.Locators[i]}
	switch {
	case !l.locs[i]:
		l.locs[i] = true
		ev.Kind = discovery.Discovered
	case s.rnd.IntN(2) == 0:
		// Asked to look again: found again at once.
		ev.Kind, ev.Reason = discovery.Discarded, discovery.ReasonRequested
		again := ev
		again.Kind, again.Reason = discovery.Discovered, ""
		s.queue = append(s.queue, Step{By: "locator", Event: again})
	default:
		l.locs[i] = false
		ev.Kind, ev.Reason = discovery.Discarded, discovery.ReasonLocatorRemoved
	}
	return Step{By: "locator", Event: ev}
}

// Follower checks what a consumer of discovery tells one client (an LDS
// registration's events, the lines of discover --watch): every
// discovered event names a lookup service the client does not hold, and
// every discarded one a lookup service it holds. Live is what it holds.
type Follower struct {
	Live map[discovery.ServiceID]bool
}

// NewFollower returns a follower holding nothing.
func NewFollower() *Follower { return &Follower{Live: map[discovery.ServiceID]bool{}} }

// Discovered follows a discovered event naming ids.
func (f *Follower) Discovered(ids ...discovery.ServiceID) error {
	for _, id := range ids {
		if f.Live[id] {
			return fmt.Errorf("discovered %s, which it holds already", id)
		}
		f.Live[id] = true
	}
	return nil
}

// Discarded follows a discarded event naming ids.
func (f *Follower) Discarded(ids ...discovery.ServiceID) error {
	for _, id := range ids {
		if !f.Live[id] {
			return fmt.Errorf("discarded %s, which no discovered event named since it was last discarded", id)
		}
		delete(f.Live, id)
	}
	return nil
}

// Holds reports whether ids are exactly what the client holds.
func (f *Follower) Holds(ids []discovery.ServiceID) error {
	if len(ids) != len(f.Live) {
		return fmt.Errorf("%d lookup services listed, %d held by the events", len(ids), len(f.Live))
	}
	for _, id := range ids {
		if !f.Live[id] {
			return fmt.Errorf("%s listed, not held by the events", id)
		}
	}
	return nil
}

// Package manager combines group discovery and locator discovery into one
// set of discovered lookup services, the equivalent of Java's
// LookupDiscoveryManager. It remembers for each lookup service whether it
// is of interest by group, by locator or both, and applies the rule of
// the lookup discovery service specification (LD.3.1): a lookup service
// wanted by locator is never passively discarded (not for silence, not
// for its groups), and removing a locator discards only what no group
// still wants.
package manager

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/ordered"
)

// Config configures a Manager.
type Config struct {
	// Groups of interest: nil means all groups, empty none.
	Groups   []string
	Locators []discovery.Locator
	// OnEvent receives every event, in order, from one goroutine.
	OnEvent func(Event)
	// OnFound, if set, is told (in order with the events) of a lookup
	// service already discovered that is found another way: by group
	// once found by locator, by locator once found by group, or by
	// another locator. No event of the specification says so (they are
	// of the set and of groups), but a client that wants lookup services
	// by how they were found (the join manager) must hear it.
	OnFound func(Discovered)
	// Group configures group discovery; its Groups, OnEvent, Clock and
	// Logger are the manager's. Group.Network is required.
	Group group.Config
	// Locator configures locator discovery; its Locators, OnEvent, Clock
	// and Logger are the manager's.
	Locator locator.Config
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Event is a discovery event with how the lookup service is wanted after
// it.
type Event struct {
	discovery.Event
	ByGroup   bool
	ByLocator bool
}

// Discovered is a lookup service in the managed set.
type Discovered struct {
	discovery.LookupService
	ByGroup   bool
	ByLocator bool
	Locator   *discovery.Locator
	// Locators are all the locators that found it.
	Locators []discovery.Locator
}

// Manager is one combined discovery.
type Manager struct {
	g       *group.Discovery
	l       *locator.Discovery
	log     *slog.Logger
	clock   clock.Clock
	events  *ordered.Queue[delivery]
	onFound func(Discovered)

	mu      sync.Mutex
	entries []*entry
	ids     map[discovery.ServiceID]*entry // by every ID an entry is known by
	closed  bool
}

type entry struct {
	Discovered
	// The IDs each engine knows it by: a lookup service whose proxy jinid
	// cannot read is known to group discovery by its announced ServiceID
	// and to locator discovery by a stand-in (see LookupService.StandIn).
	gid, lid discovery.ServiceID
	keys     []discovery.ServiceID // its keys in Manager.ids
}

// delivery is what the manager hands on, in order: an event, or a
// lookup service found another way (OnFound).
type delivery struct {
	ev    Event
	found *Discovered
}

// New returns a manager of both engines; Start starts them.
func New(cfg Config) (*Manager, error) {
	if cfg.Group.Network == nil {
		return nil, errors.New("manager: Config.Group.Network is required")
	}
	if cfg.OnEvent == nil {
		cfg.OnEvent = func(Event) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{log: cfg.Logger, clock: cfg.Clock, onFound: cfg.OnFound, ids: map[discovery.ServiceID]*entry{}}
	m.events = ordered.New(func(d delivery) {
		if d.found != nil {
			cfg.OnFound(*d.found)
			return
		}
		cfg.OnEvent(d.ev)
	})
	gc := cfg.Group
	gc.Groups, gc.OnEvent, gc.Clock, gc.Logger = cfg.Groups, m.fromGroup, cfg.Clock, cfg.Logger.With("engine", "group")
	g, err := group.New(gc)
	if err != nil {
		return nil, err
	}
	lc := cfg.Locator
	lc.Locators, lc.OnEvent, lc.Clock, lc.Logger = cfg.Locators, m.fromLocator, cfg.Clock, cfg.Logger.With("engine", "locator")
	l, err := locator.New(lc)
	if err != nil {
		g.Shutdown(context.Background())
		return nil, err
	}
	m.g, m.l = g, l
	return m, nil
}

// Start begins group discovery's requests and locator discovery's tries.
func (m *Manager) Start(ctx context.Context) error {
	return errors.Join(m.g.Start(ctx), m.l.Start(ctx))
}

// Shutdown stops both engines and waits for the last event to be delivered.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.g.Shutdown(ctx)
	m.l.Shutdown(ctx)
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.events.Close()
	return nil
}

var _ lifecycle.Service = (*Manager)(nil)

// HandleAnnouncement hands an announcement to group discovery.
func (m *Manager) HandleAnnouncement(a discovery.Announcement, iface string) {
	m.g.HandleAnnouncement(a, iface)
}

// HandleLinks tells group discovery which interfaces are served.
func (m *Manager) HandleLinks(served []string) { m.g.HandleLinks(served) }

// HandleResponse hands an answer to a multicast request to group
// discovery.
func (m *Manager) HandleResponse(resp *unicast.Response, iface string) {
	m.g.HandleResponse(resp, iface)
}

// Groups returns the groups of interest; all is true for all groups.
func (m *Manager) Groups() ([]string, bool) { return m.g.Groups() }

// SetGroups replaces the groups of interest (nil: all groups).
func (m *Manager) SetGroups(groups []string) { m.g.SetGroups(groups) }

// AddGroups adds groups of interest.
func (m *Manager) AddGroups(groups ...string) error { return m.g.AddGroups(groups...) }

// RemoveGroups removes groups of interest.
func (m *Manager) RemoveGroups(groups ...string) error { return m.g.RemoveGroups(groups...) }

// Locators returns the locators of interest.
func (m *Manager) Locators() []discovery.Locator { return m.l.Locators() }

// SetLocators replaces the locators of interest.
func (m *Manager) SetLocators(locs []discovery.Locator) { m.l.Set(locs) }

// AddLocators adds locators of interest.
func (m *Manager) AddLocators(locs ...discovery.Locator) { m.l.Add(locs...) }

// RemoveLocators removes locators of interest.
func (m *Manager) RemoveLocators(locs ...discovery.Locator) { m.l.Remove(locs...) }

// Discovered returns the managed set.
func (m *Manager) Discovered() []Discovered {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Discovered, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.snapshot()
	}
	return out
}

// snapshot is e as callers see it, sharing nothing.
func (e *entry) snapshot() Discovered {
	d := e.Discovered
	d.LookupService = e.LookupService.Clone()
	d.Locators = slices.Clone(e.Locators)
	if e.Locator != nil {
		l := *e.Locator
		d.Locator = &l
	}
	return d
}

// foundAgain tells OnFound of e, found another way.
func (m *Manager) foundAgain(e *entry) {
	if m.onFound == nil {
		return
	}
	d := e.snapshot()
	m.events.Push(delivery{found: &d})
}

// Discard removes a lookup service from the managed set and makes it
// eligible for rediscovery by either engine; one discarded event
// reports it. It reports whether the lookup service was discovered.
func (m *Manager) Discard(id discovery.ServiceID) bool {
	m.mu.Lock()
	e := m.ids[id]
	if e == nil || m.closed {
		m.mu.Unlock()
		return false
	}
	m.remove(e)
	m.reindex(e)
	e.ByGroup, e.ByLocator = false, false
	m.emit(discovery.Discarded, e, discovery.ReasonRequested)
	m.mu.Unlock()
	// The engines report their own discards, which fromGroup and
	// fromLocator drop: this one is already told.
	if !e.gid.IsZero() {
		m.g.Discard(e.gid)
	}
	if !e.lid.IsZero() {
		m.l.Discard(e.lid)
	}
	return true
}

func (m *Manager) fromGroup(ev discovery.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.find(ev.LookupService)
	defer func() { m.reindex(e) }()
	switch ev.Kind {
	case discovery.Discovered:
		if e == nil {
			e = &entry{Discovered: Discovered{LookupService: ev.LookupService}}
			m.entries = append(m.entries, e)
			e.gid, e.ByGroup = ev.ID, true
			m.emit(discovery.Discovered, e, "")
			return
		}
		again := !e.ByGroup
		e.gid, e.ByGroup = ev.ID, true
		m.update(e, ev.LookupService)
		if again {
			m.foundAgain(e)
		}
	case discovery.Changed:
		if e != nil {
			e.gid = ev.ID
			m.update(e, ev.LookupService)
		}
	case discovery.Updated:
		// Where it is reached: nothing to tell.
		if e != nil && e.ByGroup {
			e.Host, e.Port, e.Interface, e.Version, e.Registrar = ev.Host, ev.Port, ev.Interface, ev.Version, ev.Registrar
		}
	case discovery.Discarded:
		if e == nil || ev.Reason == discovery.ReasonRequested {
			return
		}
		e.ByGroup, e.gid = false, discovery.ServiceID{}
		if e.ByLocator {
			// Wanted by locator: never passively discarded (LD.3.1). (A
			// stand-in group discovery identified stays until the
			// discovered event under the real ID, which follows.)
			m.update(e, ev.LookupService)
			return
		}
		e.Groups = ev.Groups
		m.remove(e)
		m.emit(discovery.Discarded, e, ev.Reason)
	}
}

func (m *Manager) fromLocator(ev discovery.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.find(ev.LookupService)
	defer func() { m.reindex(e) }()
	switch ev.Kind {
	case discovery.Discovered:
		if e == nil {
			e = &entry{Discovered: Discovered{LookupService: ev.LookupService}}
			m.entries = append(m.entries, e)
			e.lid, e.ByLocator, e.Locator, e.Locators = ev.ID, true, ev.Locator, []discovery.Locator{*ev.Locator}
			m.emit(discovery.Discovered, e, "")
			return
		}
		e.lid, e.ByLocator, e.Locator = ev.ID, true, ev.Locator
		again := !slices.ContainsFunc(e.Locators, ev.Locator.Equal)
		if again {
			e.Locators = append(e.Locators, *ev.Locator)
		}
		m.update(e, ev.LookupService)
		if again {
			m.foundAgain(e)
		}
	case discovery.Discarded:
		if e == nil || ev.Reason == discovery.ReasonRequested {
			return
		}
		e.Locators = slices.DeleteFunc(e.Locators, ev.Locator.Equal)
		if len(e.Locators) > 0 {
			l := e.Locators[0]
			e.Locator = &l
			return // another locator still wants it
		}
		e.ByLocator, e.lid, e.Locator = false, discovery.ServiceID{}, nil
		if e.ByGroup {
			return // a group still wants it
		}
		m.remove(e)
		m.emit(discovery.Discarded, e, ev.Reason)
	}
}

// update takes what an engine says of a lookup service now: its real
// ServiceID in place of a stand-in, told as a discard of the stand-in
// (ReasonIdentified) then a discovery under the real ID, so that whoever
// follows the events never hears of an ID they were not told of; and its
// groups (a changed event if they differ).
func (m *Manager) update(e *entry, ls discovery.LookupService) {
	if e.Port == 0 && ls.Port != 0 { // known from a version 1 answer, which lacks it
		e.Host, e.Port = ls.Host, ls.Port
	}
	if e.IDIsStandIn() && !ls.IDIsStandIn() {
		m.emit(discovery.Discarded, e, discovery.ReasonIdentified)
		e.ID, e.Groups = ls.ID, slices.Clone(ls.Groups)
		m.emit(discovery.Discovered, e, "")
		return
	}
	if slices.Equal(e.Groups, ls.Groups) {
		return
	}
	e.Groups = slices.Clone(ls.Groups)
	m.emit(discovery.Changed, e, "")
}

// find looks a lookup service up by any ID it is known by, or by its
// stand-in.
func (m *Manager) find(ls discovery.LookupService) *entry {
	if e := m.ids[ls.ID]; e != nil {
		return e
	}
	if ls.StandIn.IsZero() {
		return nil
	}
	return m.ids[ls.StandIn]
}

// reindex files e under the IDs it is known by now (none once removed).
func (m *Manager) reindex(e *entry) {
	if e == nil {
		return
	}
	for _, k := range e.keys {
		delete(m.ids, k)
	}
	e.keys = e.keys[:0]
	if !slices.Contains(m.entries, e) {
		return
	}
	for _, k := range []discovery.ServiceID{e.ID, e.gid, e.lid, e.StandIn} {
		if !k.IsZero() && !slices.Contains(e.keys, k) {
			e.keys = append(e.keys, k)
			m.ids[k] = e
		}
	}
}

func (m *Manager) remove(e *entry) {
	m.entries = slices.DeleteFunc(m.entries, func(o *entry) bool { return o == e })
}

func (m *Manager) emit(kind discovery.EventKind, e *entry, reason string) {
	ev := Event{Event: discovery.Event{Kind: kind, LookupService: e.LookupService.Clone(), Reason: reason, Locator: e.Locator},
		ByGroup: e.ByGroup, ByLocator: e.ByLocator}
	ev.At = m.clock.Now()
	m.events.Push(delivery{ev: ev})
}

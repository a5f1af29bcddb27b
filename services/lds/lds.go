// Package lds is the lookup discovery service (the LD specification,
// shared/specs 001): clients register groups and locators of interest and
// a listener, and jinid discovers lookup services on their behalf and
// sends each registration RemoteDiscoveryEvents.
//
// The service sits on one group discovery engine and one locator
// discovery engine shared by every registration (their interest is the
// union of the registrations'), not on the discovery manager: the
// manager merges the two views into one, while the LD rules need both
// per registration (a lookup service kept by one registration's locator
// is still passively discarded for another that wanted it by group).
//
// For each registration R and lookup service L, R wants L when
//
//	group discovery holds L and R's groups (or ALL_GROUPS) meet L's, or
//	locator discovery found L through one of R's locators, unless group
//	discovery lost L (a passive communication discard) and R's groups
//	meet L's: that discard reaches every registration that wants L
//	through group discovery, whatever its locators (LD.3.1); only those
//	wanting L by locator alone keep it, until an engine finds L again.
//
// Every change (an engine event, a mutator, a registration, a lease
// ending) recomputes that for the registrations it concerns, found
// through indexes by group and locator rather than a scan of all. A
// wanted lookup service not in R's managed set is added with a
// discovered event; one in it no longer wanted is removed with a
// discarded event. Discard makes an exception: the lookup service is
// "pending" until an engine finds it again, and then only the
// registrations that discarded it (and those it newly concerns) hear.
//
// What a registration is told is consistent, whatever the engines
// report and in whatever order: every discarded event names ServiceIDs
// an earlier discovered event to it named and no discarded event has
// named since; no discovered event names one it holds; and getRegistrars
// (Registrars) names exactly those discovered and not discarded since.
// A Java lookup service is named by the ServiceID its registrar proxy
// carries from its first event. One whose proxy is of a class jinid
// cannot read is named by a stand-in until group discovery identifies
// it by an announcement; the registrations holding it are then told it
// is discarded under the stand-in, and discovered under the real
// ServiceID (identified). TestEventsAreConsistent checks this on random
// streams of engine events.
//
// State lives in the store; every change is on disk before its events
// are sent, sequence numbers included, so a crash can leave a gap in a
// registration's sequence numbers but never a repeated one. Memory is
// changed under mu inside the store's write transaction (the store's
// lock first, then mu, as everywhere in jinid); a failed transaction
// reloads memory from the store.
package lds

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// LeaseKind is the grantor's kind for registrations.
const LeaseKind = "lds.registration"

const (
	regBucket       = "lds.registrations"
	registrarBucket = "lds.registrars"
	metaBucket      = "lds.meta"
)

// EventType is the type of the events the service sends.
const EventType = "RemoteDiscoveryEvent"

// DefaultPolicy: registrations are leased for 30 minutes unless asked
// otherwise, an hour at most.
var DefaultPolicy = lease.Policy{Default: 30 * 60_000, Max: 60 * 60_000}

// Sender delivers events; *event.Dispatcher is one.
type Sender interface {
	Send(event.Delivery)
}

// Config gives the service its dependencies.
type Config struct {
	Store   *store.Store
	Grantor *lease.Grantor
	// Outbound is where requests made on clients' behalf may go: each URL
	// handed in is checked against it. Nil means its fixed rules alone.
	Outbound   *outbound.Policy
	Dispatcher Sender
	Policy     lease.Policy
	// Multicast, if set, is the daemon's multicast network: group
	// discovery sends its requests through it, and the service's engine
	// takes what it hears. Nil means discovery by unicast only.
	Multicast *group.Multicast
	// Namespace is where lookup services are dialed from without
	// multicast, and where locators are.
	Namespace namespace.Namespace
	// Group configures the group discovery engine: Network is Multicast,
	// else unicast from Namespace, unless set (a test's simulated LAN).
	// Groups, OnEvent, Clock and Logger are the service's.
	Group group.Config
	// Locator configures the locator discovery engine: Dial is unicast
	// from Namespace unless set. Locators, OnEvent, Clock and Logger are
	// the service's.
	Locator locator.Config
	Clock   clock.Clock
	Logger  *slog.Logger
	// MaxPerRegistration bounds the groups, and the locators, of one
	// registration; 0 means DefaultMaxPerRegistration.
	MaxPerRegistration int
	// OnEvent, if set, hears every event of the discovery engines, with
	// the engine's name ("group", "locator"), before the service applies
	// it: for metrics and the status page. It must not block.
	OnEvent func(ev discovery.Event, by string)
	// LinkOf, without Multicast, names the served interface whose link
	// an address is on, for a group discovery network (Group.Network)
	// shared with other engines: its owner hands the service's engine
	// what it hears (Sink).
	LinkOf func(netip.Addr) string
	// NewID makes the registrations' IDs; nil: ids.New.
	NewID func() string
	// EventIDBase is added to the event IDs the service gives (1, 2,
	// ...), so that several services (a cluster's shards) give apart
	// ones.
	EventIDBase int64
}

// DefaultMaxPerRegistration bounds one registration's groups, and its
// locators.
const DefaultMaxPerRegistration = 256

// Service is the lookup discovery service.
type Service struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	g     *group.Discovery
	l     *locator.Discovery
	run   *clock.Runner
	// linkOf names the served interface whose link an address is on
	// ("" when none is): a lookup service known only by an IPv6
	// link-local address is described with that address only to those
	// on its link. Nil (no multicast) means no address is on any link.
	linkOf func(netip.Addr) string

	mu      sync.Mutex
	regs    map[string]*reg
	lus     map[discovery.ServiceID]*lookupService
	byGroup map[string]map[string]*reg // registrations interested in each group
	all     map[string]*reg            // registrations interested in all groups
	byLoc   map[string]map[string]*reg // registrations by locator (its String form)
	meta    meta
	// unconfirmed: lookup services known from before a restart that group
	// discovery has not found again yet.
	unconfirmed bool
	closed      bool
	// examined counts registrations reconciled, for tests of the fan-out.
	examined atomic.Int64
}

type meta struct {
	NextEventID int64 `json:"nextEventID"`
}

// reg is one registration, as stored.
type reg struct {
	ID        string   `json:"id"`
	EventID   int64    `json:"eventID"`
	Seq       int64    `json:"seq"`
	AllGroups bool     `json:"allGroups"`
	Groups    []string `json:"groups"`
	Locators  []string `json:"locators"`
	Listener  string   `json:"listener"`
	Handback  []byte   `json:"handback"`
	Lease     string   `json:"lease"`
	// HostLocal: the host's administrator named the listener (it may
	// be on this host: outbound.WithHostLocal).
	HostLocal bool `json:"hostLocal,omitempty"`
	// Discovered is the managed set of lookup services.
	Discovered []discovery.ServiceID `json:"discovered"`

	locs []discovery.Locator // Locators parsed
}

// lookupService is what the service knows of one lookup service.
type lookupService struct {
	LS discovery.LookupService `json:"ls"`
	// ByGroup: group discovery holds it.
	ByGroup bool `json:"byGroup"`
	// Locs: the locators locator discovery found it through. (Our own
	// discards do not take them away: other registrations keep it by
	// them, LD.4.1.)
	Locs []string `json:"locs"`
	// LocatorID is the ID locator discovery knows it by (for a lookup
	// service whose proxy jinid cannot read, its stand-in: only
	// announcements tell the real one).
	LocatorID discovery.ServiceID `json:"locatorID,omitzero"`
	// Lost: group discovery found it unreachable (a passive
	// communication discard) and nothing has found it since: no
	// registration wanting it through group discovery holds it, whatever
	// its locators (LD.3.1).
	Lost bool `json:"lost,omitempty"`
	// Pending: discarded by a registration, not yet found again;
	// DiscardedBy hear when it is.
	Pending     bool     `json:"pending"`
	DiscardedBy []string `json:"discardedBy"`
	// Since is when the service first heard of it.
	Since time.Time `json:"since,omitzero"`

	holders  map[string]*reg // registrations whose managed set has it
	storedAs string          // its key in registrarBucket, if stored
	// legacy: stored by a jinid that listed Java lookup services under
	// stand-ins it could not replace; discarded at start (see retire).
	legacy bool
}

// New loads the service from the store, registers its lease kind and
// creates its discovery engines. Call the grantor's Load afterwards, then
// Start.
func New(cfg Config) (*Service, error) {
	if cfg.Policy == (lease.Policy{}) {
		cfg.Policy = DefaultPolicy
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.New
	}
	s := &Service{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, run: clock.NewRunner(cfg.Clock)}
	if err := s.load(); err != nil {
		return nil, err
	}
	unicastOnly := group.UnicastNetwork{Namespace: cfg.Namespace}
	gc := cfg.Group
	gc.Groups, gc.OnEvent, gc.Clock, gc.Logger = s.groupInterest(), s.onGroupEvent, cfg.Clock, cfg.Logger.With("engine", "group")
	if gc.Network == nil {
		gc.Network = unicastOnly
		if cfg.Multicast != nil {
			gc.Network = cfg.Multicast
		}
	}
	g, err := group.New(gc)
	if err != nil {
		return nil, err
	}
	if cfg.Multicast != nil {
		// The engine hears announcements and answers itself.
		cfg.Multicast.SetSink(g)
		s.linkOf = cfg.Multicast.LinkOf
	} else {
		s.linkOf = cfg.LinkOf
	}
	lc := cfg.Locator
	lc.Locators, lc.OnEvent, lc.Clock, lc.Logger = nil, s.onLocatorEvent, cfg.Clock, cfg.Logger.With("engine", "locator")
	if lc.Dial == nil {
		lc.Dial = unicastOnly.DialLocator
	}
	l, err := locator.New(lc)
	if err != nil {
		g.Shutdown(context.Background())
		return nil, err
	}
	s.g, s.l = g, l
	cfg.Grantor.Register(LeaseKind, cfg.Policy, s.release)
	return s, nil
}

// Sink is the service's group discovery engine as a sink: what a shared
// network (Config.LinkOf) hears is to be handed to it.
func (s *Service) Sink() group.LinkSink { return s.g }

// Start begins discovery. Lookup services known from before a restart
// that group discovery does not find again within its discard window are
// then discarded as if their announcements had stopped.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	locs := s.locatorInterest()
	window := time.Duration(max(s.cfg.Group.DiscardMultiple, group.DefaultDiscardMultiple)) *
		cmp.Or(s.cfg.Group.AnnouncementInterval, group.DefaultAnnouncementInterval)
	s.mu.Unlock()
	s.l.Set(locs)
	if err := s.retire(); err != nil {
		return err
	}
	if err := errors.Join(s.g.Start(ctx), s.l.Start(ctx)); err != nil {
		return err
	}
	if s.unconfirmed {
		s.run.AfterFunc(window, s.confirm)
	}
	return nil
}

// Shutdown stops discovery and event generation.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.run.Stop()
	return errors.Join(s.g.Shutdown(ctx), s.l.Shutdown(ctx))
}

var _ lifecycle.Service = (*Service)(nil)

func (s *Service) load() error {
	s.regs = map[string]*reg{}
	s.lus = map[discovery.ServiceID]*lookupService{}
	s.byGroup = map[string]map[string]*reg{}
	s.all = map[string]*reg{}
	s.byLoc = map[string]map[string]*reg{}
	s.meta = meta{NextEventID: 1}
	err := s.cfg.Store.View(func(tx *store.Tx) error {
		if _, err := tx.Get(metaBucket, "meta", &s.meta); err != nil {
			return err
		}
		if err := tx.ForEach(registrarBucket, func(k string, raw []byte) error {
			var l lookupService
			if err := json.Unmarshal(raw, &l); err != nil {
				return fmt.Errorf("lookup service %s: %w", k, err)
			}
			l.holders, l.storedAs = map[string]*reg{}, k
			// Stored by a jinid from before it read Java proxies: a
			// ServiceID it made up (see retire).
			var old struct {
				LS struct{ IDFromProxy bool } `json:"ls"`
			}
			l.legacy = json.Unmarshal(raw, &old) == nil && old.LS.IDFromProxy
			s.lus[l.LS.ID] = &l
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEach(regBucket, func(k string, raw []byte) error {
			var r reg
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("registration %s: %w", k, err)
			}
			for _, ls := range r.Locators {
				l, err := discovery.ParseLocator(ls)
				if err != nil {
					return fmt.Errorf("registration %s: %w", k, err)
				}
				r.locs = append(r.locs, l)
			}
			s.index(&r)
			for _, id := range r.Discovered {
				if l := s.lus[id]; l != nil {
					l.holders[r.ID] = &r
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("loading the lookup discovery service: %w", err)
	}
	// What group discovery held before the restart it must find again.
	for _, l := range s.lus {
		if l.ByGroup {
			s.unconfirmed = true
		}
	}
	return nil
}

// update runs one change: fn changes memory (under mu) and writes the
// store in the same transaction; the events it returns are sent once the
// transaction is on disk. If the transaction fails, memory is reloaded.
func (s *Service) update(fn func(tx *store.Tx) ([]event.Delivery, error)) error {
	var out []event.Delivery
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return errors.New("the lookup discovery service is closed")
		}
		var err error
		out, err = fn(tx)
		return err
	})
	if err != nil {
		if c := fault.CodeOf(err); c != apitypes.Internal {
			return err // refused before anything changed
		}
		s.mu.Lock()
		if lerr := s.load(); lerr != nil {
			s.log.Error("reloading the lookup discovery service after a failed change", "err", lerr)
		}
		s.mu.Unlock()
		return err
	}
	for _, d := range out {
		s.cfg.Dispatcher.Send(d)
	}
	return nil
}

// --- registrations ---------------------------------------------------------

// RegisterRequest asks for a registration.
type RegisterRequest struct {
	// Groups of interest: nil means ALL_GROUPS, empty NO_GROUPS.
	Groups   []string
	Locators []discovery.Locator
	Listener string
	Handback []byte
	Duration int64
	// Owner is who asks (for the quotas).
	Owner string
	// HostLocal: the host's administrator asks, who may name a listener
	// on this host (outbound.WithHostLocal).
	HostLocal bool
}

// Registration is what Register returns.
type Registration struct {
	ID      string
	EventID int64
	SeqNum  int64
	Lease   lease.Record
}

// Register creates a registration. Lookup services already discovered
// that it wants are reported at once, in one discovered event.
func (s *Service) Register(req RegisterRequest) (Registration, error) {
	if req.Listener == "" {
		return Registration{}, fault.New(apitypes.NullArgument, "listener is required")
	}
	if err := s.cfg.Outbound.CheckListener(outbound.HostLocalIf(context.Background(), req.HostLocal), "listener", req.Listener); err != nil {
		return Registration{}, err
	}
	if err := checkGroups(req.Groups); err != nil {
		return Registration{}, err
	}
	if err := errors.Join(s.checkCount("groups", len(req.Groups)), s.checkCount("locators", len(req.Locators))); err != nil {
		return Registration{}, err
	}
	var out Registration
	err := s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		r := &reg{ID: s.cfg.NewID(), EventID: s.cfg.EventIDBase + s.meta.NextEventID, Listener: req.Listener, Handback: req.Handback, HostLocal: req.HostLocal,
			Discovered: []discovery.ServiceID{}}
		r.setGroups(req.Groups)
		r.setLocators(req.Locators)
		rec, err := s.cfg.Grantor.Grant(tx, LeaseKind, r.ID, req.Owner, req.Duration)
		if err != nil {
			return nil, err
		}
		r.Lease = rec.ID
		s.meta.NextEventID++
		if err := tx.Put(metaBucket, "meta", s.meta); err != nil {
			return nil, err
		}
		s.index(r)
		out = Registration{ID: r.ID, EventID: r.EventID, SeqNum: r.Seq, Lease: rec}
		evs, err := s.reconcile(tx, []*reg{r}, s.allLookupServices())
		if err != nil {
			return nil, err
		}
		if err := tx.Put(regBucket, r.ID, r); err != nil { // reconcile stored it only if it changed
			return nil, err
		}
		tx.OnCommit(s.interestChanged)
		return evs, nil
	})
	return out, err
}

// Info is a registration's state.
type Info struct {
	ID        string
	EventID   int64
	SeqNum    int64
	AllGroups bool
	Groups    []string
	Locators  []discovery.Locator
	Lease     string
}

// Get returns a registration.
func (s *Service) Get(id string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[id]
	if r == nil {
		return Info{}, noSuch(id)
	}
	return Info{ID: r.ID, EventID: r.EventID, SeqNum: r.Seq, AllGroups: r.AllGroups, Groups: slices.Clone(r.Groups),
		Locators: slices.Clone(r.locs), Lease: r.Lease}, nil
}

// Registrars returns a registration's managed set of lookup services
// (getRegistrars), ordered by ServiceID.
func (s *Service) Registrars(id string) ([]discovery.LookupService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[id]
	if r == nil {
		return nil, noSuch(id)
	}
	out := make([]discovery.LookupService, 0, len(r.Discovered))
	for _, sid := range r.Discovered {
		if l := s.lus[sid]; l != nil {
			out = append(out, l.LS.Clone())
		}
	}
	return out, nil
}

// Known is a lookup service the service holds, for the status page.
type Known struct {
	discovery.LookupService
	// ByGroup: group discovery holds it; Locators: those it was found
	// through.
	ByGroup  bool
	Locators []string
	// Since it was first heard of.
	Since time.Time
}

// Known lists the lookup services discovery holds now (not those lost
// or only pending), ordered by ServiceID.
func (s *Service) Known() []Known {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Known, 0, len(s.lus))
	for _, l := range s.lus {
		if l.Lost || !l.ByGroup && len(l.Locs) == 0 {
			continue
		}
		out = append(out, Known{LookupService: l.LS.Clone(), ByGroup: l.ByGroup, Locators: slices.Clone(l.Locs), Since: l.Since})
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].ID[:], out[j].ID[:]) < 0 })
	return out
}

// Count reports the registrations.
func (s *Service) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.regs)
}

// Mutation is one of the group and locator mutators.
type Mutation int

// The mutators of LookupDiscoveryRegistration.
const (
	Add Mutation = iota
	Set
	Remove
)

// MutateGroups adds, sets or removes groups (for Set, nil means
// ALL_GROUPS). Adding to or removing from ALL_GROUPS is
// UnsupportedOperation, as the specification says.
func (s *Service) MutateGroups(id string, m Mutation, groups []string) error {
	if m != Set && groups == nil {
		return fault.New(apitypes.NullArgument, "groups is required")
	}
	if m != Remove {
		if err := checkGroups(groups); err != nil {
			return err
		}
	}
	return s.mutate(id, func(r *reg) error {
		switch m {
		case Add:
			if r.AllGroups {
				return fault.New(apitypes.UnsupportedOperation, "the registration's groups are ALL_GROUPS: there is no set to add to (set groups first)")
			}
			all := discovery.UnionGroups(r.Groups, groups)
			if err := s.checkCount("groups", len(all)); err != nil {
				return err
			}
			r.setGroups(all)
		case Remove:
			if r.AllGroups {
				return fault.New(apitypes.UnsupportedOperation, "the registration's groups are ALL_GROUPS: there is no set to remove from")
			}
			r.setGroups(slices.DeleteFunc(slices.Clone(r.Groups), func(g string) bool { return slices.Contains(groups, g) }))
		default:
			if err := s.checkCount("groups", len(groups)); err != nil {
				return err
			}
			r.setGroups(groups)
		}
		return nil
	})
}

// checkCount bounds a registration's groups or locators (what).
func (s *Service) checkCount(what string, n int) error {
	if max := cmp.Or(s.cfg.MaxPerRegistration, DefaultMaxPerRegistration); n > max {
		return fault.Limit(apitypes.TooLarge, "ldsInterest", 0, "%d %s for one registration; at most %d", n, what, max)
	}
	return nil
}

// MutateLocators adds, sets or removes locators.
func (s *Service) MutateLocators(id string, m Mutation, locs []discovery.Locator) error {
	if locs == nil {
		return fault.New(apitypes.NullArgument, "locators is required")
	}
	return s.mutate(id, func(r *reg) error {
		switch m {
		case Add:
			all := append(slices.Clone(r.locs), locs...)
			if err := s.checkCount("locators", len(all)); err != nil {
				return err
			}
			r.setLocators(all)
		case Remove:
			r.setLocators(slices.DeleteFunc(slices.Clone(r.locs), func(l discovery.Locator) bool {
				return slices.ContainsFunc(locs, l.Equal)
			}))
		default:
			if err := s.checkCount("locators", len(locs)); err != nil {
				return err
			}
			r.setLocators(locs)
		}
		return nil
	})
}

// mutate changes a registration's interest and sends the events the
// change calls for.
func (s *Service) mutate(id string, change func(*reg) error) error {
	return s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		r := s.regs[id]
		if r == nil || !s.cfg.Grantor.Live(r.Lease) {
			return nil, noSuch(id)
		}
		s.unindex(r)
		if err := change(r); err != nil {
			s.index(r)
			return nil, err
		}
		s.index(r)
		evs, err := s.reconcile(tx, []*reg{r}, s.allLookupServices())
		if err != nil {
			return nil, err
		}
		if err := tx.Put(regBucket, r.ID, r); err != nil {
			return nil, err
		}
		tx.OnCommit(s.interestChanged)
		return evs, nil
	})
}

// Discard removes a lookup service from a registration's managed set and
// makes it eligible for rediscovery (LD.4.1, "Discarding Lookup
// Services"). The first registration to discard it starts its
// rediscovery; each that discards it before then is sent a discarded
// event and hears when it is found again. Discarding one not in the
// managed set does nothing.
func (s *Service) Discard(id string, serviceID discovery.ServiceID) error {
	var first bool
	var locatorID discovery.ServiceID
	err := s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		r := s.regs[id]
		if r == nil || !s.cfg.Grantor.Live(r.Lease) {
			return nil, noSuch(id)
		}
		l := s.lus[serviceID]
		if l == nil || !slices.Contains(r.Discovered, serviceID) {
			return nil, nil
		}
		first, locatorID = !l.Pending, l.LocatorID
		l.Pending = true
		if !slices.Contains(l.DiscardedBy, r.ID) {
			l.DiscardedBy = append(l.DiscardedBy, r.ID)
		}
		ev := s.drop(r, l)
		if err := s.putReg(tx, r); err != nil {
			return nil, err
		}
		if err := s.putLookupService(tx, l); err != nil {
			return nil, err
		}
		return []event.Delivery{ev}, nil
	})
	if err == nil && first {
		// Outside the transaction: the engines report their own discards,
		// which onGroupEvent and onLocatorEvent take as this one.
		s.g.Discard(serviceID)
		s.l.Discard(cmp.Or(locatorID, serviceID))
	}
	return err
}

func (r *reg) setGroups(groups []string) {
	r.AllGroups = groups == nil
	r.Groups = []string{}
	if !r.AllGroups {
		r.Groups = discovery.UnionGroups(nil, groups)
	}
}

func (r *reg) setLocators(locs []discovery.Locator) {
	r.locs, r.Locators = nil, []string{}
	for _, l := range locs {
		if !slices.ContainsFunc(r.locs, l.Equal) {
			r.locs = append(r.locs, l)
			r.Locators = append(r.Locators, l.String())
		}
	}
}

// release ends a registration whose lease ended or was cancelled; it runs
// inside the grantor's transaction.
func (s *Service) release(tx *store.Tx, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[id]
	if r == nil {
		return tx.Delete(regBucket, id)
	}
	if err := tx.Delete(regBucket, id); err != nil {
		return err
	}
	s.unindex(r)
	delete(s.regs, id)
	for _, sid := range r.Discovered {
		if l := s.lus[sid]; l != nil {
			delete(l.holders, r.ID)
			if err := s.putLookupService(tx, l); err != nil {
				return err
			}
		}
	}
	tx.OnCommit(s.interestChanged)
	return nil
}

// --- engine events ---------------------------------------------------------

func (s *Service) onGroupEvent(ev discovery.Event) {
	if s.cfg.OnEvent != nil && ev.Kind != discovery.Updated {
		s.cfg.OnEvent(ev, "group")
	}
	err := s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		l, out, err := s.lookupService(tx, ev.LookupService)
		if err != nil {
			return nil, err
		}
		evs, err := s.applyGroupEvent(tx, l, ev)
		return append(out, evs...), err
	})
	if err != nil {
		s.log.Error("applying a group discovery event", "event", ev.Kind, "serviceID", ev.ID, "err", err)
	}
}

func (s *Service) applyGroupEvent(tx *store.Tx, l *lookupService, ev discovery.Event) ([]event.Delivery, error) {
	oldGroups := slices.Clone(l.LS.Groups)
	if ev.Kind != discovery.Discarded {
		l.Lost = false
	}
	switch ev.Kind {
	case discovery.Discovered:
		l.ByGroup = true
		s.refresh(l, ev.LookupService)
		if l.Pending {
			return s.rediscovered(tx, l, oldGroups)
		}
	case discovery.Updated:
		// Where it is reached: the registrations' events and answers
		// describe it so from now on; nothing to tell them.
		s.refresh(l, ev.LookupService)
		return nil, s.putLookupService(tx, l)
	case discovery.Changed:
		l.ByGroup = true
		s.refresh(l, ev.LookupService)
	case discovery.Discarded:
		l.ByGroup = false
		if ev.Reason == discovery.ReasonRequested || l.Pending {
			// Our own Discard: others keep it until it is found again.
			return nil, s.putLookupService(tx, l)
		}
		l.LS.Groups = slices.Clone(ev.Groups)
		if ev.Reason == discovery.ReasonCommunication {
			l.Lost = true
			if id := l.LocatorID; len(l.Locs) > 0 && !id.IsZero() {
				// Locator discovery holds it without looking: have it
				// look again, so that those wanting it by locator find
				// it again once it answers. (Once on disk, before the
				// events go out; the engine only queues its own.)
				tx.OnCommit(func() { s.l.Discard(id) })
			}
		}
	}
	return s.changed(tx, l, oldGroups)
}

func (s *Service) onLocatorEvent(ev discovery.Event) {
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(ev, "locator")
	}
	err := s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		l, out, err := s.lookupService(tx, ev.LookupService)
		if err != nil {
			return nil, err
		}
		evs, err := s.applyLocatorEvent(tx, l, ev)
		return append(out, evs...), err
	})
	if err != nil {
		s.log.Error("applying a locator discovery event", "event", ev.Kind, "serviceID", ev.ID, "err", err)
	}
}

func (s *Service) applyLocatorEvent(tx *store.Tx, l *lookupService, ev discovery.Event) ([]event.Delivery, error) {
	loc := ev.Locator.String()
	oldGroups := slices.Clone(l.LS.Groups)
	switch ev.Kind {
	case discovery.Discovered:
		l.Lost, l.LocatorID = false, ev.ID
		if !slices.Contains(l.Locs, loc) {
			l.Locs = append(l.Locs, loc)
		}
		if !l.ByGroup {
			s.refresh(l, ev.LookupService)
		}
		if l.Pending {
			return s.rediscovered(tx, l, oldGroups)
		}
	case discovery.Discarded:
		if ev.Reason == discovery.ReasonRequested {
			// Our own Discard (or a look again after a communication
			// discard): it is being found again; the registrations
			// holding it by this locator keep it meanwhile (LD.4.1:
			// only those that discarded hear of it).
			return nil, s.putLookupService(tx, l)
		}
		l.Locs = slices.DeleteFunc(l.Locs, func(x string) bool { return x == loc })
		if l.Pending {
			return nil, s.putLookupService(tx, l)
		}
	}
	return s.changed(tx, l, oldGroups)
}

// retire discards the lookup services a jinid from before it read Java
// proxies stored under ServiceIDs it made up: the registrations holding
// them are told they are discarded, and hear of them again, under their
// real ServiceIDs, once the engines find them.
func (s *Service) retire() error {
	return s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		var out []event.Delivery
		for _, l := range s.allLookupServices() {
			if !l.legacy {
				continue
			}
			l.ByGroup, l.Locs, l.Lost, l.Pending, l.DiscardedBy, l.legacy = false, []string{}, false, false, nil, false
			evs, err := s.changed(tx, l, l.LS.Groups)
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		return out, nil
	})
}

// confirm ends the grace after a restart: lookup services held by group
// discovery before it and not found again are discarded as silent.
func (s *Service) confirm() {
	err := s.update(func(tx *store.Tx) ([]event.Delivery, error) {
		var out []event.Delivery
		held := map[discovery.ServiceID]bool{}
		for _, ls := range s.g.Discovered() {
			held[ls.ID] = true
		}
		for _, l := range s.allLookupServices() {
			if !l.ByGroup || held[l.LS.ID] {
				continue
			}
			l.ByGroup, l.Lost = false, true // silent since the restart: as a communication discard
			evs, err := s.changed(tx, l, l.LS.Groups)
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		s.unconfirmed = false
		return out, nil
	})
	if err != nil {
		s.log.Error("discarding lookup services not seen since the restart", "err", err)
	}
}

// lookupService finds or creates the entry for ls: by its ServiceID, or
// by its stand-in. When ls tells the real ServiceID of one known until
// now by its stand-in, the entry is filed under the real one, with the
// events that says to the registrations holding it (identified).
func (s *Service) lookupService(tx *store.Tx, ls discovery.LookupService) (*lookupService, []event.Delivery, error) {
	l := s.lus[ls.ID]
	if l == nil && !ls.StandIn.IsZero() {
		// Only lookup services whose proxies jinid cannot read have
		// stand-ins: a few at most.
		l, _ = discovery.Lookup(maps.Values(s.lus), func(l *lookupService) discovery.LookupService { return l.LS }, ls)
	}
	if l == nil {
		l = &lookupService{LS: ls.Clone(), Locs: []string{}, holders: map[string]*reg{}, Since: s.clock.Now()}
		s.lus[ls.ID] = l
		return l, nil, nil
	}
	if l.LS.IDIsStandIn() && !ls.IDIsStandIn() {
		out, err := s.identified(tx, l, ls.ID)
		return l, out, err
	}
	return l, nil, nil
}

// identified files l, known until now under its stand-in, under its real
// ServiceID id. Each registration holding it is told it is discarded
// under the stand-in; the caller's reconcile then tells those that want
// it (the same ones) it is discovered under id. A registration is never
// told of a discard of an ID it was not told was discovered, nor keeps
// an ID no longer reported.
func (s *Service) identified(tx *store.Tx, l *lookupService, id discovery.ServiceID) ([]event.Delivery, error) {
	holders := slices.SortedFunc(maps.Values(l.holders), func(a, b *reg) int { return cmp.Compare(a.EventID, b.EventID) })
	var out []event.Delivery
	for _, r := range holders {
		out = append(out, s.drop(r, l))
		if err := s.putReg(tx, r); err != nil {
			return nil, err
		}
	}
	s.log.Debug("lookup service identified by its announced ServiceID", "serviceID", id, "standIn", l.LS.ID, "registrations", len(holders))
	delete(s.lus, l.LS.ID)
	l.LS.ID = id
	s.lus[id] = l
	return out, s.putLookupService(tx, l)
}

// refresh takes an engine's newer description of l: groups, address,
// protocol version. The ServiceID l is filed under stays (identified
// changes it): locator discovery describes a lookup service whose proxy
// jinid cannot read by its stand-in even once the real ID is known.
func (s *Service) refresh(l *lookupService, ls discovery.LookupService) {
	id, standIn := l.LS.ID, cmp.Or(l.LS.StandIn, ls.StandIn)
	l.LS = ls.Clone()
	l.LS.ID, l.LS.StandIn = id, standIn
}

// rediscovered: a pending lookup service was found again.
func (s *Service) rediscovered(tx *store.Tx, l *lookupService, oldGroups []string) ([]event.Delivery, error) {
	l.Pending, l.DiscardedBy = false, nil
	return s.changed(tx, l, oldGroups)
}

// changed reconciles the registrations a change of l concerns: those
// interested in its old or new groups, in all groups, in its locators,
// and those holding it.
func (s *Service) changed(tx *store.Tx, l *lookupService, oldGroups []string) ([]event.Delivery, error) {
	seen := map[string]*reg{}
	add := func(m map[string]*reg) {
		for id, r := range m {
			seen[id] = r
		}
	}
	add(s.all)
	add(l.holders)
	for _, g := range oldGroups {
		add(s.byGroup[g])
	}
	for _, g := range l.LS.Groups {
		add(s.byGroup[g])
	}
	for _, loc := range l.Locs {
		add(s.byLoc[loc])
	}
	regs := make([]*reg, 0, len(seen))
	for _, r := range seen {
		regs = append(regs, r)
	}
	sort.Slice(regs, func(i, j int) bool { return regs[i].EventID < regs[j].EventID })
	evs, err := s.reconcile(tx, regs, []*lookupService{l})
	if err != nil {
		return nil, err
	}
	return evs, s.putLookupService(tx, l)
}

// wants reports whether r wants l: by group, while group discovery holds
// it; else by locator, unless group discovery lost it and r wants it
// through group discovery too (LD.3.1: a passive communication discard
// reaches every registration interested in one of its member groups;
// only those wanting it by locator alone keep it).
func (s *Service) wants(r *reg, l *lookupService) bool {
	byGroup := r.AllGroups || overlaps(r.Groups, l.LS.Groups)
	if l.ByGroup && byGroup {
		return true
	}
	if l.Lost && byGroup {
		return false
	}
	for _, loc := range r.Locators {
		if slices.Contains(l.Locs, loc) {
			return true
		}
	}
	return false
}

// reconcile brings each registration's managed set in line with what it
// wants among ls, and returns the events: per registration at most one
// discovered event (batching what it newly has) and one discarded event.
func (s *Service) reconcile(tx *store.Tx, regs []*reg, ls []*lookupService) ([]event.Delivery, error) {
	var out []event.Delivery
	s.examined.Add(int64(len(regs)))
	for _, r := range regs {
		var found, lost []*lookupService
		for _, l := range ls {
			has := slices.Contains(r.Discovered, l.LS.ID)
			switch want := s.wants(r, l); {
			case want && !has && !l.Pending:
				r.Discovered = append(r.Discovered, l.LS.ID)
				l.holders[r.ID] = r
				found = append(found, l)
			case !want && has && !l.Pending:
				r.Discovered = slices.DeleteFunc(r.Discovered, func(id discovery.ServiceID) bool { return id == l.LS.ID })
				delete(l.holders, r.ID)
				lost = append(lost, l)
			}
		}
		if len(found) == 0 && len(lost) == 0 {
			continue
		}
		if len(found) > 0 {
			out = append(out, s.event(r, false, found))
		}
		if len(lost) > 0 {
			out = append(out, s.event(r, true, lost))
		}
		if err := s.putReg(tx, r); err != nil {
			return nil, err
		}
		for _, l := range append(found, lost...) {
			if err := s.putLookupService(tx, l); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// JavaRegistrars is what an event for a Java listener carries beyond
// the API's: each registrar's proxy as discovery received it (a
// MarshalledObject or MarshalledInstance), in the event's order.
type JavaRegistrars [][]byte

// drop removes l from r's managed set with a discarded event.
func (s *Service) drop(r *reg, l *lookupService) event.Delivery {
	r.Discovered = slices.DeleteFunc(r.Discovered, func(id discovery.ServiceID) bool { return id == l.LS.ID })
	delete(l.holders, r.ID)
	return s.event(r, true, []*lookupService{l})
}

// event builds the next event of r (its sequence number taken now, and
// stored with r by the caller).
func (s *Service) event(r *reg, discarded bool, ls []*lookupService) event.Delivery {
	r.Seq++
	regs := make([]apitypes.Registrar, len(ls))
	groups := make(map[string][]string, len(ls))
	to := listenerAddr(r.Listener)
	for i, l := range ls {
		regs[i] = s.RegistrarFor(l.LS, to)
		groups[l.LS.ID.String()] = regs[i].Groups
	}
	ev := apitypes.RemoteDiscoveryEvent{
		RemoteEvent: apitypes.RemoteEvent{Source: apitypes.EventSource{Service: "lds", ID: r.ID}, EventID: r.EventID, SeqNum: r.Seq,
			Handback: r.Handback, Type: apitypes.RemoteDiscoveryEventType},
		Discarded: discarded, Registrars: regs, Groups: groups}
	var native JavaRegistrars
	if strings.HasPrefix(r.Listener, "jeri:") {
		for _, l := range ls {
			native = append(native, l.LS.Registrar.Marshalled)
		}
	}
	id, leaseID := r.ID, r.Lease
	return event.Delivery{Listener: r.Listener, Event: ev, Native: native, Deadline: s.cfg.Grantor.EndOf(leaseID), HostLocal: r.HostLocal,
		Done: func(o event.Outcome, err error) {
			if o == event.UnknownEvent || o == event.Definite {
				// LD.3.1: the client is in an unknown state; its
				// registration is cancelled and cleared.
				s.log.Info("cancelling a discovery registration its listener refused", "registration", id, "outcome", o, "err", err)
				if err := s.cfg.Grantor.Cancel(leaseID); err != nil && !fault.Is(err, apitypes.UnknownLease) {
					s.log.Warn("cancelling a discovery registration", "registration", id, "err", err)
				}
			}
		}}
}

func (s *Service) putReg(tx *store.Tx, r *reg) error {
	if s.regs[r.ID] == nil {
		return nil // released meanwhile
	}
	return tx.Put(regBucket, r.ID, r)
}

// putLookupService keeps a lookup service on disk while a registration
// holds it or waits for it, and forgets it otherwise (memory too, unless
// an engine still holds it).
func (s *Service) putLookupService(tx *store.Tx, l *lookupService) error {
	key := l.LS.ID.String()
	if l.storedAs != "" && l.storedAs != key || l.storedAs != "" && len(l.holders) == 0 && !l.Pending {
		if err := tx.Delete(registrarBucket, l.storedAs); err != nil {
			return err
		}
		l.storedAs = ""
	}
	if len(l.holders) > 0 || l.Pending {
		l.storedAs = key
		return tx.Put(registrarBucket, key, l)
	}
	if !l.ByGroup && len(l.Locs) == 0 {
		delete(s.lus, l.LS.ID)
	}
	return nil
}

func (s *Service) allLookupServices() []*lookupService {
	out := make([]*lookupService, 0, len(s.lus))
	for _, l := range s.lus {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].LS.ID[:], out[j].LS.ID[:]) < 0 })
	return out
}

// --- indexes and engine interest -----------------------------------------

func (s *Service) index(r *reg) {
	s.regs[r.ID] = r
	if r.AllGroups {
		s.all[r.ID] = r
	}
	for _, g := range r.Groups {
		if s.byGroup[g] == nil {
			s.byGroup[g] = map[string]*reg{}
		}
		s.byGroup[g][r.ID] = r
	}
	for _, l := range r.Locators {
		if s.byLoc[l] == nil {
			s.byLoc[l] = map[string]*reg{}
		}
		s.byLoc[l][r.ID] = r
	}
}

func (s *Service) unindex(r *reg) {
	delete(s.all, r.ID)
	for _, g := range r.Groups {
		delete(s.byGroup[g], r.ID)
		if len(s.byGroup[g]) == 0 {
			delete(s.byGroup, g)
		}
	}
	for _, l := range r.Locators {
		delete(s.byLoc[l], r.ID)
		if len(s.byLoc[l]) == 0 {
			delete(s.byLoc, l)
		}
	}
}

// groupInterest is the union of the registrations' groups (nil: all).
func (s *Service) groupInterest() []string {
	if len(s.all) > 0 {
		return nil
	}
	out := make([]string, 0, len(s.byGroup))
	for g := range s.byGroup {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

func (s *Service) locatorInterest() []discovery.Locator {
	out := make([]discovery.Locator, 0, len(s.byLoc))
	for l := range s.byLoc {
		loc, err := discovery.ParseLocator(l)
		if err == nil {
			out = append(out, loc)
		}
	}
	return out
}

// interestChanged hands the engines the union of the registrations'
// interest. It runs after a commit, holding the store's lock but not mu.
func (s *Service) interestChanged() {
	if s.g == nil {
		return
	}
	s.mu.Lock()
	groups, locs := s.groupInterest(), s.locatorInterest()
	s.mu.Unlock()
	if cur, all := s.g.Groups(); all != (groups == nil) || !slices.Equal(sortedCopy(cur), groups) {
		s.g.SetGroups(groups)
	}
	s.l.Set(locs)
}

// --- helpers ---------------------------------------------------------------

// RegistrarOf describes a lookup service for the API.
func RegistrarOf(ls discovery.LookupService) apitypes.Registrar {
	r := apitypes.Registrar{ServiceID: ls.ID.String(), StandIn: ls.IDIsStandIn(), Host: ls.Host, Port: ls.Port, Groups: slices.Clone(ls.Groups),
		Locator: discovery.Locator{Host: ls.Host, Port: cmp.Or(ls.Port, discovery.Port)}.String(), Kind: "java"}
	if r.Groups == nil {
		r.Groups = []string{}
	}
	if d := ls.Registrar.Descriptor; d != nil {
		u := d.APIURL
		r.Kind, r.APIURL = "jinid", &u
	} else {
		r.Marshalled = ls.Registrar.Marshalled
	}
	return r
}

// RegistrarFor describes a lookup service for someone at address to
// (a listener, a client of the API): as RegistrarOf, except that an IPv6
// link-local address, which reaches its host only over one link, is
// handed on only to someone on that link, without this host's zone
// (meaningless elsewhere: the recipient adds its own interface's), and
// only to this host itself with it. To anyone else the host and locator
// are empty: nothing they could dial.
func (s *Service) RegistrarFor(ls discovery.LookupService, to netip.Addr) apitypes.Registrar {
	r := RegistrarOf(ls)
	a, err := netip.ParseAddr(ls.Host)
	if err != nil || !a.Is6() || !a.IsLinkLocalUnicast() || a.Zone() == "" {
		return r
	}
	to = to.Unmap()
	switch {
	case to.IsLoopback():
		return r
	case to.IsValid() && (to.Zone() == a.Zone() || s.linkOf != nil && s.linkOf(to) == a.Zone()):
		r.Host = a.WithZone("").String()
		r.Locator = discovery.Locator{Host: r.Host, Port: cmp.Or(ls.Port, discovery.Port)}.String()
	default:
		r.Host, r.Locator = "", ""
	}
	return r
}

// listenerAddr is the address of a listener URL's host (invalid for a
// name other than localhost).
func listenerAddr(listener string) netip.Addr {
	u, err := url.Parse(listener)
	if err != nil {
		return netip.Addr{}
	}
	if strings.EqualFold(u.Hostname(), "localhost") {
		return netip.IPv6Loopback()
	}
	a, _ := netip.ParseAddr(u.Hostname())
	return a
}

// checkGroups refuses group names that fit no discovery packet: one such
// name in the shared request would otherwise cost every registration its
// requests.
func checkGroups(groups []string) error {
	for i, g := range groups {
		if err := discovery.CheckGroup(g); err != nil {
			return fault.New(apitypes.InvalidArgument, "group %d: %v", i, err)
		}
	}
	return nil
}

func noSuch(id string) error {
	return fault.Gone("discovery registration", id)
}

func overlaps(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

func sortedCopy(s []string) []string {
	if s == nil {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

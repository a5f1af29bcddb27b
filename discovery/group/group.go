// Package group is group discovery, the equivalent of Java's
// LookupDiscovery: a long-running engine that keeps the set of lookup
// services that are members of the groups of interest, from multicast
// requests, announcements and unicast discovery, and reports every change
// to it as a discovered, discarded or changed event, in order.
//
// The rules are those of shared/design/WIRE.md ("Behaviour"): requests in
// rounds of seven five seconds apart at start and whenever groups are
// added, then one every two minutes; an announcement from an unknown
// lookup service of interest leads to unicast discovery with it; a
// discovered one that falls silent for more than three announcement
// intervals is probed by unicast discovery and discarded if unreachable;
// a change of its groups seen in an announcement is a changed event, or
// a discard when no group of interest remains.
//
// A lookup service is known by the ServiceID its registrar proxy carries
// from its first answer on. One whose proxy is of a class jinid cannot
// read has a stand-in ServiceID until it announces its real one; it is
// then discarded under the stand-in (discovery.ReasonIdentified) and
// discovered under the real one, in that order, so that every discard
// names a ServiceID discovered before it.
//
// The engine does no I/O of its own: a Network sends requests and runs
// unicast discovery (Multicast is the real one), and whoever receives
// announcements and answers to requests hands them to HandleAnnouncement
// and HandleResponse. Time comes from an injected clock.
package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/ordered"
)

// Network is what group discovery needs of the network.
type Network interface {
	// Request multicasts a discovery request for groups (empty: any
	// group) naming the lookup services already discovered, which need
	// not answer.
	Request(groups []string, known []discovery.ServiceID) error
	// Unicast runs unicast discovery, in the given protocol version, with
	// the lookup service at host:port.
	Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error)
}

// Defaults, those of the Java implementation.
const (
	DefaultRequestCount         = 7
	DefaultRequestInterval      = 5 * time.Second
	DefaultFinalRequestInterval = 2 * time.Minute
	DefaultAnnouncementInterval = 2 * time.Minute
	DefaultDiscardMultiple      = 3
	DefaultMaxContacts          = 64
	// DefaultMaxPendingContacts bounds the announced lookup services
	// waiting to be contacted: in a storm of announcements with new
	// ServiceIDs the rest are dropped (each announces again, and is
	// contacted then).
	DefaultMaxPendingContacts = 256
	// DefaultContactTimeout bounds one unicast discovery, dial included:
	// a lookup service on the LAN answers in milliseconds.
	DefaultContactTimeout = 5 * time.Second
)

// ErrAllGroups is returned when groups are added to or removed from an
// interest in all groups, which has no list to change (Java throws
// UnsupportedOperationException there).
var ErrAllGroups = errors.New("the groups of interest are all groups; set a list of groups first")

// Config configures a Discovery.
type Config struct {
	// Groups of interest: nil means all groups (ALL_GROUPS), an empty
	// slice none (NO_GROUPS). The public group is "".
	Groups []string
	// Network sends requests and runs unicast discovery. Required.
	Network Network
	// OnEvent receives every event, in order, from one goroutine. It
	// must not block for long: events queue behind it.
	OnEvent func(discovery.Event)

	// RequestCount requests are sent RequestInterval apart at start and
	// whenever groups are added, then one every FinalRequestInterval.
	RequestCount         int
	RequestInterval      time.Duration
	FinalRequestInterval time.Duration
	// AnnouncementInterval is how often lookup services are expected to
	// announce; one silent for DiscardMultiple of them is probed and, if
	// unreachable, discarded.
	AnnouncementInterval time.Duration
	DiscardMultiple      int
	// MaxContacts bounds the unicast discoveries run at once, and
	// MaxPendingContacts those waiting; ContactTimeout bounds each.
	MaxContacts, MaxPendingContacts int
	ContactTimeout                  time.Duration

	Clock  clock.Clock
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.Network == nil {
		return errors.New("group: Config.Network is required")
	}
	if c.OnEvent == nil {
		c.OnEvent = func(discovery.Event) {}
	}
	for _, d := range []struct {
		what string
		v    *time.Duration
		def  time.Duration
	}{
		{"request interval", &c.RequestInterval, DefaultRequestInterval},
		{"final request interval", &c.FinalRequestInterval, DefaultFinalRequestInterval},
		{"announcement interval", &c.AnnouncementInterval, DefaultAnnouncementInterval},
		{"contact timeout", &c.ContactTimeout, DefaultContactTimeout},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return fmt.Errorf("group: %s %s is negative", d.what, *d.v)
		}
	}
	for _, d := range []struct {
		what string
		v    *int
		def  int
	}{
		{"request count", &c.RequestCount, DefaultRequestCount},
		{"discard multiple", &c.DiscardMultiple, DefaultDiscardMultiple},
		{"max contacts", &c.MaxContacts, DefaultMaxContacts},
		{"max pending contacts", &c.MaxPendingContacts, DefaultMaxPendingContacts},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return fmt.Errorf("group: %s %d is negative", d.what, *d.v)
		}
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Discovery is one group discovery engine.
type Discovery struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	window time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	run    *clock.Runner
	events *ordered.Queue[discovery.Event]
	// pending holds the announcements whose lookup services are to be
	// contacted, for at most MaxContacts workers.
	pending chan contactJob
	// dropped counts the announcements left out of pending (a storm).
	dropped atomic.Int64

	mu         sync.Mutex
	closed     bool
	started    bool
	all        bool
	groups     []string
	discovered map[discovery.ServiceID]*entry
	// standIns indexes the entries of lookup services whose proxies jinid
	// cannot read, by stand-in (LookupService.StandIn): answers carry
	// only that, announcements only the real ServiceID.
	standIns   map[discovery.ServiceID]*entry
	contacting map[discovery.ServiceID]bool
	workers    int // contact workers running
	reqTimer   clock.Timer
	burstLeft  int
	// failures counts failed contacts since the last one logged: a storm
	// of lookup services that do not answer makes one line in a while.
	failures  int
	loggedAt  time.Time
	droppedAt time.Time
}

type contactJob struct {
	a     discovery.Announcement
	iface string
}

// entry is one discovered lookup service.
type entry struct {
	ls       discovery.LookupService
	lastSeen time.Time
	seq      int64
	hasSeq   bool
	timer    clock.Timer
	// addrs are where it was heard or reached (by interface and family),
	// best first (discovery.CompareAddresses); ls is at the first.
	addrs []address
}

// address is one place a lookup service was heard or reached.
type address struct {
	host  string
	port  int // 0: not known (a Java lookup service's version 1 answer)
	iface string
}

// maxAddrs bounds the addresses an entry remembers: one per interface
// and family it is heard on, a few interfaces at most.
const maxAddrs = 8

// note records that the lookup service was heard or reached at host and
// port over iface, and points ls at the best address known: which one is
// reported and dialed depends on the addresses, not on the order they
// were heard in.
func (e *entry) note(host string, port int, iface string) {
	if host == "" {
		return
	}
	i := slices.IndexFunc(e.addrs, func(a address) bool {
		return discovery.SameHost(a.host, host) && (a.port == port || a.port == 0 || port == 0)
	})
	switch {
	case i >= 0 && e.addrs[i].port == 0:
		e.addrs[i].port = port
	case i >= 0:
	case len(e.addrs) < maxAddrs:
		e.addrs = append(e.addrs, address{host, port, iface})
	default:
		return
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(e.addrs, func(i, j int) bool {
		a, b := e.addrs[i], e.addrs[j]
		return discovery.CompareAddresses(a.host, a.port, b.host, b.port) < 0
	})
	best := e.addrs[0]
	e.ls.Host, e.ls.Port = best.host, best.port
	if best.iface != "" {
		e.ls.Interface = best.iface
	}
}

// forget drops the addresses gone says are gone (no longer answering,
// or on an interface no longer served), pointing ls at the best one
// left; it reports whether any is left.
func (e *entry) forget(gone func(address) bool) bool {
	e.addrs = slices.DeleteFunc(e.addrs, gone)
	if len(e.addrs) == 0 {
		return false
	}
	best := e.addrs[0]
	e.ls.Host, e.ls.Port, e.ls.Interface = best.host, best.port, best.iface
	return true
}

// New returns an engine; Start begins its requests.
func New(cfg Config) (*Discovery, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Discovery{
		cfg: cfg, log: cfg.Logger, clock: cfg.Clock,
		window: time.Duration(cfg.DiscardMultiple) * cfg.AnnouncementInterval,
		ctx:    ctx, cancel: cancel, run: clock.NewRunner(cfg.Clock),
		events:     ordered.New(cfg.OnEvent),
		pending:    make(chan contactJob, cfg.MaxPendingContacts),
		discovered: map[discovery.ServiceID]*entry{},
		standIns:   map[discovery.ServiceID]*entry{},
		contacting: map[discovery.ServiceID]bool{},
	}
	d.setInterest(cfg.Groups)
	return d, nil
}

// Start sends the first round of requests (if there are groups of
// interest).
func (d *Discovery) Start(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.closed {
		return nil
	}
	d.started = true
	d.burst()
	return nil
}

// Shutdown stops the engine: no more requests, contacts or events. It waits
// for work in progress and for the last event to be delivered.
func (d *Discovery) Shutdown(context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	if d.reqTimer != nil {
		d.reqTimer.Stop()
	}
	for _, e := range d.discovered {
		e.timer.Stop()
	}
	d.mu.Unlock()
	d.cancel()
	d.run.Stop()
	d.events.Close()
	return nil
}

var _ lifecycle.Service = (*Discovery)(nil)

// Groups returns the groups of interest; all is true for ALL_GROUPS.
func (d *Discovery) Groups() (groups []string, all bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all {
		return nil, true
	}
	return slices.Clone(d.groups), false
}

// SetGroups replaces the groups of interest (nil: all groups). Discovered
// lookup services of no remaining interest are discarded; new groups
// start a round of requests.
func (d *Discovery) SetGroups(groups []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.changeInterest(groups)
}

// AddGroups adds groups of interest.
func (d *Discovery) AddGroups(groups ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all {
		return ErrAllGroups
	}
	d.changeInterest(discovery.UnionGroups(d.groups, groups))
	return nil
}

// RemoveGroups removes groups of interest.
func (d *Discovery) RemoveGroups(groups ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all {
		return ErrAllGroups
	}
	d.changeInterest(slices.DeleteFunc(slices.Clone(d.groups), func(g string) bool { return slices.Contains(groups, g) }))
	return nil
}

// Discovered returns the lookup services discovered now.
func (d *Discovery) Discovered() []discovery.LookupService {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]discovery.LookupService, 0, len(d.discovered))
	for _, e := range d.discovered {
		out = append(out, e.ls.Clone())
	}
	return out
}

// Discard removes a lookup service from the discovered set, as a client
// does when it finds it unreachable, and reports it discarded. It is
// discovered again on its next announcement or answer to a request. It
// reports whether the lookup service was discovered.
func (d *Discovery) Discard(id discovery.ServiceID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.discovered[id]
	if e == nil || d.closed {
		return false
	}
	d.remove(e)
	d.emit(discovery.Discarded, e.ls, discovery.ReasonRequested)
	return true
}

// HandleAnnouncement takes an announcement heard on interface iface. Its
// host must be usable for dialing (an IPv6 link-local one zoned).
func (d *Discovery) HandleAnnouncement(a discovery.Announcement, iface string) {
	if a.ServiceID.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	e := d.discovered[a.ServiceID]
	if e == nil && len(d.standIns) > 0 {
		e = d.adopt(a)
	}
	if e == nil {
		if d.contacting[a.ServiceID] || !d.interested(a.Groups) {
			return
		}
		a.Groups = slices.Clone(a.Groups) // the caller may reuse them
		select {
		case d.pending <- contactJob{a, iface}:
			d.contacting[a.ServiceID] = true
			if d.workers < d.cfg.MaxContacts && d.run.Go(d.contactWorker) {
				d.workers++
			}
		default:
			d.dropped.Add(1)
			if now := time.Now(); now.Sub(d.droppedAt) >= logEvery {
				d.droppedAt = now
				d.log.Warn("announcements of new lookup services come faster than they can be contacted; some are left for their next announcement",
					"waiting", d.cfg.MaxPendingContacts, "droppedSoFar", d.dropped.Load())
			}
		}
		return
	}
	before := e.ls
	e.lastSeen = d.clock.Now()
	e.note(a.Host, a.Port, iface)
	if a.Version == discovery.ProtocolV2 {
		// Sequence numbers only grow: a lower or equal one is a stale or
		// repeated announcement (or the same one heard on another
		// interface), which says nothing new about groups.
		if e.hasSeq && a.Sequence <= e.seq {
			d.updated(e, before)
			return
		}
		e.seq, e.hasSeq = a.Sequence, true
	}
	d.regroup(e, a.Groups, before)
}

// HandleResponse takes the answer of a lookup service that contacted
// this host in reply to a request, heard on interface iface. A version 1
// answer from a Java lookup service does not say its port: 0 then.
func (d *Discovery) HandleResponse(resp *unicast.Response, iface string) {
	ls := unicast.NewLookupService(resp, discovery.ServiceID{})
	ls.Interface = iface
	d.mu.Lock()
	defer d.mu.Unlock()
	d.found(ls)
}

// HandleLinks takes the interfaces served after a change of them: a
// lookup service's addresses heard over an interface not among them are
// forgotten, and one reached only over such interfaces is discarded
// (communication), for that interface only: one also reached over
// another interface, or by unicast off any served link, stays, at its
// best address left.
func (d *Discovery) HandleLinks(served []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	gone := func(a address) bool { return a.iface != "" && !slices.Contains(served, a.iface) }
	for _, e := range d.discovered {
		if !slices.ContainsFunc(e.addrs, gone) {
			continue
		}
		if before := e.ls; e.forget(gone) {
			d.updated(e, before)
			continue
		}
		d.log.Info("lookup service reached only over an interface no longer served; discarded", "serviceID", e.ls.ID,
			"address", e.ls.Address(), "interface", e.ls.Interface)
		d.remove(e)
		d.emit(discovery.Discarded, e.ls, discovery.ReasonCommunication)
	}
}

// adopt finds the lookup service discovered under a stand-in ID at the
// address an announcement comes from and identifies it by the announced
// ServiceID. (A version 1 answer does not tell the port: such an entry
// is it if it is the only one at the host, or the only one there with
// the announced groups.)
func (d *Discovery) adopt(a discovery.Announcement) *entry {
	var sure, loose []*entry
	for _, e := range d.standIns {
		switch {
		case !e.ls.IDIsStandIn() || !discovery.SameHost(e.ls.Host, a.Host):
		case e.ls.Port == a.Port:
			sure = append(sure, e)
		case e.ls.Port == 0:
			loose = append(loose, e)
		}
	}
	e := only(sure)
	if e == nil && len(sure) == 0 {
		e = only(loose)
		if e == nil { // several on one host, none telling its port: the one with these groups
			e = only(slices.DeleteFunc(loose, func(e *entry) bool { return !discovery.SameGroups(e.ls.Groups, a.Groups) }))
		}
	}
	if e == nil || !d.identify(e, a.ServiceID) {
		return nil
	}
	if e.ls.Port == 0 {
		e.ls.Port = a.Port
	}
	return e
}

// only returns the one entry of es, or nil if there are none or more.
func only(es []*entry) *entry {
	if len(es) == 1 {
		return es[0]
	}
	return nil
}

// identify files an entry known under a stand-in ID under its real one.
// To whoever follows the events it is a discard of the stand-in
// (ReasonIdentified) and a discovery under the real ID: nobody is ever
// told of a discard of an ID they were not told was discovered. It
// reports false, changing nothing, when another lookup service holds
// the ID (someone announcing an ID not theirs); the caller holds mu.
func (d *Discovery) identify(e *entry, id discovery.ServiceID) bool {
	if other := d.discovered[id]; other != nil && other != e {
		return false
	}
	was := e.ls.ID
	d.emit(discovery.Discarded, e.ls, discovery.ReasonIdentified)
	delete(d.discovered, was)
	e.ls.ID = id
	d.discovered[id] = e
	d.log.Debug("lookup service identified by its announced ServiceID", "serviceID", id, "standIn", was, "address", e.ls.Address())
	d.emit(discovery.Discovered, e.ls, "")
	return true
}

// maxProbes bounds the addresses a silent lookup service is probed at
// before it is discarded.
const maxProbes = 3

// logEvery is how often a line that a remote host can cause is logged
// at most (with a count of what it stands for).
const logEvery = 10 * time.Second

// DroppedContacts counts announcements of new lookup services left for
// their next announcement, the contact queue being full.
func (d *Discovery) DroppedContacts() int64 { return d.dropped.Load() }

// contactWorker contacts announced lookup services until none wait.
func (d *Discovery) contactWorker() {
	for {
		select {
		case j := <-d.pending:
			d.contact(j.a, j.iface)
		default:
			d.mu.Lock()
			// Look again under the lock: an announcement queued since
			// the empty receive saw this worker as running.
			select {
			case j := <-d.pending:
				d.mu.Unlock()
				d.contact(j.a, j.iface)
				continue
			default:
			}
			d.workers--
			d.mu.Unlock()
			return
		}
	}
}

// unicast runs unicast discovery, bounded by ContactTimeout.
func (d *Discovery) unicast(host string, port, version int) (*unicast.Response, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.ContactTimeout)
	defer cancel()
	return d.cfg.Network.Unicast(ctx, host, port, version)
}

// contact runs unicast discovery with a lookup service that announced.
func (d *Discovery) contact(a discovery.Announcement, iface string) {
	resp, err := d.unicast(a.Host, a.Port, a.Version)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.contacting, a.ServiceID)
	if err != nil {
		if d.ctx.Err() == nil {
			d.failures++
			if now := time.Now(); now.Sub(d.loggedAt) >= logEvery {
				d.log.Info("lookup service announced but unicast discovery failed; will retry on its next announcement",
					"serviceID", a.ServiceID, "host", a.Host, "port", a.Port, "err", err, "failuresSinceLastLine", d.failures)
				d.loggedAt, d.failures = now, 0
			}
		}
		return
	}
	ls := unicast.NewLookupService(resp, a.ServiceID)
	ls.Interface = iface
	d.found(ls)
}

// found takes a lookup service reached by unicast discovery.
func (d *Discovery) found(ls discovery.LookupService) {
	if d.closed {
		return
	}
	if e := d.lookup(ls); e != nil {
		before := e.ls
		d.merge(e, ls)
		e.note(ls.Host, ls.Port, ls.Interface)
		e.lastSeen = d.clock.Now()
		d.regroup(e, ls.Groups, before)
		return
	}
	if !d.interested(ls.Groups) {
		return
	}
	e := &entry{ls: ls, lastSeen: d.clock.Now()}
	e.note(ls.Host, ls.Port, ls.Interface)
	d.discovered[ls.ID] = e
	if !ls.StandIn.IsZero() {
		d.standIns[ls.StandIn] = e
	}
	e.timer = d.after(d.window, func() { d.check(e) })
	d.log.Debug("lookup service discovered", "serviceID", ls.ID, "address", ls.Address(), "groups", ls.Groups)
	d.emit(discovery.Discovered, ls, "")
}

// lookup finds the entry of the lookup service ls describes: by its
// ServiceID, or by its stand-in (an answer from a lookup service whose
// proxy jinid cannot read, identified since by an announcement).
func (d *Discovery) lookup(ls discovery.LookupService) *entry {
	if e := d.discovered[ls.ID]; e != nil {
		return e
	}
	if ls.StandIn.IsZero() {
		return nil
	}
	return d.standIns[ls.StandIn]
}

// merge takes what another answer says of a known lookup service: its
// real ServiceID in place of a stand-in, the port a version 1 answer did
// not give, and the newer protocol's answer (the version it is probed in,
// with its proxy).
func (d *Discovery) merge(e *entry, ls discovery.LookupService) {
	if e.ls.IDIsStandIn() && !ls.IDIsStandIn() {
		d.identify(e, ls.ID)
	}
	if ls.Version > e.ls.Version {
		e.ls.Version, e.ls.Registrar = ls.Version, ls.Registrar
	}
}

// regroup applies a lookup service's current groups; before is what was
// known of it before the answer or announcement that gives them.
func (d *Discovery) regroup(e *entry, groups []string, before discovery.LookupService) {
	if discovery.SameGroups(e.ls.Groups, groups) {
		d.updated(e, before)
		return
	}
	e.ls.Groups = slices.Clone(groups)
	if d.interested(groups) {
		d.emit(discovery.Changed, e.ls, "")
		return
	}
	d.remove(e)
	d.emit(discovery.Discarded, e.ls, discovery.ReasonNoInterest)
}

// check runs when a lookup service may have been silent for the whole
// window: if it has, it is probed by unicast discovery.
func (d *Discovery) check(e *entry) {
	d.mu.Lock()
	if d.discovered[e.ls.ID] != e {
		d.mu.Unlock()
		return
	}
	if silent := d.clock.Now().Sub(e.lastSeen); silent < d.window {
		// Announcements arrived meanwhile: look again when the window
		// after the last one ends. (Resetting a timer per announcement
		// would cost more than this.)
		e.timer = d.after(d.window-silent, func() { d.check(e) })
		d.mu.Unlock()
		return
	}
	ls := e.ls
	addrs := slices.Clone(e.addrs)
	d.mu.Unlock()

	// The best address first; another only if that one fails (a lookup
	// service heard on two links may have lost one).
	var (
		resp   *unicast.Response
		err    error
		failed []address
	)
	for i, a := range addrs {
		if i == maxProbes {
			break
		}
		port := a.port
		if port == 0 {
			port = discovery.Port // a Java lookup service that answered in version 1
		}
		if resp, err = d.unicast(a.host, port, ls.Version); err == nil {
			break
		}
		failed = append(failed, a)
	}
	if len(addrs) == 0 {
		err = errors.New("no address known")
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.discovered[e.ls.ID] != e || d.closed {
		return
	}
	before := e.ls
	if err == nil {
		e.forget(func(a address) bool { return slices.Contains(failed, a) })
	}
	if err != nil {
		d.log.Info("lookup service silent and unreachable; discarded", "serviceID", ls.ID, "address", ls.Address(),
			"silentFor", d.clock.Now().Sub(e.lastSeen).Round(time.Millisecond), "err", err)
		d.remove(e)
		d.emit(discovery.Discarded, e.ls, discovery.ReasonCommunication)
		return
	}
	e.lastSeen = d.clock.Now()
	e.timer = d.after(d.window, func() { d.check(e) })
	d.regroup(e, resp.Groups, before)
}

// updated reports that where a lookup service is reached, or the
// protocol version it is probed in, changed since before (Updated).
func (d *Discovery) updated(e *entry, before discovery.LookupService) {
	if e.ls.Host != before.Host || e.ls.Port != before.Port || e.ls.Interface != before.Interface || e.ls.Version != before.Version {
		d.emit(discovery.Updated, e.ls, "")
	}
}

func (d *Discovery) remove(e *entry) {
	delete(d.discovered, e.ls.ID)
	if !e.ls.StandIn.IsZero() {
		delete(d.standIns, e.ls.StandIn)
	}
	e.timer.Stop()
}

func (d *Discovery) emit(kind discovery.EventKind, ls discovery.LookupService, reason string) {
	d.events.Push(discovery.Event{Kind: kind, At: d.clock.Now(), LookupService: ls.Clone(), Reason: reason})
}

// setInterest sets the groups of interest; the caller holds mu.
func (d *Discovery) setInterest(groups []string) {
	d.all = groups == nil
	d.groups = nil
	if !d.all {
		d.groups = discovery.UnionGroups(nil, groups)
	}
}

// changeInterest applies a new interest: discards what no longer meets
// it, and starts a round of requests if anything was added.
func (d *Discovery) changeInterest(groups []string) {
	wasAll, old := d.all, d.groups
	d.setInterest(groups)
	added := d.all && !wasAll
	if !d.all && !wasAll {
		for _, g := range d.groups {
			if !slices.Contains(old, g) {
				added = true
			}
		}
	}
	for _, e := range d.discovered {
		if !d.interested(e.ls.Groups) {
			d.remove(e)
			d.emit(discovery.Discarded, e.ls, discovery.ReasonNoInterest)
		}
	}
	if added && d.started {
		d.burst()
	}
	if !d.all && len(d.groups) == 0 && d.reqTimer != nil {
		d.reqTimer.Stop()
		d.reqTimer = nil
	}
}

func (d *Discovery) interested(groups []string) bool {
	if d.all {
		return true
	}
	for _, g := range groups {
		if slices.Contains(d.groups, g) {
			return true
		}
	}
	return false
}

// burst starts a round of requests at once.
func (d *Discovery) burst() {
	if !d.all && len(d.groups) == 0 {
		return
	}
	if d.reqTimer != nil {
		d.reqTimer.Stop()
	}
	d.burstLeft = d.cfg.RequestCount
	d.reqTimer = d.after(0, d.request)
}

// request sends one request and schedules the next.
func (d *Discovery) request() {
	d.mu.Lock()
	if d.closed || !d.all && len(d.groups) == 0 {
		d.mu.Unlock()
		return
	}
	groups := slices.Clone(d.groups)
	known := make([]discovery.ServiceID, 0, len(d.discovered))
	for id, e := range d.discovered {
		if !e.ls.IDIsStandIn() {
			known = append(known, id)
		}
	}
	next := d.cfg.FinalRequestInterval
	if d.burstLeft > 0 {
		d.burstLeft--
		if d.burstLeft > 0 {
			next = d.cfg.RequestInterval
		}
	}
	d.reqTimer = d.after(next, d.request)
	d.mu.Unlock()

	if err := d.cfg.Network.Request(groups, known); err != nil {
		d.log.Warn("sending a multicast request", "groups", groups, "err", err)
	}
}

// after runs f after dur unless the engine has closed by then; Close
// waits for f.
func (d *Discovery) after(dur time.Duration, f func()) clock.Timer { return d.run.AfterFunc(dur, f) }

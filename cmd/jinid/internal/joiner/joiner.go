// Package joiner is the daemon's join manager: it keeps the static
// services registered in the other lookup services it discovers, by the
// groups and locators each service names, jinid's and Java's alike, over
// Jini ERI as Java's JoinManager does. A service is registered in a
// lookup service as soon as it is discovered, its lease renewed at half
// its term, registered again when the lookup service no longer knows
// the lease (it restarted without it), and cancelled when the service
// leaves the configuration or the daemon stops. A lookup service that
// fails a call is discarded, so that discovery finds it again (by its
// next announcement, or the locator's next try), as JoinManager does.
package joiner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/discovery/manager"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/java/reggie"
)

// Service is a service to keep registered, and where.
type Service struct {
	Item reggie.Item
	// Groups: the lookup services of these groups; Locators: those at
	// these addresses.
	Groups   []string
	Locators []discovery.Locator
}

// Defaults.
const (
	// DefaultLease is the lease asked for: Reggie grants at most 5
	// minutes unless told otherwise, jinid an hour.
	DefaultLease = 5 * time.Minute
	// callTimeout bounds one call to a lookup service.
	callTimeout = 30 * time.Second
	// Backoff of a registration that failed: doubled from minBackoff
	// up to maxBackoff.
	minBackoff = time.Second
	maxBackoff = time.Minute
	// silentForgotten: a lookup service that did not answer and has not
	// been found again for this long is forgotten (its streak with it).
	silentForgotten = time.Hour
	// minGrant is the shortest lease taken as granted: a lookup service
	// granting less (0 ms: broken or hostile) would have its services
	// renewed in a tight loop. Less is a failure, with backoff, and the
	// lease is renewed no more often than this (a second's lease, the
	// shortest a lookup service may well grant, is kept).
	minGrant = 500 * time.Millisecond
)

// Config gives the join manager its dependencies.
type Config struct {
	// Multicast makes group discovery's network on the daemon's multicast
	// host, the first time a service is to be joined (a daemon with no
	// such service pays nothing: no handle on the host, no queue); nil
	// finds lookup services by locator only.
	Multicast func() (*group.Multicast, error)
	// Self is this daemon's lookup service, which holds the static
	// services already and is never joined.
	Self discovery.ServiceID
	// Dial makes every connection: the daemon's outbound dialer, under
	// its address policy.
	Dial  reggie.DialFunc
	Codec *reggie.Codec
	// Lease is the duration asked for; 0 is DefaultLease.
	Lease time.Duration
	// AnnouncementInterval is how often lookup services are expected to
	// announce; 0 is the Java default.
	AnnouncementInterval time.Duration
	// RediscoverDelay is how soon a lookup service discarded for not
	// answering is looked for again at its locator; 0 is locator
	// discovery's default.
	RediscoverDelay time.Duration
	Logger          *slog.Logger
}

// Joiner is the join manager.
type Joiner struct {
	cfg Config
	log *slog.Logger
	// m and mc, made by the first Set that joins anything (ensure), are
	// guarded by setMu; set once, they are read without it.
	setMu sync.Mutex
	m     *manager.Manager
	mc    *group.Multicast

	mu     sync.Mutex
	want   map[string]Service // by ServiceID
	joined map[discovery.ServiceID]*target
	// leases are those granted, by lookup service and service, kept
	// across the lookup service's discards: found again (by another
	// address, after it restarted), the lease is renewed rather than the
	// service registered again. A jinid holds a Java registration for
	// its client's address, and a lease ID is a capability whatever the
	// address; a lookup service that lost the lease says so, and the
	// service is registered again.
	leases map[discovery.ServiceID]map[string]kept
	// silent are the lookup services whose last call got no answer, kept
	// across their discards: discovery may well find one again (its
	// discovery port answers, its announcements go on) while its
	// registrar does not, and each time it was called at once and the
	// failure warned about (every 15 s for minutes).
	silent  map[discovery.ServiceID]*silence
	calls   atomic.Int64 // registrations and renewals sent
	ctx     context.Context
	stopped bool
	wg      sync.WaitGroup
}

// silence is a lookup service's streak of calls without an answer.
type silence struct {
	since   time.Time
	next    time.Time // no call before then, found again or not
	backoff time.Duration
}

// kept is a lease remembered, until it ends.
type kept struct {
	lease reggie.RemoteLease
	until time.Time
}

// target is a lookup service the join manager works on, by one
// goroutine of its own.
type target struct {
	id discovery.ServiceID
	// ls and found are guarded by the Joiner's mu: discovery updates
	// them.
	ls     discovery.LookupService
	found  []discovery.Locator // the locators that found it
	remote *reggie.Remote
	wake   chan struct{}
	cancel context.CancelFunc
	// release (guarded by the Joiner's mu): when its goroutine ends,
	// cancel what it registered (the daemon stops) or leave it (the
	// lookup service is gone).
	release bool
}

// New returns the join manager; Start starts it.
func New(cfg Config) (*Joiner, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Joiner{cfg: cfg, log: cfg.Logger.With("component", "join"), want: map[string]Service{}, joined: map[discovery.ServiceID]*target{},
		leases: map[discovery.ServiceID]map[string]kept{}, silent: map[discovery.ServiceID]*silence{}}
	return j, nil
}

// ensure makes and starts discovery, the first time it is needed.
func (j *Joiner) ensure() error {
	if j.m != nil {
		return nil
	}
	var net group.Network = group.UnicastNetwork{}
	var mc *group.Multicast
	if j.cfg.Multicast != nil {
		var err error
		if mc, err = j.cfg.Multicast(); err != nil {
			return err
		}
		net = mc
	}
	m, err := manager.New(manager.Config{Groups: []string{}, OnEvent: j.onEvent, OnFound: j.onFound, Logger: j.log,
		Group: group.Config{Network: net, AnnouncementInterval: j.cfg.AnnouncementInterval},
		Locator: locator.Config{RediscoverDelay: j.cfg.RediscoverDelay, Dial: func(ctx context.Context, l discovery.Locator) (*unicast.Response, error) {
			return unicast.DialLocator(ctx, j.cfg.Dial, l)
		}}})
	if err != nil {
		return err
	}
	j.mu.Lock()
	ctx := j.ctx
	j.mu.Unlock()
	if ctx == nil {
		return errors.New("join: Set before Start")
	}
	if mc != nil {
		// Started before the manager, stopped after it.
		mc.SetSink(m)
		if err := mc.Start(ctx); err != nil {
			return err
		}
	}
	if err := m.Start(ctx); err != nil {
		if mc != nil {
			mc.Shutdown(ctx)
		}
		return err
	}
	j.m, j.mc = m, mc
	return nil
}

var _ lifecycle.Service = (*Joiner)(nil)

// Start readies the join manager; discovery starts with the first
// service to join.
func (j *Joiner) Start(ctx context.Context) error {
	j.mu.Lock()
	j.ctx = context.WithoutCancel(ctx)
	j.mu.Unlock()
	return nil
}

// Shutdown stops discovery and cancels every registration made, within
// ctx.
func (j *Joiner) Shutdown(ctx context.Context) error {
	j.setMu.Lock()
	if j.m != nil {
		j.m.Shutdown(ctx)
	}
	if j.mc != nil {
		j.mc.Shutdown(ctx)
	}
	j.setMu.Unlock()
	j.mu.Lock()
	j.stopped = true
	for _, t := range j.joined {
		t.release = true
		t.cancel()
	}
	j.mu.Unlock()
	done := make(chan struct{})
	go func() { j.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Set makes services the ones to keep registered: new and changed ones
// are registered, those left out cancelled, in every lookup service
// that holds them.
func (j *Joiner) Set(services []Service) error {
	j.setMu.Lock()
	defer j.setMu.Unlock()
	if len(services) > 0 {
		if err := j.ensure(); err != nil {
			return fmt.Errorf("starting the join manager's discovery: %w", err)
		}
	}
	want := map[string]Service{}
	var groups []string
	var locs []discovery.Locator
	for _, s := range services {
		want[s.Item.ServiceID] = s
		for _, g := range s.Groups {
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		for _, l := range s.Locators {
			if !slices.Contains(locs, l) {
				locs = append(locs, l)
			}
		}
	}
	j.mu.Lock()
	j.want = want
	for _, t := range j.joined {
		poke(t.wake)
	}
	j.mu.Unlock()
	if j.m != nil {
		j.m.SetGroups(groups)
		j.m.SetLocators(locs)
	}
	return nil
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// onEvent follows discovery: a goroutine per lookup service discovered,
// stopped (its registrations left to the lookup service) when it is
// discarded.
func (j *Joiner) onEvent(e manager.Event) {
	if e.ID == j.cfg.Self {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	t := j.joined[e.ID]
	switch {
	case e.Kind == discovery.Discarded:
		if t != nil {
			t.cancel()
			delete(j.joined, e.ID)
		}
		return
	case t != nil:
		t.ls = e.LookupService.Clone()
		t.found = j.foundBy(e.ID)
		poke(t.wake)
		return
	case j.stopped || j.ctx == nil:
		return
	}
	r, err := j.cfg.Codec.NewRemote(e.Registrar.Marshalled, j.cfg.Dial)
	if err != nil {
		j.log.Warn("a lookup service's registrar cannot be called: its static services are not joined there",
			"lookup", e.ID, "host", e.Host, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(j.ctx)
	t = &target{id: e.ID, ls: e.LookupService.Clone(), found: j.foundBy(e.ID), remote: r, wake: make(chan struct{}, 1), cancel: cancel}
	j.joined[e.ID] = t
	log := j.log.With("lookup", e.ID, "address", discovery.HostPort(e.Host, e.Port))
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		j.run(ctx, log, t)
	}()
}

// onFound follows a lookup service found another way (a locator, once
// found by group or by another locator): the services that name that
// way are wanted there now. (Only the first way was kept before: a
// service naming the second was never registered.)
func (j *Joiner) onFound(d manager.Discovered) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if t := j.joined[d.ID]; t != nil {
		t.found = d.Locators
		poke(t.wake)
	}
}

// foundBy returns the locators that found a lookup service.
func (j *Joiner) foundBy(id discovery.ServiceID) []discovery.Locator {
	for _, d := range j.m.Discovered() {
		if d.ID == id {
			return d.Locators
		}
	}
	return nil
}

// wanted returns the services to keep in t, by ServiceID.
func (j *Joiner) wanted(t *target) map[string]reggie.Item {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string]reggie.Item{}
	for id, s := range j.want {
		if j.wants(s, t) {
			out[id] = s.Item
		}
	}
	return out
}

// wants says whether s is to be registered in t: of one of its groups,
// or found by (or at) one of its locators.
func (j *Joiner) wants(s Service, t *target) bool {
	for _, g := range s.Groups {
		if slices.Contains(t.ls.Groups, g) {
			return true
		}
	}
	for _, l := range s.Locators {
		if slices.Contains(t.found, l) || l.Host == t.ls.Host && l.Port == t.ls.Port {
			return true
		}
	}
	return false
}

// reg is one service's registration in one lookup service.
type reg struct {
	item    reggie.Item
	lease   reggie.RemoteLease
	ok      bool      // registered (else: waiting to try again)
	due     time.Time // renew, or try again, then
	backoff time.Duration
}

// run keeps t's registrations as wanted until ctx ends.
func (j *Joiner) run(ctx context.Context, log *slog.Logger, t *target) {
	defer t.remote.Close()
	regs := map[string]*reg{}
	j.mu.Lock()
	first := j.notBefore(t.id)
	for id, k := range j.leases[t.id] {
		// Renewed at once: found again, the lookup service says whether
		// it still holds them.
		regs[id] = &reg{lease: k.lease, ok: true, backoff: minBackoff, due: first}
	}
	j.mu.Unlock()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		want := j.wanted(t)
		for id, r := range regs {
			if _, ok := want[id]; ok {
				continue
			}
			if r.ok {
				j.cancel(ctx, log, t, r)
			}
			delete(regs, id)
		}
		next := time.Now().Add(time.Hour)
		for _, id := range slices.Sorted(maps.Keys(want)) {
			if ctx.Err() != nil {
				break
			}
			r := regs[id]
			switch {
			case r == nil:
				r = &reg{item: want[id], backoff: minBackoff, due: first}
				regs[id] = r
			case r.item.ServiceID == "":
				r.item = want[id] // a lease kept from before: renewed as is
			case !reflect.DeepEqual(r.item, want[id]):
				// Changed: registered again (it replaces the one there).
				r.item, r.ok, r.due = want[id], false, time.Time{}
			}
			if !time.Now().Before(r.due) && !j.keep(ctx, log, t, r) {
				// A lookup service that does not answer is discarded, to
				// be found again: its goroutine ends with it.
				j.m.Discard(t.id)
				break
			}
			if r.due.Before(next) {
				next = r.due
			}
		}
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			j.mu.Lock()
			release := t.release
			j.mu.Unlock()
			if release {
				end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				for _, r := range regs {
					if r.ok {
						j.cancel(end, log, t, r)
					}
				}
				cancel()
			}
			return
		case <-t.wake:
		case <-timer.C:
		}
	}
}

// keep registers r, or renews it, and schedules what is next. It
// reports false when the lookup service could not be reached.
func (j *Joiner) keep(ctx context.Context, log *slog.Logger, t *target, r *reg) bool {
	// A call under way when the join manager stops ends (within its
	// timeout) rather than being cut: a registration the lookup service
	// made is then known, and cancelled on the way out, not left behind.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	j.calls.Add(1)
	if r.ok {
		granted, err := t.remote.Renew(cctx, r.lease, j.cfg.Lease)
		if err == nil {
			j.heard(log, t.id)
			r.lease.Granted = granted
			j.remember(t.id, r.lease.ServiceID, &r.lease)
			j.schedule(log, r, granted)
			return true
		}
		if !errors.Is(err, reggie.ErrUnknownLease) {
			return j.failed(ctx, log, t, r, "renewing a static service's lease", err)
		}
		// The lookup service no longer knows it (it restarted without
		// it): registered again at once.
		log.Info("static service unknown to the lookup service: registering it again", "service", r.item.ServiceID)
		j.remember(t.id, r.item.ServiceID, nil)
		r.ok = false
	}
	ls, err := t.remote.Register(cctx, r.item, j.cfg.Lease)
	if err != nil {
		return j.failed(ctx, log, t, r, "registering a static service", err)
	}
	j.heard(log, t.id)
	log.Info("static service registered", "service", r.item.ServiceID, "granted", ls.Granted)
	r.lease, r.ok = ls, true
	j.remember(t.id, r.item.ServiceID, &ls)
	j.schedule(log, r, ls.Granted)
	return true
}

// schedule sets when r's lease, granted for granted, is renewed: at half
// of it; a grant under minGrant is a failure (the first of a streak
// logged), renewed after the backoff, never sooner than minGrant.
func (j *Joiner) schedule(log *slog.Logger, r *reg, granted time.Duration) {
	if granted >= minGrant {
		r.due, r.backoff = time.Now().Add(granted/2), minBackoff
		return
	}
	if r.backoff == minBackoff {
		log.Warn("the lookup service grants a lease too short to keep: renewing it no more often than the floor, backing off",
			"service", r.lease.ServiceID, "granted", granted, "floor", minGrant)
	}
	r.due = time.Now().Add(max(r.backoff, minGrant))
	r.backoff = min(2*r.backoff, maxBackoff)
}

// Calls is how many registrations and renewals the join manager sent.
func (j *Joiner) Calls() int64 { return j.calls.Load() }

// remember keeps (or with nil forgets) a lease granted; those ended are
// forgotten (a lookup service gone for good leaves nothing behind).
func (j *Joiner) remember(lus discovery.ServiceID, service string, l *reggie.RemoteLease) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := time.Now()
	for id, m := range j.leases {
		for sid, k := range m {
			if now.After(k.until) {
				delete(m, sid)
			}
		}
		if len(m) == 0 {
			delete(j.leases, id)
		}
	}
	m := j.leases[lus]
	if l == nil {
		delete(m, service)
		if len(m) == 0 {
			delete(j.leases, lus)
		}
		return
	}
	if m == nil {
		m = map[string]kept{}
		j.leases[lus] = m
	}
	m[service] = kept{lease: *l, until: now.Add(l.Granted)}
}

// failed schedules another try of r, logging the first failure of a
// streak; it reports false when the lookup service did not answer (not
// when it answered with a refusal, nor when jinid could not make the
// call at all).
func (j *Joiner) failed(ctx context.Context, log *slog.Logger, t *target, r *reg, what string, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if !answered(err) {
		r.ok = false
		r.due = j.unheard(log, t.id, what, r.item.ServiceID, err)
		return false
	}
	if r.backoff == minBackoff {
		log.Warn(what+" failed; trying again", "service", r.item.ServiceID, "err", err)
	}
	r.ok = false
	r.due = time.Now().Add(r.backoff)
	r.backoff = min(2*r.backoff, maxBackoff)
	return answered(err)
}

// unheard records a call to a lookup service that got no answer: the
// first of a streak is warned about, the rest said at debug level, and
// the lookup service is called no sooner than a wait that doubles with
// each (up to maxBackoff), however often discovery finds it again. It
// returns when the lookup service may be called next.
func (j *Joiner) unheard(log *slog.Logger, lus discovery.ServiceID, what, service string, err error) (next time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := time.Now()
	for id, s := range j.silent {
		if now.Sub(s.next) > silentForgotten {
			delete(j.silent, id) // not found again for long: gone
		}
	}
	s := j.silent[lus]
	if s == nil {
		s = &silence{since: now, backoff: minBackoff}
		j.silent[lus] = s
		log.Warn(what+" failed: the lookup service does not answer; its static services wait until it does (retried, backing off up to "+maxBackoff.String()+")",
			"service", service, "err", err)
	} else {
		log.Debug(what+" failed: the lookup service still does not answer", "service", service, "silentFor", now.Sub(s.since).Round(time.Second), "err", err)
	}
	s.next = now.Add(s.backoff)
	s.backoff = min(2*s.backoff, maxBackoff)
	return s.next
}

// heard ends a lookup service's streak of calls without an answer.
func (j *Joiner) heard(log *slog.Logger, lus discovery.ServiceID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if s := j.silent[lus]; s != nil {
		log.Info("the lookup service answers again", "silentFor", time.Since(s.since).Round(time.Second))
		delete(j.silent, lus)
	}
}

// notBefore is when a lookup service found (again) may first be called;
// the caller holds mu.
func (j *Joiner) notBefore(lus discovery.ServiceID) time.Time {
	if s := j.silent[lus]; s != nil {
		return s.next
	}
	return time.Time{}
}

// answered says whether a failed call got an answer from the lookup
// service: a lookup service that gives none is discarded.
func answered(err error) bool {
	return !errors.Is(err, reggie.ErrUnreachable) && !errors.Is(err, reggie.ErrNoSuchObject)
}

func (j *Joiner) cancel(ctx context.Context, log *slog.Logger, t *target, r *reg) {
	j.remember(t.id, r.lease.ServiceID, nil)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := t.remote.Cancel(cctx, r.lease); err != nil && !errors.Is(err, reggie.ErrUnknownLease) {
		log.Warn("cancelling a static service's registration failed; it lapses with its lease", "service", r.item.ServiceID, "err", err)
		return
	}
	log.Info("static service cancelled", "service", r.item.ServiceID)
}

// Package locator is locator discovery, the equivalent of Java's
// LookupDiscovery: unicast discovery with each lookup service of a
// managed set of locators (jini://host[:port]) until it answers.
package locator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/ordered"
)

// DefaultBackoff is how long locator discovery waits before each try of
// an unreachable locator, as the Java implementation does: at once, then
// 5 s, 10 s, 20 s, 30 s, 1, 2, 4 and 8 minutes, then every 15 minutes,
// never giving up.
var DefaultBackoff = []time.Duration{0, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute}

// Defaults of locator discovery.
const (
	// DefaultRediscoverDelay: a discarded lookup service is not tried
	// again before this.
	DefaultRediscoverDelay = 15 * time.Second
	// DefaultJitter spreads each wait by up to this fraction either way,
	// so many clients of one lookup service do not retry in step.
	DefaultJitter = 0.1
)

// Config configures a Discovery.
type Config struct {
	Locators []discovery.Locator
	// OnEvent receives every event, in order, from one goroutine.
	OnEvent func(discovery.Event)
	// Dial runs unicast discovery with one lookup service; nil means
	// unicast.DialLocator over TCP from this process.
	Dial func(ctx context.Context, l discovery.Locator) (*unicast.Response, error)
	// LookupSRV expands a locator naming a domain into the lookup
	// services its _jini._tcp SRV records list; nil means the system
	// resolver's.
	LookupSRV func(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	// Backoff lists the waits before successive tries; the last repeats.
	// Nil means DefaultBackoff.
	Backoff []time.Duration
	// RediscoverDelay: 0 means DefaultRediscoverDelay.
	RediscoverDelay time.Duration
	// Jitter: 0 means DefaultJitter; negative means none.
	Jitter float64
	// Rand returns numbers in [0, 1) for the jitter; nil means
	// math/rand/v2.
	Rand func() float64
	// TryTimeout bounds one try of one lookup service; 0 means
	// unicast.ReadTimeout.
	TryTimeout time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
}

// Discovery is locator discovery, the equivalent of Java's
// LookupDiscovery: it runs unicast discovery with each locator of
// a managed set until it answers, retrying with a growing, capped,
// jittered backoff, and reports each lookup service found as discovered,
// once per locator that found it (discovery.Event.Locator says which: one lookup
// service reachable by two locators is reported for each).
// A locator that names a domain with _jini._tcp SRV records stands for
// the lookup services those list; host names are resolved on each try.
// Found lookup services are never discarded for silence (locator
// discovery does not watch announcements); only Discard, which makes one
// eligible for rediscovery, and removing its locator discard them.
type Discovery struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	run    *clock.Runner
	ctx    context.Context
	cancel context.CancelFunc
	events *ordered.Queue[discovery.Event]

	mu       sync.Mutex
	started  bool
	closed   bool
	locators []*locEntry
}

type locEntry struct {
	loc     discovery.Locator
	attempt int // index into the backoff of the next wait
	timer   clock.Timer
	removed bool
	// found maps each target (host:port) reached to its lookup service.
	found map[string]discovery.LookupService
}

// New returns locator discovery of cfg.Locators; Start begins the tries.
func New(cfg Config) (*Discovery, error) {
	if cfg.OnEvent == nil {
		cfg.OnEvent = func(discovery.Event) {}
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, l discovery.Locator) (*unicast.Response, error) {
			return unicast.DialLocator(ctx, (&net.Dialer{}).DialContext, l)
		}
	}
	if cfg.LookupSRV == nil {
		cfg.LookupSRV = net.DefaultResolver.LookupSRV
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if len(cfg.Backoff) == 0 {
		return nil, errors.New("locator: Config.Backoff is empty")
	}
	for _, d := range cfg.Backoff {
		if d < 0 {
			return nil, fmt.Errorf("locator: backoff %s is negative", d)
		}
	}
	if cfg.RediscoverDelay == 0 {
		cfg.RediscoverDelay = DefaultRediscoverDelay
	}
	if cfg.RediscoverDelay < 0 {
		return nil, fmt.Errorf("locator: rediscover delay %s is negative", cfg.RediscoverDelay)
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = DefaultJitter
	}
	if cfg.Jitter >= 1 {
		return nil, fmt.Errorf("locator: jitter %g is not below 1", cfg.Jitter)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.TryTimeout == 0 {
		cfg.TryTimeout = unicast.ReadTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Discovery{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, run: clock.NewRunner(cfg.Clock),
		ctx: ctx, cancel: cancel, events: ordered.New(cfg.OnEvent)}
	d.Add(cfg.Locators...)
	return d, nil
}

// Start tries every locator at once.
func (d *Discovery) Start(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.closed {
		return nil
	}
	d.started = true
	for _, e := range d.locators {
		d.schedule(e, 0)
	}
	return nil
}

// Shutdown stops all tries (one in flight is cut short) and waits for
// them and for the last event to be delivered.
func (d *Discovery) Shutdown(context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for _, e := range d.locators {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	d.mu.Unlock()
	d.cancel()
	d.run.Stop()
	d.events.Close()
	return nil
}

var _ lifecycle.Service = (*Discovery)(nil)

// Locators returns the managed set.
func (d *Discovery) Locators() []discovery.Locator {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]discovery.Locator, len(d.locators))
	for i, e := range d.locators {
		out[i] = e.loc
	}
	return out
}

// Add adds locators; each new one is tried at once (once started).
func (d *Discovery) Add(locs ...discovery.Locator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	for _, l := range locs {
		if d.find(l) != nil {
			continue
		}
		e := &locEntry{loc: l, found: map[string]discovery.LookupService{}}
		d.locators = append(d.locators, e)
		if d.started {
			d.schedule(e, 0)
		}
	}
}

// Remove removes locators, discarding the lookup services found through
// them (unless another locator still holds them).
func (d *Discovery) Remove(locs ...discovery.Locator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range locs {
		if e := d.find(l); e != nil {
			d.drop(e)
		}
	}
}

// Set replaces the managed set.
func (d *Discovery) Set(locs []discovery.Locator) {
	d.mu.Lock()
	for _, e := range slices.Clone(d.locators) {
		if !slices.ContainsFunc(locs, e.loc.Equal) {
			d.drop(e)
		}
	}
	d.mu.Unlock()
	d.Add(locs...)
}

// Discovered returns the lookup services found, each once.
func (d *Discovery) Discovered() []discovery.LookupService {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []discovery.LookupService
	for _, e := range d.locators {
		for _, ls := range e.found {
			if !slices.ContainsFunc(out, func(o discovery.LookupService) bool { return o.ID == ls.ID }) {
				out = append(out, ls.Clone())
			}
		}
	}
	return out
}

// Discard makes a lookup service found by locator eligible for
// rediscovery: it is reported discarded (for each locator that had found
// it), and those locators are tried again after RediscoverDelay, then
// with the backoff. It reports whether the lookup service had been found.
func (d *Discovery) Discard(id discovery.ServiceID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	found := false
	for _, e := range d.locators {
		for target, f := range e.found {
			if f.ID != id {
				continue
			}
			found = true
			delete(e.found, target)
			if e.timer != nil {
				e.timer.Stop()
			}
			e.attempt = slices.IndexFunc(d.cfg.Backoff, func(b time.Duration) bool { return b > d.cfg.RediscoverDelay })
			if e.attempt < 0 {
				e.attempt = len(d.cfg.Backoff) - 1
			}
			e.timer = d.run.AfterFunc(d.cfg.RediscoverDelay, func() { d.try(e) })
			d.emit(discovery.Discarded, f, discovery.ReasonRequested, &e.loc)
		}
	}
	return found
}

func (d *Discovery) find(l discovery.Locator) *locEntry {
	for _, e := range d.locators {
		if e.loc.Equal(l) {
			return e
		}
	}
	return nil
}

// drop removes a locator; the caller holds mu.
func (d *Discovery) drop(e *locEntry) {
	e.removed = true
	if e.timer != nil {
		e.timer.Stop()
	}
	d.locators = slices.DeleteFunc(d.locators, func(o *locEntry) bool { return o == e })
	for _, ls := range e.found {
		d.emit(discovery.Discarded, ls, discovery.ReasonLocatorRemoved, &e.loc)
	}
	e.found = nil
}

// schedule arranges the next try after the backoff step at attempt, with
// jitter; the caller holds mu.
func (d *Discovery) schedule(e *locEntry, attempt int) {
	wait := d.cfg.Backoff[min(attempt, len(d.cfg.Backoff)-1)]
	if d.cfg.Jitter > 0 && wait > 0 {
		wait += time.Duration((d.cfg.Rand()*2 - 1) * d.cfg.Jitter * float64(wait))
	}
	e.attempt = attempt + 1
	e.timer = d.run.AfterFunc(wait, func() { d.try(e) })
}

// try runs unicast discovery with every target of a locator not yet
// found, and schedules the next try if any failed.
func (d *Discovery) try(e *locEntry) {
	d.mu.Lock()
	if e.removed || d.closed {
		d.mu.Unlock()
		return
	}
	e.timer = nil
	d.mu.Unlock()

	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.TryTimeout)
	defer cancel()
	targets, via := d.targets(ctx, e.loc)
	type result struct {
		target discovery.Locator
		resp   *unicast.Response
		err    error
	}
	var results []result
	for _, t := range targets {
		d.mu.Lock()
		_, done := e.found[t.Address()]
		d.mu.Unlock()
		if done {
			continue
		}
		resp, err := d.cfg.Dial(ctx, t)
		results = append(results, result{t, resp, err})
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if e.removed || d.closed {
		return
	}
	failed := false
	for _, r := range results {
		if r.err != nil {
			failed = true
			d.log.Info("locator unreachable; will retry", "locator", e.loc, "target", r.target, "via", via, "err", r.err)
			continue
		}
		ls := unicast.NewLookupService(r.resp, discovery.ServiceID{})
		if _, ok := e.found[r.target.Address()]; ok {
			continue
		}
		e.found[r.target.Address()] = ls
		d.log.Debug("locator discovered", "locator", e.loc, "target", r.target, "serviceID", ls.ID)
		d.emit(discovery.Discovered, ls, "", &e.loc)
	}
	if failed && e.timer == nil {
		d.schedule(e, e.attempt)
	}
	if !failed {
		e.attempt = 0
	}
}

// targets are the lookup services a locator stands for: those its SRV
// records list if it names a domain that has them, else itself.
func (d *Discovery) targets(ctx context.Context, l discovery.Locator) ([]discovery.Locator, string) {
	if _, err := netip.ParseAddr(l.Host); err == nil {
		return []discovery.Locator{l}, "address"
	}
	_, srvs, err := d.cfg.LookupSRV(ctx, "jini", "tcp", l.Host)
	if err != nil || len(srvs) == 0 {
		return []discovery.Locator{l}, "host name"
	}
	out := make([]discovery.Locator, 0, len(srvs))
	for _, s := range srvs {
		out = append(out, discovery.Locator{Host: strings.TrimSuffix(s.Target, "."), Port: int(s.Port)})
	}
	return out, "dns-srv"
}

func (d *Discovery) emit(kind discovery.EventKind, ls discovery.LookupService, reason string, loc *discovery.Locator) {
	ev := discovery.Event{Kind: kind, At: d.clock.Now(), LookupService: ls.Clone(), Reason: reason}
	if loc != nil {
		l := *loc
		ev.Locator = &l
	}
	d.events.Push(ev)
}

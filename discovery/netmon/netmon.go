// Package netmon follows a host's network interfaces and their addresses,
// as Tailscale's net/netmon does: kernel notifications are only a hint;
// one loop re-reads the whole state after them (a short pause first takes
// in a burst of changes), compares it with the last, and calls every
// subscriber with the difference. A periodic re-read backs the
// notifications up, so a lost one never leaves anyone wrong for long.
package netmon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
)

// Interface is one network interface as the monitor last saw it.
type Interface struct {
	Index int
	Name  string
	Flags net.Flags
	Addrs []netip.Prefix // sorted
	// DefaultRoute: a default route (IPv4 or IPv6, main table) goes out
	// of it: on a router, the WAN.
	DefaultRoute bool
}

// IsUp reports whether the interface is administratively and
// operationally up.
func (i Interface) IsUp() bool { return i.Flags&net.FlagUp != 0 && i.Flags&net.FlagRunning != 0 }

// HasFamily reports whether the interface has an address of the family
// (4 or 6).
func (i Interface) HasFamily(family int) bool {
	return slices.ContainsFunc(i.Addrs, func(p netip.Prefix) bool { return familyOf(p.Addr()) == family })
}

// Addr returns the interface's preferred address of a family: global
// before link-local, then the lowest.
func (i Interface) Addr(family int) (netip.Addr, bool) {
	var best netip.Addr
	for _, p := range i.Addrs {
		a := p.Addr()
		if familyOf(a) != family {
			continue
		}
		if !best.IsValid() || (best.IsLinkLocalUnicast() && !a.IsLinkLocalUnicast()) {
			best = a
		}
	}
	return best, best.IsValid()
}

func familyOf(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return 4
	}
	return 6
}

// State is every interface, by index.
type State map[int]Interface

// Equal reports whether two states hold the same interfaces, flags and
// addresses.
func (s State) Equal(o State) bool {
	return maps.EqualFunc(s, o, func(a, b Interface) bool {
		return a.Index == b.Index && a.Name == b.Name && a.Flags == b.Flags && slices.Equal(a.Addrs, b.Addrs) && a.DefaultRoute == b.DefaultRoute
	})
}

// Delta is what changed: the state before and after. At a periodic
// re-read they may be equal: a subscriber can retry what failed.
type Delta struct {
	Old, New State
}

// Changed reports whether the interfaces differ at all.
func (d Delta) Changed() bool { return !d.Old.Equal(d.New) }

// Monitor says what the interfaces are and when they change.
type Monitor interface {
	// Snapshot reads the current state of every interface.
	Snapshot() (State, error)
	// Subscribe calls f after every change of the interfaces, and at
	// every periodic re-read, until the returned function is called.
	// Every subscriber hears of every change. f is called from the
	// monitor's goroutine and must not block: have it signal a goroutine
	// of its own (a one-slot channel coalesces bursts).
	Subscribe(f func(Delta)) (unsubscribe func())
}

// subscribers is the set of callbacks of a monitor.
type subscribers struct {
	mu   sync.Mutex
	next int
	fs   map[int]func(Delta)
}

func (s *subscribers) add(f func(Delta)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fs == nil {
		s.fs = map[int]func(Delta){}
	}
	id := s.next
	s.next++
	s.fs[id] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.fs, id)
	}
}

func (s *subscribers) call(d Delta) {
	s.mu.Lock()
	fs := slices.Collect(maps.Values(s.fs))
	s.mu.Unlock()
	for _, f := range fs {
		f(d)
	}
}

// DefaultDebounce is the pause after a notification before the state is
// read: a link coming up brings several notifications (the link, each
// address) within milliseconds, and one read then sees them all.
const DefaultDebounce = 50 * time.Millisecond

// Netlink follows interfaces through rtnetlink subscriptions in one
// network namespace.
type Netlink struct {
	ns     namespace.Namespace
	log    *slog.Logger
	rescan time.Duration
	// hint is the one-slot channel kernel notifications poke: any number
	// of them while one is pending make one re-read.
	hint    chan bool // true: a periodic re-read
	subs    subscribers
	ctx     context.Context
	cancel  context.CancelFunc
	started atomic.Bool
	wg      sync.WaitGroup
}

// NewNetlink returns a monitor of the interfaces of ns; Start begins
// following them. rescan is the period of a full re-read that backs up
// the subscriptions (0: every minute).
func NewNetlink(ns namespace.Namespace, log *slog.Logger, rescan time.Duration) (*Netlink, error) {
	if rescan <= 0 {
		rescan = time.Minute
	}
	// What the monitor needs, it needs at once: a namespace it cannot
	// read fails here, not later.
	f, err := subscribe(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in namespace %s: %w", ns, err)
	}
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	return &Netlink{ns: ns, log: log, rescan: rescan, hint: make(chan bool, 1), ctx: ctx, cancel: cancel}, nil
}

// Start reads the interfaces and begins following them.
func (m *Netlink) Start(context.Context) error {
	if m.started.Swap(true) {
		return nil
	}
	last, err := m.Snapshot()
	if err != nil {
		return err
	}
	m.wg.Add(2)
	go m.run(m.ctx)
	go m.dispatch(m.ctx, last)
	// Subscribers that took a snapshot before the start reconcile with
	// a first re-read: a change between theirs and ours is not lost.
	m.signal(true)
	return nil
}

// Subscribe implements Monitor.
func (m *Netlink) Subscribe(f func(Delta)) func() { return m.subs.add(f) }

// signal pokes the dispatcher; it never blocks.
func (m *Netlink) signal(rescan bool) {
	select {
	case m.hint <- rescan:
	default:
		if rescan {
			// A hint is pending already; make sure it counts as a
			// re-read too.
			select {
			case <-m.hint:
			default:
			}
			select {
			case m.hint <- true:
			default:
			}
		}
	}
}

// dispatch re-reads the state after each hint and tells the subscribers
// what changed.
func (m *Netlink) dispatch(ctx context.Context, last State) {
	defer m.wg.Done()
	for {
		var rescan bool
		select {
		case <-ctx.Done():
			return
		case rescan = <-m.hint:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(DefaultDebounce):
		}
		st, err := m.Snapshot()
		if err != nil {
			m.log.Warn("reading network interfaces failed; will retry on the next change", "namespace", m.ns, "err", err)
			continue
		}
		d := Delta{Old: last, New: st}
		if d.Changed() || rescan {
			m.subs.call(d)
		}
		last = st
	}
}

// Shutdown stops following and waits for the monitor's goroutines.
func (m *Netlink) Shutdown(context.Context) error {
	m.cancel()
	m.wg.Wait()
	return nil
}

var _ lifecycle.Service = (*Netlink)(nil)

// run keeps the subscription open: after a read error it subscribes
// again and resyncs from a full snapshot.
func (m *Netlink) run(ctx context.Context) {
	defer m.wg.Done()
	rescan := time.NewTicker(m.rescan)
	defer rescan.Stop()
	backoff := 100 * time.Millisecond
	for {
		err := m.follow(ctx, rescan.C)
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("interface monitor lost its netlink subscription; resubscribing", "namespace", m.ns, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// follow reads the notifications of one subscription until an error or
// the end: a link or an address changed, or a default route (only
// whether an interface has one matters, for --exclude-default-route),
// hints a re-read; a periodic re-read backs them up.
func (m *Netlink) follow(ctx context.Context, rescan <-chan time.Time) error {
	f, err := subscribe(m.ns)
	if err != nil {
		return err
	}
	changes, errs := make(chan bool, 1), make(chan error, 1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		buf := make([]byte, 64<<10)
		for {
			matters, err := readChanges(f, buf)
			switch {
			case errors.Is(err, errOverrun):
				m.signal(true) // notifications were lost: re-read all
			case err != nil:
				errs <- err
				return
			case matters:
				select {
				case changes <- true:
				default:
				}
			}
		}
	}()
	defer f.Close() // ends the reader
	m.signal(false) // whatever happened while unsubscribed
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return err
		case <-changes:
			m.signal(false)
		case <-rescan:
			m.signal(true)
		}
	}
}

// Snapshot implements Monitor.
func (m *Netlink) Snapshot() (State, error) {
	st, err := readState(m.ns)
	if err != nil {
		return nil, err
	}
	for i, ifc := range st {
		// sort.Slice: one sort shared by every element type; slices.SortFunc
		// of netip.Prefix alone took 12 KB of the router build (docs/performance.md, "Router builds").
		addrs := ifc.Addrs
		sort.Slice(addrs, func(i, j int) bool {
			return cmp.Or(addrs[i].Addr().Compare(addrs[j].Addr()), cmp.Compare(addrs[i].Bits(), addrs[j].Bits())) < 0
		})
		st[i] = ifc
	}
	return st, nil
}

// Static is a Monitor whose state the caller sets, for tests.
type Static struct {
	mu    sync.Mutex
	state State
	err   error
	subs  subscribers
}

// NewStatic returns a Static monitor holding st.
func NewStatic(st State) *Static {
	return &Static{state: st}
}

// Set replaces the state and calls every subscriber with the change
// before it returns.
func (s *Static) Set(st State, err error) {
	s.mu.Lock()
	old := s.state
	s.state, s.err = st, err
	s.mu.Unlock()
	s.subs.call(Delta{Old: old, New: st})
}

// Snapshot implements Monitor.
func (s *Static) Snapshot() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(State, len(s.state))
	for k, v := range s.state {
		v.Addrs = slices.Clone(v.Addrs)
		out[k] = v
	}
	return out, s.err
}

// Subscribe implements Monitor.
func (s *Static) Subscribe(f func(Delta)) func() { return s.subs.add(f) }

package announce

import (
	"context"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
)

// Defaults for answering multicast requests. A request costs a connection
// back to the requester; anyone on the LAN can send requests with made-up
// source addresses, so the answers are rationed: by source, by what
// answering a source cost before, and in all.
const (
	// DefaultMaxAnswers is how many connect-backs run at once.
	DefaultMaxAnswers = 64
	// DefaultMaxPending bounds the requests waiting for a connect-back:
	// with the dial timeout, a real requester behind a full queue of
	// made-up ones waits a second at most.
	DefaultMaxPending = 128
	// DefaultDialTimeout bounds connecting back: on a LAN a requester
	// that is there answers in milliseconds.
	DefaultDialTimeout = 500 * time.Millisecond
	// DefaultExchangeTimeout bounds the unicast exchange once connected.
	DefaultExchangeTimeout = 5 * time.Second
	// DefaultDupWindow: a requester repeats its request (seven times, five
	// seconds apart, and on every interface); one answer per window is
	// enough.
	DefaultDupWindow = 2 * time.Second
	// DefaultPerSourceRate and DefaultPerSourceBurst: the requests one
	// source address gets answered, at once and then each second. A
	// discovery client asks in both versions (one connect-back port
	// each), and a host may run several: a burst of 16 answers eight
	// clients starting together on one host (20 hosts starting at once
	// after an outage, each asking in both versions on both families, are
	// 80 requests from 40 sources: each within its source's burst, all
	// within MaxPending). The rate covers their next rounds, 5 s apart,
	// until they hear the answer; a client that has it names the lookup
	// service as known and asks no more of it. A made-up source sends
	// one request or a few: what holds a spoofing flood off is the
	// suspicion of addresses that did not answer and the fair queue.
	DefaultPerSourceRate  = rate.Limit(2)
	DefaultPerSourceBurst = 16
	// DefaultSuspectFor is how long an address that did not answer a
	// connect-back (no such host: the request's source was made up) is
	// not connected to again. It doubles with each further failure, up to
	// 16 times, and each period is drawn a quarter longer at most, so
	// made-up addresses marked together come back one by one, not in a
	// burst.
	DefaultSuspectFor = time.Minute
	// DefaultOverloadAnnounceEvery: when requests are refused (for want
	// of room, or over their source's budget), the lookup service
	// announces itself instead on the interface and family they came in
	// on, within this time of each refusal and this often at most there.
	// One multicast announcement reaches every real requester on the link
	// at once (they contact it themselves, well within their first
	// second), whatever the made-up requests cost; at most ten a second
	// per link is little traffic.
	DefaultOverloadAnnounceEvery = 100 * time.Millisecond

	maxTracked = 4096 // sources, suspects and recent requests remembered
)

// ResponderConfig configures a Responder.
type ResponderConfig struct {
	ServiceID discovery.ServiceID
	Groups    func() []string
	// Answer runs the unicast exchange as the server on a connection to
	// the requester (unicast.Server.Handle).
	Answer    func(net.Conn)
	Namespace namespace.Namespace
	// Dial connects back; nil dials TCP from Namespace.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	MaxAnswers, MaxPending       int
	DialTimeout, ExchangeTimeout time.Duration
	DupWindow, SuspectFor        time.Duration
	PerSourceRate                rate.Limit
	PerSourceBurst               int
	// Overloaded, if set, is called when requests are refused (the queue
	// is full, or their source is over its budget or suspected), with
	// the interface and family they came in on: the daemon announces
	// there. It is called within OverloadAnnounceEvery of each refusal,
	// at most once per OverloadAnnounceEvery for each interface and
	// family. It must not block.
	Overloaded            func(ifIndex, family int)
	OverloadAnnounceEvery time.Duration
	Logger                *slog.Logger
}

// Responder answers multicast requests by connecting back. Requests are
// taken only from a source on the receiving interface's link, for a
// connect-back address there too; each source gets its share (a token
// bucket); an address that did not answer is left alone for a while
// (flooders make their sources up, and connecting to nobody is what costs);
// and the waiting requests are served fairly by source, those of sources
// answered before first, so that a flood of made-up sources cannot starve
// the real requesters.
type Responder struct {
	cfg    ResponderConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	recent  map[string]time.Time         // last answer per connect-back address
	limits  map[netip.Addr]*rate.Limiter // per request source
	suspect map[netip.Addr]suspicion     // connect-back addresses not to try for now
	good    map[netip.Addr]time.Time     // sources answered: served first
	queue   fairQueue
	active  int  // workers running
	stopped bool // Shutdown began: no new worker
	// shouts are the announcements asked for refused requests, by the
	// interface and family they came in on.
	shouts map[link]*shout
	warn   *rate.Limiter // the log line saying so

	// Counts, for status, metrics and tests.
	Answered, Duplicates, Busy, Failed, OffLink, Suspect atomic.Int64
}

// link is an interface and family (requests come in on, announcements
// go out on).
type link struct{ index, family int }

// shout is when Overloaded was last called for a link; later, if set,
// calls it again once OverloadAnnounceEvery has passed since, so that
// every refused request is followed by an announcement within that time.
type shout struct {
	last  time.Time
	later *time.Timer
}

// maxLinks bounds the links shouts are kept for (interfaces come and go;
// a few are served at once).
const maxLinks = 256

// suspicion is an address that did not answer: not tried until until;
// strikes counts its failures in a row.
type suspicion struct {
	until   time.Time
	strikes int
}

// job is one connect-back to do.
type job struct {
	src     netip.Addr // the request's source
	addr    string     // where to connect back (host:port)
	subnets []netip.Prefix
}

// NewResponder returns a responder; Start starts its workers. It answers
// the requests handed to OnRequest until shut down.
func NewResponder(cfg ResponderConfig) *Responder {
	for _, d := range []struct {
		v   *int
		def int
	}{{&cfg.MaxAnswers, DefaultMaxAnswers}, {&cfg.MaxPending, DefaultMaxPending}, {&cfg.PerSourceBurst, DefaultPerSourceBurst}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.DialTimeout, DefaultDialTimeout}, {&cfg.ExchangeTimeout, DefaultExchangeTimeout},
		{&cfg.DupWindow, DefaultDupWindow}, {&cfg.SuspectFor, DefaultSuspectFor},
		{&cfg.OverloadAnnounceEvery, DefaultOverloadAnnounceEvery}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.PerSourceRate <= 0 {
		cfg.PerSourceRate = DefaultPerSourceRate
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Responder{cfg: cfg, ctx: ctx, cancel: cancel,
		recent: map[string]time.Time{}, limits: map[netip.Addr]*rate.Limiter{}, suspect: map[netip.Addr]suspicion{},
		good: map[netip.Addr]time.Time{}, shouts: map[link]*shout{},
		warn: rate.NewLimiter(rate.Every(time.Minute), 1)}
	r.queue.init()
	if r.cfg.Dial == nil {
		r.cfg.Dial = r.dial
	}
	return r
}

// Start readies the responder; a worker starts for each request queued
// while fewer than MaxAnswers run.
func (r *Responder) Start(context.Context) error { return nil }

// Shutdown stops answering and waits for answers in progress (their
// connections are cut short).
func (r *Responder) Shutdown(context.Context) error {
	r.cancel()
	r.mu.Lock()
	r.stopped = true
	for _, s := range r.shouts {
		if s.later != nil && s.later.Stop() {
			r.wg.Done() // its function will not run
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

var _ lifecycle.Service = (*Responder)(nil)

// OnRequest is an mcast.Inbound request handler. It never blocks: a
// request it cannot take now is dropped (requesters repeat).
func (r *Responder) OnRequest(req discovery.Request, p mcast.Packet) {
	if !req.Wants(r.cfg.ServiceID, r.cfg.Groups()) || req.Port == 0 || r.ctx.Err() != nil {
		return
	}
	src := p.Src.Addr().Unmap()
	// Both the source and the address to connect back to must be on the
	// link the request came in by: anything else is forged, or asks jinid
	// to connect somewhere for someone (a name is checked when dialled).
	if !p.OnLink(src) {
		r.OffLink.Add(1)
		return
	}
	if a, err := netip.ParseAddr(req.Host); err == nil && !p.OnLink(a) {
		r.OffLink.Add(1)
		return
	}
	host := p.Zoned(req.Host)
	addr := net.JoinHostPort(host, strconv.Itoa(req.Port))
	now := time.Now()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.suspectedLocked(addr, now) {
		// Made up, most likely; or a requester that cannot be reached
		// just now: the announcement reaches it if it is there.
		r.Suspect.Add(1)
		r.refusedLocked(p, now)
		return
	}
	if last, ok := r.recent[addr]; ok && now.Sub(last) < r.cfg.DupWindow {
		r.Duplicates.Add(1)
		return
	}
	lim := r.limits[src]
	if lim == nil {
		if len(r.limits) >= maxTracked {
			clear(r.limits) // a flood of sources: start over, don't grow
		}
		lim = rate.NewLimiter(r.cfg.PerSourceRate, r.cfg.PerSourceBurst)
		r.limits[src] = lim
	}
	_, known := r.good[src]
	if !lim.AllowN(now, 1) || !r.queue.push(job{src: src, addr: addr, subnets: p.Subnets}, known, r.cfg.MaxPending, r.cfg.PerSourceBurst) {
		r.Busy.Add(1)
		r.refusedLocked(p, now)
		if r.warn.AllowN(now, 1) {
			// A flood, most likely: said once in a while, with counts.
			r.cfg.Logger.Warn("too many multicast requests to answer: refusing some and announcing instead",
				"refused", r.Busy.Load(), "suspect", r.Suspect.Load(), "failed", r.Failed.Load(), "answered", r.Answered.Load())
		}
		return
	}
	forget(r.recent, maxTracked, now, r.cfg.DupWindow)
	r.recent[addr] = now
	if r.active < r.cfg.MaxAnswers && !r.stopped {
		r.active++
		r.wg.Add(1)
		go r.work()
	}
}

// refusedLocked has the lookup service announce itself on the link a
// refused request came in on: now, or once OverloadAnnounceEvery has
// passed since it last did there (one announcement then serves every
// request refused there meanwhile).
func (r *Responder) refusedLocked(p mcast.Packet, now time.Time) {
	if r.cfg.Overloaded == nil || r.stopped {
		return
	}
	k := link{p.IfIndex, p.Family}
	s := r.shouts[k]
	if s == nil {
		forgetIf(r.shouts, maxLinks, func(s *shout) bool { return s.later == nil })
		s = &shout{}
		r.shouts[k] = s
	}
	if s.later != nil {
		return // one is due
	}
	wait := s.last.Add(r.cfg.OverloadAnnounceEvery).Sub(now)
	if wait <= 0 {
		s.last = now
		r.cfg.Overloaded(k.index, k.family)
		return
	}
	r.wg.Add(1)
	s.later = time.AfterFunc(wait, func() {
		defer r.wg.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		s.later, s.last = nil, time.Now()
		if !r.stopped {
			r.cfg.Overloaded(k.index, k.family)
		}
	})
}

// forget bounds a map of times: at its size limit, entries older than
// keep go; if none are, all go.
func forget[K comparable](m map[K]time.Time, limit int, now time.Time, keep time.Duration) {
	forgetIf(m, limit, func(t time.Time) bool { return now.Sub(t) >= keep })
}

// forgetIf bounds a map: at its size limit, the entries old says are
// old go; if none are, all go.
func forgetIf[K comparable, V any](m map[K]V, limit int, old func(V) bool) {
	if len(m) < limit {
		return
	}
	for k, v := range m {
		if old(v) {
			delete(m, k)
		}
	}
	if len(m) >= limit {
		clear(m)
	}
}

// suspectedLocked reports whether the host of addr is left alone now.
func (r *Responder) suspectedLocked(addr string, now time.Time) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && now.Before(r.suspect[a.WithZone("")].until)
}

// suspectLocked marks a as not to be tried for a while: longer each time
// in a row it fails, drawn at random within a quarter of it.
func (r *Responder) suspectLocked(a netip.Addr, now time.Time) {
	s := r.suspect[a]
	if now.After(s.until.Add(16 * r.cfg.SuspectFor)) {
		s.strikes = 0 // a fresh start after a long good spell
	}
	s.strikes++
	d := r.cfg.SuspectFor << min(s.strikes-1, 4)
	s.until = now.Add(d + mrand.N(d/4+1))
	forgetIf(r.suspect, maxTracked, func(s suspicion) bool { return now.After(s.until) })
	r.suspect[a] = s
}

// work connects back for queued requests, one at a time, until none is
// left: workers run only while there is work (an idle daemon has none,
// where MaxAnswers parked goroutines would hold their stacks for
// nothing).
func (r *Responder) work() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		j, ok := r.queue.pop()
		if !ok || r.ctx.Err() != nil {
			r.active--
			r.mu.Unlock()
			return
		}
		suspected := r.suspectedLocked(j.addr, time.Now())
		if suspected {
			// Queued before its address failed for another request: a
			// flood of made-up sources costs one try per address, however
			// many of its requests wait (a source's next job is taken only
			// once its last connect-back is over).
			r.Suspect.Add(1)
		}
		r.mu.Unlock()
		if !suspected {
			r.answer(j)
		}
		r.mu.Lock()
		r.queue.done(j.src)
		r.mu.Unlock()
	}
}

func (r *Responder) answer(j job) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.DialTimeout)
	conn, err := r.cfg.Dial(withSubnets(ctx, j.subnets), j.addr)
	cancel()
	now := time.Now()
	if err != nil {
		r.Failed.Add(1)
		if nobodyThere(err) {
			// Made up, most likely: leave the address alone for a while.
			if host, _, err := net.SplitHostPort(j.addr); err == nil {
				if a, err := netip.ParseAddr(host); err == nil {
					r.mu.Lock()
					r.suspectLocked(a.WithZone(""), now)
					r.mu.Unlock()
				}
			}
		}
		r.cfg.Logger.Debug("cannot reach a requester", "addr", j.addr, "err", err)
		return
	}
	conn.SetDeadline(now.Add(r.cfg.ExchangeTimeout))
	r.cfg.Answer(conn)
	r.Answered.Add(1)
	r.mu.Lock()
	forget(r.good, maxTracked, now, 10*time.Minute)
	r.good[j.src] = now
	r.mu.Unlock()
}

// nobodyThere reports whether a connect-back failed for want of a host
// (a timeout, no route), as opposed to a host that refused.
func nobodyThere(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTDOWN)
}

type subnetsKey struct{}

func withSubnets(ctx context.Context, s []netip.Prefix) context.Context {
	return context.WithValue(ctx, subnetsKey{}, s)
}

// errOffLink is a connect-back name that resolved off the link.
var errOffLink = errors.New("the requester's address is not on the link the request came by")

// dial connects back from the namespace, to an address on the request's
// link only (a name in a request is checked once resolved).
func (r *Responder) dial(ctx context.Context, addr string) (net.Conn, error) {
	subnets, _ := ctx.Value(subnetsKey{}).([]netip.Prefix)
	d := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !(mcast.Packet{Subnets: subnets}).OnLink(ap.Addr()) {
			return errOffLink
		}
		return nil
	}}
	return r.cfg.Namespace.DialContext(ctx, d, "tcp", addr)
}

// fairQueue holds connect-backs to do, by source: sources answered before
// first, then the others, each round-robin, one job per source per turn,
// so a source with many requests waiting gets no more turns than one with
// one.
type fairQueue struct {
	rings [2]ring // 0: known sources, 1: the others
	n     int
	// busy are the sources with a connect-back under way: their next
	// job waits for it (the worker that ends it takes the next).
	busy map[netip.Addr]bool
}

type ring struct {
	order []netip.Addr         // sources with jobs, in turn order
	jobs  map[netip.Addr][]job // each source's jobs, oldest first
}

func (q *fairQueue) init() {
	for i := range q.rings {
		q.rings[i].jobs = map[netip.Addr][]job{}
	}
	q.busy = map[netip.Addr]bool{}
}

// push queues j, unless max jobs wait already or its source has
// perSource waiting.
func (q *fairQueue) push(j job, known bool, max, perSource int) bool {
	rg := &q.rings[1]
	if known {
		rg = &q.rings[0]
	}
	if q.n >= max || len(rg.jobs[j.src]) >= perSource {
		return false
	}
	if len(rg.jobs[j.src]) == 0 {
		rg.order = append(rg.order, j.src)
	}
	rg.jobs[j.src] = append(rg.jobs[j.src], j)
	q.n++
	return true
}

// pop takes the next job of a source with no connect-back under way:
// the known sources' ring first. The source is busy until done.
func (q *fairQueue) pop() (job, bool) {
	for i := range q.rings {
		rg := &q.rings[i]
		k := slices.IndexFunc(rg.order, func(src netip.Addr) bool { return !q.busy[src] })
		if k < 0 {
			continue
		}
		src := rg.order[k]
		rg.order = slices.Delete(rg.order, k, k+1)
		js := rg.jobs[src]
		j := js[0]
		if len(js) > 1 {
			rg.jobs[src] = js[1:]
			rg.order = append(rg.order, src) // its next job, at the back
		} else {
			delete(rg.jobs, src)
		}
		q.n--
		q.busy[src] = true
		return j, true
	}
	return job{}, false
}

// done ends the connect-back for a job of src that pop returned.
func (q *fairQueue) done(src netip.Addr) { delete(q.busy, src) }

package announce

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
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
	// source address gets answered (a discovery client sends a few, then
	// one every few seconds).
	DefaultPerSourceRate  = rate.Limit(1)
	DefaultPerSourceBurst = 4
	// DefaultSuspectFor is how long an address that did not answer a
	// connect-back (no such host: the request's source was made up) is
	// not connected to again.
	DefaultSuspectFor = time.Minute

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
	Logger                       *slog.Logger
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
	wake   chan struct{} // one token per job queued

	mu      sync.Mutex
	recent  map[string]time.Time         // last answer per connect-back address
	limits  map[netip.Addr]*rate.Limiter // per request source
	suspect map[netip.Addr]time.Time     // connect-back addresses not to try until
	good    map[netip.Addr]time.Time     // sources answered: served first
	queue   fairQueue

	// Counts, for status, metrics and tests.
	Answered, Duplicates, Busy, Failed, OffLink, Suspect atomic.Int64
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
		{&cfg.DupWindow, DefaultDupWindow}, {&cfg.SuspectFor, DefaultSuspectFor}} {
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
	r := &Responder{cfg: cfg, ctx: ctx, cancel: cancel, wake: make(chan struct{}, cfg.MaxPending),
		recent: map[string]time.Time{}, limits: map[netip.Addr]*rate.Limiter{}, suspect: map[netip.Addr]time.Time{},
		good: map[netip.Addr]time.Time{}}
	r.queue.init()
	if r.cfg.Dial == nil {
		r.cfg.Dial = r.dial
	}
	return r
}

// Start starts the workers that connect back.
func (r *Responder) Start(context.Context) error {
	for range r.cfg.MaxAnswers {
		r.wg.Add(1)
		go r.work()
	}
	return nil
}

// Shutdown stops answering and waits for answers in progress (their
// connections are cut short).
func (r *Responder) Shutdown(context.Context) error {
	r.cancel()
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
	if a, err := netip.ParseAddr(host); err == nil && now.Before(r.suspect[a.WithZone("")]) {
		r.Suspect.Add(1)
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
	if !lim.AllowN(now, 1) {
		r.Busy.Add(1)
		return
	}
	_, known := r.good[src]
	if !r.queue.push(job{src: src, addr: addr, subnets: p.Subnets}, known, r.cfg.MaxPending) {
		r.Busy.Add(1)
		return
	}
	forget(r.recent, maxTracked, now, r.cfg.DupWindow)
	r.recent[addr] = now
	r.wake <- struct{}{} // never blocks: one token per queued job, at most MaxPending
}

// forget bounds a map of times: at its size limit, entries older than
// keep go; if none are, all go.
func forget[K comparable](m map[K]time.Time, limit int, now time.Time, keep time.Duration) {
	if len(m) < limit {
		return
	}
	for k, t := range m {
		if now.Sub(t) >= keep {
			delete(m, k)
		}
	}
	if len(m) >= limit {
		clear(m)
	}
}

// work connects back for queued requests, one at a time.
func (r *Responder) work() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		j, ok := r.queue.pop()
		r.mu.Unlock()
		if ok {
			r.answer(j)
		}
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
					forget(r.suspect, maxTracked, now, 0)
					r.suspect[a.WithZone("")] = now.Add(r.cfg.SuspectFor)
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
	var conn net.Conn
	err := r.cfg.Namespace.Do(func() error {
		var err error
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return conn, err
}

// fairQueue holds connect-backs to do, by source: sources answered before
// first, then the others, each round-robin, one job per source per turn,
// so a source with many requests waiting gets no more turns than one with
// one.
type fairQueue struct {
	rings [2]ring // 0: known sources, 1: the others
	n     int
}

type ring struct {
	order []netip.Addr         // sources with jobs, in turn order
	jobs  map[netip.Addr][]job // each source's jobs, oldest first
}

func (q *fairQueue) init() {
	for i := range q.rings {
		q.rings[i].jobs = map[netip.Addr][]job{}
	}
}

// push queues j, unless max jobs wait already or its source has two
// waiting.
func (q *fairQueue) push(j job, known bool, max int) bool {
	rg := &q.rings[1]
	if known {
		rg = &q.rings[0]
	}
	if q.n >= max || len(rg.jobs[j.src]) >= 2 {
		return false
	}
	if len(rg.jobs[j.src]) == 0 {
		rg.order = append(rg.order, j.src)
	}
	rg.jobs[j.src] = append(rg.jobs[j.src], j)
	q.n++
	return true
}

// pop takes the next job: the known sources' ring first.
func (q *fairQueue) pop() (job, bool) {
	for i := range q.rings {
		rg := &q.rings[i]
		if len(rg.order) == 0 {
			continue
		}
		src := rg.order[0]
		rg.order = rg.order[1:]
		js := rg.jobs[src]
		j := js[0]
		if len(js) > 1 {
			rg.jobs[src] = js[1:]
			rg.order = append(rg.order, src) // its next job, at the back
		} else {
			delete(rg.jobs, src)
		}
		q.n--
		return j, true
	}
	return job{}, false
}

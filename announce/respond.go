package announce

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
)

// Defaults for answering multicast requests.
const (
	DefaultMaxAnswers = 32
	// DefaultMaxPerSource caps answers in progress for requests from one
	// source address, so one flooding host (whatever reply addresses it
	// writes in its requests) cannot take every slot from the others.
	DefaultMaxPerSource = 4
	DefaultDialTimeout  = 5 * time.Second
	// DefaultDupWindow: a requester repeats its request (seven times, five
	// seconds apart, and on every interface); one answer per window is
	// enough.
	DefaultDupWindow = 2 * time.Second
	maxRecent        = 4096
)

// ResponderConfig configures a Responder.
type ResponderConfig struct {
	ServiceID discovery.ServiceID
	Groups    func() []string
	// Answer runs the unicast exchange as the server on a connection to
	// the requester (unicast.Server.Handle).
	Answer       func(net.Conn)
	Namespace    namespace.Namespace
	MaxAnswers   int
	MaxPerSource int
	DialTimeout  time.Duration
	DupWindow    time.Duration
	Logger       *slog.Logger
}

// Responder answers multicast requests by connecting back.
type Responder struct {
	cfg    ResponderConfig
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	recent   map[string]time.Time
	bySource map[netip.Addr]int // answers in progress per request source

	// Counts, for status and tests.
	Answered, Duplicates, Busy, Failed atomic.Int64
}

// NewResponder returns a responder: it answers the requests handed to
// OnRequest until shut down.
func NewResponder(cfg ResponderConfig) *Responder {
	if cfg.MaxAnswers <= 0 {
		cfg.MaxAnswers = DefaultMaxAnswers
	}
	if cfg.MaxPerSource <= 0 {
		cfg.MaxPerSource = DefaultMaxPerSource
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.DupWindow <= 0 {
		cfg.DupWindow = DefaultDupWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Responder{cfg: cfg, ctx: ctx, cancel: cancel, sem: make(chan struct{}, cfg.MaxAnswers),
		recent: map[string]time.Time{}, bySource: map[netip.Addr]int{}}
}

// Start implements lifecycle.Service: answers start as requests come.
func (r *Responder) Start(context.Context) error { return nil }

// Shutdown stops answering and waits for answers in progress (their
// connections are cut short).
func (r *Responder) Shutdown(context.Context) error {
	r.cancel()
	r.wg.Wait()
	return nil
}

var _ lifecycle.Service = (*Responder)(nil)

// OnRequest is an mcast.Inbound request handler.
func (r *Responder) OnRequest(req discovery.Request, p mcast.Packet) {
	if !req.Wants(r.cfg.ServiceID, r.cfg.Groups()) || req.Port == 0 || r.ctx.Err() != nil {
		return
	}
	addr := net.JoinHostPort(p.Zoned(req.Host), strconv.Itoa(req.Port))
	now := time.Now()
	r.mu.Lock()
	if last, ok := r.recent[addr]; ok && now.Sub(last) < r.cfg.DupWindow {
		r.mu.Unlock()
		r.Duplicates.Add(1)
		return
	}
	if len(r.recent) >= maxRecent {
		for k, t := range r.recent {
			if now.Sub(t) >= r.cfg.DupWindow {
				delete(r.recent, k)
			}
		}
		if len(r.recent) >= maxRecent {
			clear(r.recent) // a flood of distinct requesters: forget, don't grow
		}
	}
	src := p.Src.Addr()
	if r.bySource[src] >= r.cfg.MaxPerSource {
		r.mu.Unlock()
		r.Busy.Add(1)
		return
	}
	r.recent[addr] = now
	r.mu.Unlock()

	select {
	case r.sem <- struct{}{}:
	default:
		// As many answers in progress as allowed: a flood, or many
		// unreachable requesters. Dropping is safe: requesters repeat.
		r.Busy.Add(1)
		return
	}
	r.mu.Lock()
	r.bySource[src]++
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			if r.bySource[src]--; r.bySource[src] <= 0 {
				delete(r.bySource, src)
			}
			r.mu.Unlock()
			<-r.sem
		}()
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.DialTimeout)
		defer cancel()
		var conn net.Conn
		err := r.cfg.Namespace.Do(func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			return err
		})
		if err != nil {
			r.Failed.Add(1)
			r.cfg.Logger.Debug("cannot reach a requester", "addr", addr, "err", err)
			return
		}
		r.cfg.Answer(conn)
		r.Answered.Add(1)
	}()
}

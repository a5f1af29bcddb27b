// Package relay forwards the connections that reach a node of a cluster
// while another node holds the store (docs/cluster.md): each is joined,
// byte for byte, to a connection to the same service on the holder, so
// that clients on this node's segments reach the one registry through
// the address they discovered here.
//
// The destination is the holder's address as the holder published it in
// etcd, never one a client named: this is the cluster's own plumbing,
// like its connections to etcd, not a request on a client's behalf, so
// it does not go through the outbound client. What it holds is bounded
// by the listener's caps (a connlimit listener) and two copy buffers a
// connection; how long, by the holder's own timeouts.
package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config says where a Forwarder sends what it accepts.
type Config struct {
	// Targets returns the holder's addresses for this service, the
	// likeliest first; none while no holder is known (a connection is
	// then closed at once).
	Targets func() []netip.AddrPort
	// Dial connects to a target (from the daemon's namespace); nil uses
	// a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds one attempt (2 s if 0).
	DialTimeout time.Duration
	// Logger hears failures, at most one line a second.
	Logger *slog.Logger
}

// A Forwarder accepts on a listener and joins each connection to one to
// a target, until Shutdown, or until Handoff gives the listener's next
// connections to another server.
type Forwarder struct {
	ln  net.Listener
	cfg Config

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every forwarded connection
	handed  chan net.Conn         // after Handoff: where accepted connections go
	stopped bool
	logs    rate.Sometimes
	wg      sync.WaitGroup
	pumped  chan struct{} // closed when the accept loop ends
	lnErr   error
	closing chan struct{} // closed when the listener is being closed
	closed  sync.Once
}

// New returns a Forwarder of ln; Start begins accepting.
func New(ln net.Listener, cfg Config) *Forwarder {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	cfg.Logger = cfg.Logger.With("component", "relay")
	return &Forwarder{ln: ln, cfg: cfg, conns: map[net.Conn]struct{}{}, pumped: make(chan struct{}), closing: make(chan struct{}),
		logs: rate.Sometimes{Interval: time.Second}}
}

// Start accepts in the background.
func (f *Forwarder) Start(context.Context) error {
	go f.pump()
	return nil
}

// pump accepts until the listener closes: each connection is forwarded,
// or after Handoff passed on.
func (f *Forwarder) pump() {
	defer close(f.pumped)
	for {
		c, err := f.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			f.mu.Lock()
			f.lnErr = err
			f.mu.Unlock()
			return
		}
		f.mu.Lock()
		handed, stopped := f.handed, f.stopped
		if handed == nil && !stopped {
			f.wg.Add(1)
		}
		f.mu.Unlock()
		switch {
		case handed != nil:
			select {
			case handed <- c:
			case <-f.closing:
				c.Close()
			}
		case stopped:
			c.Close()
		default:
			go f.forward(c)
		}
	}
}

// Forward joins a connection made elsewhere (a connect-back to a
// multicast requester, which speaks first as a unicast client does) to a
// target, as if accepted; it returns when the exchange ends. After
// Handoff or Shutdown it closes c.
func (f *Forwarder) Forward(c net.Conn) {
	f.mu.Lock()
	ok := f.handed == nil && !f.stopped
	if ok {
		f.wg.Add(1)
	}
	f.mu.Unlock()
	if !ok {
		c.Close()
		return
	}
	f.forward(c)
}

// forward joins c to the first target that answers.
func (f *Forwarder) forward(c net.Conn) {
	defer f.wg.Done()
	var up net.Conn
	var lastErr error
	for _, t := range f.cfg.Targets() {
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.DialTimeout)
		up, lastErr = f.cfg.Dial(ctx, "tcp", t.String())
		cancel()
		if lastErr == nil {
			break
		}
	}
	if up == nil {
		if lastErr == nil {
			lastErr = errors.New("no node holds the store yet")
		}
		f.say("a connection not forwarded to the node holding the store", lastErr)
		c.Close()
		return
	}
	if !f.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	defer f.untrack(c, up)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		// One side ended: so does the other (HTTP and unicast
		// discovery have nothing to say after the peer's end).
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

func (f *Forwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || f.handed != nil {
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Forwarder) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
	}
}

// say logs a failure, at most one a second (clients cause them).
func (f *Forwarder) say(msg string, err error) {
	f.logs.Do(func() { f.cfg.Logger.Warn(msg, "listener", f.ln.Addr().String(), "err", err) })
}

// cut ends every forwarded connection and waits for their goroutines.
func (f *Forwarder) cut() {
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// Handoff stops forwarding: the connections forwarded end, and the
// listener's next ones are the returned listener's to accept (the node
// took the hold and serves them itself). Closing it closes the
// listener.
func (f *Forwarder) Handoff() net.Listener {
	ch := make(chan net.Conn)
	f.mu.Lock()
	f.handed = ch
	f.mu.Unlock()
	f.cut()
	return &handoff{f: f, ch: ch}
}

// Shutdown closes the listener and ends every forwarded connection.
func (f *Forwarder) Shutdown(context.Context) error {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	err := f.close()
	<-f.pumped
	f.cut()
	return err
}

// close closes the listener, once.
func (f *Forwarder) close() error {
	var err error
	f.closed.Do(func() {
		close(f.closing)
		err = f.ln.Close()
	})
	return err
}

// handoff is the listener a Forwarder hands over.
type handoff struct {
	f  *Forwarder
	ch chan net.Conn
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.ch:
		return c, nil
	case <-h.f.pumped:
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		return nil, h.f.lnErr
	}
}

// Close closes the listener and waits for its accept loop to end.
func (h *handoff) Close() error {
	err := h.f.close()
	<-h.f.pumped
	return err
}

func (h *handoff) Addr() net.Addr { return h.f.ln.Addr() }

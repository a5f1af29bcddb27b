package unicast

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/internal/lifecycle"
)

// Defaults of a server's caps: an exchange is short, so these bite only
// under a flood (or a slowloris: connections that say nothing).
const (
	// DefaultMaxConns caps connections served at once.
	DefaultMaxConns = 256
	// DefaultMaxPerSource caps those from one address.
	DefaultMaxPerSource = 8
	// DefaultTimeout bounds one exchange: a lookup service need not wait
	// a client's full minute, and a LAN answers in milliseconds.
	DefaultTimeout = 5 * time.Second
)

// ServerConfig configures a unicast discovery server.
type ServerConfig struct {
	// Respond builds the response to a request that arrived on a
	// connection whose local (server-side) address is local.
	Respond func(req Request, local net.Addr) (*Response, error)
	// MaxConns and MaxPerSource cap the connections served at once, in
	// all and from one address (loopback apart); one over a cap is
	// closed at once. 0 means the defaults.
	MaxConns, MaxPerSource int
	// SourceBits4 and SourceBits6: the per-source cap counts addresses
	// by these prefix lengths; 0 means connlimit's defaults (an IPv6 /64
	// is one source).
	SourceBits4, SourceBits6 int
	// Exempt names sources the per-source cap does not apply to
	// (connlimit.Config.Exempt): a node of a cluster forwarding.
	Exempt func(netip.Addr) bool
	// Timeout bounds one exchange; 0 means DefaultTimeout.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Server answers unicast discovery on a listener.
type Server struct {
	cfg     ServerConfig
	ln      *connlimit.Limited
	wg      sync.WaitGroup
	ctx     context.Context
	stop    context.CancelFunc
	started atomic.Bool
}

// NewServer returns a server that answers on ln once started; it owns ln
// from now on.
func NewServer(ln net.Listener, cfg ServerConfig) *Server {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxPerSource <= 0 {
		cfg.MaxPerSource = DefaultMaxPerSource
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lim := connlimit.Listener(ln, connlimit.Config{Max: cfg.MaxConns, PerSource: cfg.MaxPerSource, Loopback: cfg.MaxPerSource,
		SourceBits4: cfg.SourceBits4, SourceBits6: cfg.SourceBits6, Exempt: cfg.Exempt})
	return &Server{cfg: cfg, ln: lim, ctx: ctx, stop: cancel}
}

// Start begins accepting.
func (s *Server) Start(context.Context) error {
	if s.started.Swap(true) {
		return nil
	}
	s.wg.Add(1)
	go s.accept()
	return nil
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting, ends exchanges in progress and waits for them.
func (s *Server) Shutdown(context.Context) error {
	s.stop()
	err := s.ln.Close()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) { // shut down before
		err = nil
	}
	return err
}

var _ lifecycle.Service = (*Server)(nil)

// Refused counts connections closed for a cap.
func (s *Server) Refused() int64 { return s.ln.Refused.Load() }

func (s *Server) accept() {
	defer s.wg.Done()
	var loggedAt time.Time
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: tell once in a while.
			if time.Since(loggedAt) >= 10*time.Second {
				loggedAt = time.Now()
				s.cfg.Logger.Warn("accepting unicast discovery", "err", err)
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.Handle(conn)
		}()
	}
}

// Handle runs one exchange as the server on conn and closes it. It is
// also how a lookup service answers a multicast request after connecting
// back to the requester.
func (s *Server) Handle(conn net.Conn) {
	defer conn.Close()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	err := Answer(ctx, conn, func(q Request) (*Response, error) {
		resp, err := s.cfg.Respond(q, conn.LocalAddr())
		if err != nil {
			return nil, err
		}
		resp.Version = q.Version
		if q.Version == discovery.ProtocolV2 {
			resp.Format = discovery.PlaintextFormat
		}
		return resp, nil
	})
	if err != nil {
		s.cfg.Logger.Debug("unicast discovery exchange failed", "peer", conn.RemoteAddr(), "err", err)
	}
}

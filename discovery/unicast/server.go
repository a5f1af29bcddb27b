package unicast

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/lifecycle"
)

// DefaultMaxConns caps concurrent unicast discovery connections: each is
// short, so this only bites under a flood.
const DefaultMaxConns = 64

// ServerConfig configures a unicast discovery server.
type ServerConfig struct {
	// Respond builds the response to a request that arrived on a
	// connection whose local (server-side) address is local.
	Respond func(req Request, local net.Addr) (*Response, error)
	// MaxConns caps connections served at once; more wait in the
	// kernel's backlog. 0 means DefaultMaxConns.
	MaxConns int
	// Timeout bounds one exchange; 0 means 10 s (a lookup service should
	// not wait the client's full minute).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Server answers unicast discovery on a listener.
type Server struct {
	cfg     ServerConfig
	ln      net.Listener
	sem     chan struct{}
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
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, ln: ln, sem: make(chan struct{}, cfg.MaxConns), ctx: ctx, stop: cancel}
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

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		// Take a slot before accepting: beyond the cap, connections wait
		// in the backlog instead of costing goroutines.
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		conn, err := s.ln.Accept()
		if err != nil {
			<-s.sem
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.cfg.Logger.Warn("accepting unicast discovery", "err", err)
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
			defer func() { <-s.sem }()
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

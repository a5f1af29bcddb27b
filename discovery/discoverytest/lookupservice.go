package discoverytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/namespace"
)

// LookupServiceConfig describes the lookup service.
type LookupServiceConfig struct {
	Version   int // 1 or 2: the only protocol it speaks
	ServiceID discovery.ServiceID
	Groups    []string
	// Registrar is what it hands out. Defaults to a jinid descriptor.
	Registrar discovery.Registrar
	Port      int // unicast port; 0 means 4160
	// Announce is the announcement interval; 0 means 1 s, negative never
	// (a lookup service found only by requests and unicast discovery).
	Announce  time.Duration
	Namespace namespace.Namespace
	Logger    *slog.Logger
}

// LookupService is a minimal lookup service on real sockets, built from
// jinid's codecs: it answers unicast discovery, announces itself, and
// answers multicast requests by connecting back, speaking one protocol
// version. It stands in for a Java (or jinid) lookup service on a netlab
// LAN.
type LookupService struct {
	cfg  LookupServiceConfig
	log  *slog.Logger
	ln   net.Listener
	host *mcast.Host
	tr   *mcast.Port

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	answered int // connect-backs made
	accepted int // unicast discovery connections taken
	seq      int64
}

// Start runs a lookup service until Close.
func StartLookupService(cfg LookupServiceConfig) (*LookupService, error) {
	if cfg.Version != 1 && cfg.Version != 2 {
		return nil, fmt.Errorf("discoverytest: version %d", cfg.Version)
	}
	if cfg.Port == 0 {
		cfg.Port = discovery.Port
	}
	if cfg.Announce == 0 {
		cfg.Announce = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registrar.Marshalled == nil && cfg.Registrar.Descriptor == nil {
		cfg.Registrar.Descriptor = &discovery.Descriptor{ServiceID: cfg.ServiceID, Groups: cfg.Groups, APIURL: "http://lookup.invalid:4162"}
	}
	l := &LookupService{cfg: cfg, log: cfg.Logger}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	err := cfg.Namespace.Do(func() error {
		var err error
		l.ln, err = net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("discoverytest: listening: %w", err)
	}
	if l.host, err = mcast.NewNetlinkHost(mcast.HostConfig{Namespace: cfg.Namespace, Logger: cfg.Logger}); err != nil {
		l.ln.Close()
		return nil, err
	}
	if err := l.host.Start(l.ctx); err != nil {
		l.ln.Close()
		l.host.Shutdown(context.Background())
		return nil, err
	}
	onMessage := func(m mcast.Message) {
		if m.Request != nil {
			l.onRequest(*m.Request, m.Packet)
		}
	}
	if l.tr, err = l.host.Open(mcast.PortConfig{OnMessage: onMessage}); err != nil {
		l.ln.Close()
		l.host.Shutdown(context.Background())
		return nil, err
	}
	l.wg.Add(1)
	go l.serve()
	if cfg.Announce > 0 {
		l.wg.Add(1)
		go l.announce()
	}
	return l, nil
}

// Close stops the lookup service and waits for it.
func (l *LookupService) Close() {
	l.cancel()
	l.ln.Close()
	l.tr.Close()
	l.host.Shutdown(context.Background())
	l.wg.Wait()
}

// ConnectBacks reports how many multicast requests it answered.
func (l *LookupService) ConnectBacks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered
}

// Contacts reports how many unicast discovery connections it took.
func (l *LookupService) Contacts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted
}

func (l *LookupService) respond(host string) func(unicast.Request) (*unicast.Response, error) {
	return func(q unicast.Request) (*unicast.Response, error) {
		if q.Version != l.cfg.Version {
			return nil, fmt.Errorf("fakelus speaks only version %d, asked in %d", l.cfg.Version, q.Version)
		}
		return &unicast.Response{
			Version: l.cfg.Version, Format: discovery.PlaintextFormat,
			Host: host, Port: l.cfg.Port, Groups: l.cfg.Groups, Registrar: l.cfg.Registrar,
		}, nil
	}
}

func (l *LookupService) serve() {
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.accepted++
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer conn.Close()
			host, _, _ := net.SplitHostPort(conn.LocalAddr().String())
			if err := unicast.Answer(l.ctx, conn, l.respond(host)); err != nil {
				l.log.Debug("discoverytest: unicast", "err", err)
			}
		}()
	}
}

func (l *LookupService) announce() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.Announce)
	defer t.Stop()
	for {
		l.mu.Lock()
		l.seq++
		seq := l.seq
		l.mu.Unlock()
		l.tr.Send(mcast.Announcements, func(j mcast.Joined) ([][]byte, error) {
			a := discovery.Announcement{Version: l.cfg.Version, Sequence: seq, Host: j.Addr.String(),
				Port: l.cfg.Port, ServiceID: l.cfg.ServiceID, Groups: l.cfg.Groups}
			return a.Encode(discovery.DefaultMaxPacketSize)
		})
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *LookupService) onRequest(r discovery.Request, p mcast.Packet) {
	if r.Version != l.cfg.Version || !r.Wants(l.cfg.ServiceID, l.cfg.Groups) {
		return
	}
	addr := net.JoinHostPort(p.Zoned(r.Host), strconv.Itoa(r.Port))
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
		defer cancel()
		conn, err := l.cfg.Namespace.DialContext(ctx, nil, "tcp", addr)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				l.log.Debug("discoverytest: connect-back", "to", addr, "err", err)
			}
			return
		}
		defer conn.Close()
		host, _, _ := net.SplitHostPort(conn.LocalAddr().String())
		if err := unicast.Answer(ctx, conn, l.respond(host)); err == nil {
			l.mu.Lock()
			l.answered++
			l.mu.Unlock()
		}
	}()
}

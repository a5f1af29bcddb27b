package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
)

// Sink takes what the network hears: announcements, and lookup services'
// answers to requests. A Discovery (or a Manager) is one.
type Sink interface {
	HandleAnnouncement(a discovery.Announcement, iface string)
	HandleResponse(resp *unicast.Response, iface string)
}

// LinkSink is a Sink that also hears which interfaces are served after
// each change of them: what was reached only over an interface no longer
// served is reached no more. A Discovery (or a Manager) is one.
type LinkSink interface {
	Sink
	HandleLinks(served []string)
}

// MulticastConfig configures Multicast.
type MulticastConfig struct {
	// Host is the namespace's multicast host, shared with whatever else
	// speaks multicast there. Required.
	Host *mcast.Host
	// Namespace is the host's: where answers are listened for and
	// lookup services dialed.
	Namespace namespace.Namespace
	// Versions of multicast request to send; nil means both.
	Versions []int
	Logger   *slog.Logger
}

// Multicast is group discovery's Network on a real host: requests sent
// and announcements heard through a handle on the namespace's multicast
// host, one TCP listener per protocol version for lookup services
// answering requests (so a connection's port tells which version it
// answers), and unicast discovery dialed from the namespace.
type Multicast struct {
	cfg    MulticastConfig
	log    *slog.Logger
	port   *mcast.Port
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// sink is set once, before Start: the engine it feeds is usually
	// made with this network, so it cannot be in the config.
	sink Sink

	mu       sync.Mutex
	lns      []net.Listener
	ports    map[int]int
	failures int // since the last logged
	loggedAt time.Time
	dropped  string // the groups last left out of requests (warnDropped)
}

// NewMulticast prepares the network; Start opens it.
func NewMulticast(cfg MulticastConfig) (*Multicast, error) {
	if cfg.Versions == nil {
		cfg.Versions = []int{discovery.ProtocolV2, discovery.ProtocolV1}
	}
	for _, v := range cfg.Versions {
		if v != discovery.ProtocolV1 && v != discovery.ProtocolV2 {
			return nil, fmt.Errorf("group: protocol version %d: want 1 or 2", v)
		}
	}
	if cfg.Host == nil {
		return nil, errors.New("group: MulticastConfig.Host is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Multicast{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, ports: map[int]int{}}, nil
}

// SetSink says who takes what the network hears; call it once, before
// Start.
func (m *Multicast) SetSink(s Sink) { m.sink = s }

// Start joins the discovery groups and listens for answers, handing all
// it hears to the sink.
func (m *Multicast) Start(context.Context) error {
	if m.sink == nil {
		return errors.New("group: Multicast started without a sink")
	}
	for _, v := range m.cfg.Versions {
		var ln net.Listener
		if err := m.cfg.Namespace.Do(func() error {
			var err error
			ln, err = net.Listen("tcp", ":0")
			return err
		}); err != nil {
			return fmt.Errorf("listening for lookup services' answers: %w", err)
		}
		ln = connlimit.Listener(ln, connlimit.Config{Max: answerConns, PerSource: answerConnsPerSource, Loopback: answerConnsPerSource})
		m.mu.Lock()
		m.lns = append(m.lns, ln)
		m.ports[v] = ln.Addr().(*net.TCPAddr).Port
		m.mu.Unlock()
		m.wg.Add(1)
		go m.accept(ln, v)
	}
	port, err := m.cfg.Host.Open(mcast.PortConfig{OnMessage: m.onMessage, OnChange: m.onLinks})
	if err != nil {
		return fmt.Errorf("joining the discovery groups: %w", err)
	}
	m.mu.Lock()
	m.port = port
	m.mu.Unlock()
	return nil
}

// Shutdown leaves the groups, stops listening and waits for answers
// being read.
func (m *Multicast) Shutdown(context.Context) error {
	m.cancel()
	m.mu.Lock()
	port := m.port
	m.mu.Unlock()
	var err error
	if port != nil {
		err = port.Close()
	}
	m.mu.Lock()
	for _, ln := range m.lns {
		ln.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

var _ lifecycle.Service = (*Multicast)(nil)

// Joined lists the interfaces served.
func (m *Multicast) Joined() []mcast.Joined {
	m.mu.Lock()
	port := m.port
	m.mu.Unlock()
	if port == nil {
		return nil
	}
	return port.Joined()
}

// Request implements Network: one request per version on every served
// interface, each naming that interface's address to answer to.
func (m *Multicast) Request(groups []string, known []discovery.ServiceID) error {
	m.mu.Lock()
	ports := maps.Clone(m.ports)
	port := m.port
	m.mu.Unlock()
	if port == nil {
		return errors.New("multicast requests before Start")
	}
	var errs []error
	for _, v := range m.cfg.Versions {
		err := port.Send(mcast.Requests, func(j mcast.Joined) ([][]byte, error) {
			r := discovery.Request{Version: v, Host: j.Addr.String(), Port: ports[v], Groups: groups, Known: known}
			if v == discovery.ProtocolV1 {
				r.Host = "" // the datagram's source says it
			}
			packets, dropped, err := requestPackets(r)
			if len(dropped) > 0 {
				m.warnDropped(dropped)
			}
			return packets, err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("version %d request: %w", v, err))
		}
	}
	return errors.Join(errs...)
}

// requestPackets encodes a request, leaving out the groups that fit no
// packet (names taken before names were checked, say): one such group
// must not stop the requests for all the others. If none is left, there
// is nothing to send (an empty list would ask every group).
func requestPackets(r discovery.Request) (packets [][]byte, dropped []string, err error) {
	packets, err = r.Encode(discovery.DefaultMaxPacketSize)
	if err == nil || len(r.Groups) == 0 {
		return packets, nil, err
	}
	var keep []string
	for _, g := range r.Groups {
		one := r
		one.Groups, one.Known = []string{g}, nil
		if _, err := one.Encode(discovery.DefaultMaxPacketSize); err != nil {
			dropped = append(dropped, g)
		} else {
			keep = append(keep, g)
		}
	}
	if len(dropped) == 0 {
		return nil, nil, err // not the groups' fault
	}
	if len(keep) == 0 {
		return nil, dropped, nil
	}
	r.Groups = keep
	packets, err = r.Encode(discovery.DefaultMaxPacketSize)
	return packets, dropped, err
}

// warnDropped says, once per set of groups, which groups requests leave
// out.
func (m *Multicast) warnDropped(groups []string) {
	key := strings.Join(groups, "\x00")
	m.mu.Lock()
	seen := m.dropped == key
	m.dropped = key
	m.mu.Unlock()
	if !seen {
		short := make([]string, len(groups))
		for i, g := range groups {
			short[i] = fmt.Sprintf("%.24q… (%d bytes)", g, len(g))
		}
		m.log.Warn("multicast requests leave out groups too long for a packet; the others are asked for", "groups", short)
	}
}

// Unicast implements Network: TCP from the namespace.
func (m *Multicast) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	return UnicastNetwork{Namespace: m.cfg.Namespace}.Unicast(ctx, host, port, version)
}

// onLinks tells a LinkSink the interfaces served after a change.
func (m *Multicast) onLinks() {
	ls, ok := m.sink.(LinkSink)
	if !ok {
		return
	}
	var served []string
	for _, j := range m.Joined() {
		if !slices.Contains(served, j.Name) {
			served = append(served, j.Name)
		}
	}
	ls.HandleLinks(served)
}

// Relayed takes an announcement another node of a cluster heard on its
// own segments (cmd/jinid/internal/app, "heard elsewhere"): the sink
// takes it as heard, over no interface of this host, so that the rules
// of discovery (contact, discard on silence) apply as to any other.
func (m *Multicast) Relayed(a discovery.Announcement) {
	m.sink.HandleAnnouncement(a, "")
}

// onMessage takes what the host heard: announcements go to the sink.
func (m *Multicast) onMessage(msg mcast.Message) {
	if msg.Announcement == nil {
		return
	}
	a := *msg.Announcement // shared with the host's other handles
	a.Host = msg.Zoned(a.Host)
	m.sink.HandleAnnouncement(a, msg.IfName)
}

// accept takes lookup services' connect-backs: the requester still speaks
// first, in the version of the request answered.
// The caps of the listeners lookup services connect back to: an answer
// is one short exchange.
const (
	answerConns          = 64
	answerConnsPerSource = 4
	answerTimeout        = 5 * time.Second
)

func (m *Multicast) accept(ln net.Listener, version int) {
	defer m.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if m.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait, and tell once in a while.
			m.note("accepting lookup services' answers", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-m.ctx.Done():
				return
			}
			continue
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(answerTimeout))
			m.answered(conn, version)
		}()
	}
}

// note logs a failure a remote host can cause, once per 10 s at most,
// with how many there were.
func (m *Multicast) note(what string, err error) {
	m.mu.Lock()
	m.failures++
	if time.Since(m.loggedAt) < 10*time.Second {
		m.mu.Unlock()
		return
	}
	n := m.failures
	m.loggedAt, m.failures = time.Now(), 0
	m.mu.Unlock()
	m.log.Info(what+" failed", "err", err, "failures", n)
}

func (m *Multicast) answered(conn net.Conn, version int) {
	resp, err := unicast.Discover(m.ctx, conn, version)
	if err != nil {
		if m.ctx.Err() == nil {
			m.note("unicast discovery with a lookup service that answered a request", fmt.Errorf("%s: %w", conn.RemoteAddr(), err))
		}
		return
	}
	if version == discovery.ProtocolV1 {
		// The peer's port is the one it connected from, not its unicast
		// port: a jinid descriptor says that; otherwise it stays unknown
		// (0) until an announcement tells. Its host stays the address it
		// reached this host from, zoned if link-local.
		resp.Port = 0
		if d := resp.Registrar.Descriptor; d != nil {
			if l, err := discovery.ParseLocator(d.Locator); err == nil {
				resp.Port = l.Port
			}
		}
	}
	m.sink.HandleResponse(resp, m.ifaceOf(conn.LocalAddr()))
}

// ifaceOf names the served interface that has local address a.
func (m *Multicast) ifaceOf(a net.Addr) string {
	ap, _ := netip.ParseAddrPort(a.String())
	return m.LinkOf(ap.Addr())
}

// LinkOf names the served interface whose link a is on: a link-local
// address's zone, or the interface one of whose subnets holds a; "" if
// none.
func (m *Multicast) LinkOf(a netip.Addr) string {
	m.mu.Lock()
	port := m.port
	m.mu.Unlock()
	if port == nil {
		return ""
	}
	return port.LinkOf(a)
}

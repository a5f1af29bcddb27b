package mcast

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/netmon"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
)

// Host is the multicast presence of one network namespace, shared by
// everything there that speaks multicast: the lookup service's announcer
// and request responder, group discovery (for the lookup discovery
// service, or a CLI command), mDNS. Each takes a Port handle. For each
// port in use the host keeps one transport, one socket per served
// interface and family, opened with the port's first handle and closed
// with its last. So each datagram is read once; on the Jini discovery
// port it is decoded once, into a Message handed to every handle.
type Host struct {
	cfg HostConfig
	log *slog.Logger

	mu     sync.Mutex
	ports  map[int]*hostPort
	nextID int
	closed bool
	// monitor starts and stops with the host when the host made it.
	monitor lifecycle.Service
}

// HostConfig configures a Host: what each port's transport is given.
type HostConfig struct {
	// Namespace to open sockets in; the zero value is the process's own.
	Namespace namespace.Namespace
	// Monitor reports interface changes in that namespace. Required.
	Monitor netmon.Monitor
	// Include, Exclude, ExcludeDefaultRoute, NoIPv4, NoIPv6, NoLoopback
	// and ReceiveLimit are as in transportConfig, for every port.
	Include, Exclude    []string
	ExcludeDefaultRoute bool
	NoIPv4, NoIPv6      bool
	NoLoopback          bool
	ReceiveLimit        int
	// TTL of the Jini discovery port's packets; 0 means 15. (Other ports
	// say theirs in PortConfig.)
	TTL int
	// DiscoveryPort is the Jini discovery port; 0 means 4160.
	DiscoveryPort int
	Logger        *slog.Logger
	// Metrics counts the discovery port's traffic, if set.
	Metrics *Metrics
	Now     func() time.Time
}

// Message is a Jini discovery datagram, decoded once for every handle:
// an announcement or a request (exactly one is set), and the packet it
// came in. Handles share it: they must not modify it, nor keep its
// slices past the call without copying them.
type Message struct {
	Announcement *discovery.Announcement
	Request      *discovery.Request
	Packet
}

// PortConfig says what a handle wants of a port.
type PortConfig struct {
	// Port is 0 for the Jini discovery port.
	Port int
	// Groups to join on the port; nil on the discovery port means the
	// four Jini discovery groups. Every handle of a port asks the same
	// groups (the first handle's are joined).
	Groups []netip.Addr
	// TTL of what this port sends; 0 means the host's.
	TTL int
	// OnMessage receives every discovery message (discovery port only);
	// OnPacket every datagram as it is (other ports). They are called on
	// the reading goroutine of a socket: they must not block for long.
	OnMessage func(Message)
	OnPacket  func(Packet)
	// OnChange is called after the served interfaces or their addresses
	// changed (a lookup service announces at once then).
	OnChange func()
	// OnLeave is called for each interface and family the port stops
	// serving, before its socket closes: send sends from it a last time.
	OnLeave func(j Joined, send func(dst netip.AddrPort, b []byte) error)
}

// hostPort is one port in use.
type hostPort struct {
	port    int
	tr      *transport
	handles atomic.Pointer[[]*Port] // copied on change: the read path takes no lock
}

// Port is a handle on one port of a Host.
type Port struct {
	h      *Host
	hp     *hostPort
	id     int
	cfg    PortConfig
	closed atomic.Bool
}

// ErrClosed is what opening a port of a host that is shut down returns.
var ErrClosed = errors.New("multicast host closed")

// NewHost checks cfg and returns a host; ports open as handles ask.
func NewHost(cfg HostConfig) (*Host, error) {
	if cfg.Monitor == nil {
		return nil, errors.New("mcast: HostConfig.Monitor is required")
	}
	if cfg.DiscoveryPort == 0 {
		cfg.DiscoveryPort = discovery.Port
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Check the shared settings once, as a transport would.
	probe := transportConfig{Monitor: cfg.Monitor, Handler: func(Packet) {}, Port: cfg.DiscoveryPort, TTL: cfg.TTL,
		NoIPv4: cfg.NoIPv4, NoIPv6: cfg.NoIPv6, Include: cfg.Include, Exclude: cfg.Exclude, ExcludeDefaultRoute: cfg.ExcludeDefaultRoute, ReceiveLimit: cfg.ReceiveLimit}
	if err := probe.setDefaults(); err != nil {
		return nil, err
	}
	return &Host{cfg: cfg, log: cfg.Logger, ports: map[int]*hostPort{}}, nil
}

// RescanEvery is how often a host's own interface monitor reads every
// interface afresh, whatever the kernel said.
const RescanEvery = 10 * time.Minute

// NewNetlinkHost returns a host with an interface monitor of its own,
// following cfg.Namespace through netlink (cfg.Monitor is ignored): Start
// starts the monitor, Shutdown stops both.
func NewNetlinkHost(cfg HostConfig) (*Host, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The kernel tells of every change; the full re-read only backs that
	// up (a lost subscription resubscribes and re-reads at once), so it
	// is rare: each one wakes every port of the host (idle CPU on a
	// router, issue 21).
	mon, err := netmon.NewNetlink(cfg.Namespace, log, RescanEvery)
	if err != nil {
		return nil, err
	}
	cfg.Monitor = mon
	h, err := NewHost(cfg)
	if err != nil {
		mon.Shutdown(context.Background())
		return nil, err
	}
	h.monitor = mon
	return h, nil
}

// Start starts the host's own interface monitor, if it has one, and
// joins the groups of the ports already open on the interfaces it found:
// once Start returns, Joined tells the truth (the start-up log and
// readiness rely on it). Ports open as handles ask.
func (h *Host) Start(ctx context.Context) error {
	if h.monitor == nil {
		return nil
	}
	if err := h.monitor.Start(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	var trs []*transport
	for _, hp := range h.ports {
		trs = append(trs, hp.tr)
	}
	h.mu.Unlock()
	for _, tr := range trs {
		if err := tr.sync(); err != nil {
			return fmt.Errorf("joining the discovery groups on the interfaces found: %w", err)
		}
	}
	return nil
}

// Shutdown closes every port, whatever handles are still open.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	ports := h.ports
	h.ports = map[int]*hostPort{}
	h.mu.Unlock()
	var errs []error
	for _, hp := range ports {
		errs = append(errs, hp.tr.Close())
	}
	if h.monitor != nil {
		errs = append(errs, h.monitor.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

var _ lifecycle.Service = (*Host)(nil)

// Open takes a handle on a port, opening the port if it is the first.
func (h *Host) Open(pc PortConfig) (*Port, error) {
	if pc.Port == 0 {
		pc.Port = h.cfg.DiscoveryPort
	}
	if pc.OnMessage != nil && pc.Port != h.cfg.DiscoveryPort {
		return nil, fmt.Errorf("mcast: OnMessage on port %d: decoded messages are the discovery port's", pc.Port)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	hp := h.ports[pc.Port]
	if hp == nil {
		var err error
		if hp, err = h.openPort(pc); err != nil {
			return nil, err
		}
		h.ports[pc.Port] = hp
	}
	h.nextID++
	p := &Port{h: h, hp: hp, id: h.nextID, cfg: pc}
	hp.setHandles(append(hp.list(), p))
	return p, nil
}

// openPort starts a port's transport; the caller holds mu.
func (h *Host) openPort(pc PortConfig) (*hostPort, error) {
	hp := &hostPort{port: pc.Port}
	hp.handles.Store(&[]*Port{})
	cfg := transportConfig{Port: pc.Port, Groups: pc.Groups, TTL: cmp.Or(pc.TTL, h.cfg.TTL),
		NoIPv4: h.cfg.NoIPv4, NoIPv6: h.cfg.NoIPv6, Include: h.cfg.Include, Exclude: h.cfg.Exclude, ExcludeDefaultRoute: h.cfg.ExcludeDefaultRoute,
		NoLoopback: h.cfg.NoLoopback, ReceiveLimit: h.cfg.ReceiveLimit, Namespace: h.cfg.Namespace,
		Monitor: h.cfg.Monitor, Logger: h.log, Now: h.cfg.Now, OnChange: hp.changed, OnLeave: hp.left, Handler: hp.deliverPacket,
		Quiet: pc.Port != h.cfg.DiscoveryPort}
	if pc.Port == h.cfg.DiscoveryPort {
		in := &Inbound{Metrics: h.cfg.Metrics,
			OnAnnouncement: func(a discovery.Announcement, p Packet) { hp.deliver(Message{Announcement: &a, Packet: p}) },
			OnRequest:      func(r discovery.Request, p Packet) { hp.deliver(Message{Request: &r, Packet: p}) }}
		cfg.Handler, cfg.Metrics = in.Handle, h.cfg.Metrics
	}
	tr, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	if err := tr.Start(); err != nil {
		return nil, fmt.Errorf("port %d: %w", pc.Port, err)
	}
	hp.tr = tr
	return hp, nil
}

func (hp *hostPort) list() []*Port { return slices.Clone(*hp.handles.Load()) }

func (hp *hostPort) setHandles(ps []*Port) { hp.handles.Store(&ps) }

// deliver hands a decoded message to every handle, decoded once.
func (hp *hostPort) deliver(m Message) {
	for _, p := range *hp.handles.Load() {
		if p.cfg.OnMessage != nil {
			p.cfg.OnMessage(m)
		}
	}
}

func (hp *hostPort) deliverPacket(pk Packet) {
	for _, p := range *hp.handles.Load() {
		if p.cfg.OnPacket != nil {
			p.cfg.OnPacket(pk)
		}
	}
}

func (hp *hostPort) changed() {
	for _, p := range *hp.handles.Load() {
		if p.cfg.OnChange != nil {
			p.cfg.OnChange()
		}
	}
}

func (hp *hostPort) left(j Joined, send func(netip.AddrPort, []byte) error) {
	for _, p := range *hp.handles.Load() {
		if p.cfg.OnLeave != nil {
			p.cfg.OnLeave(j, send)
		}
	}
}

// Close gives the handle back; the port closes with its last handle.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	h := p.h
	h.mu.Lock()
	handles := slices.DeleteFunc(p.hp.list(), func(o *Port) bool { return o == p })
	p.hp.setHandles(handles)
	last := len(handles) == 0 && h.ports[p.hp.port] == p.hp
	if last {
		delete(h.ports, p.hp.port)
	}
	h.mu.Unlock()
	if last {
		return p.hp.tr.Close()
	}
	return nil
}

// Joined lists the interfaces and families the port serves now.
func (p *Port) Joined() []Joined { return p.hp.tr.Joined() }

// IsLocal says whether a is an address of one of the host's interfaces,
// served or not.
func (p *Port) IsLocal(a netip.Addr) bool { return p.hp.tr.IsLocal(a) }

// LinkOf names the served interface whose link a is on; see
// transport.LinkOf.
func (p *Port) LinkOf(a netip.Addr) string { return p.hp.tr.LinkOf(a) }

// Send sends to a Jini discovery group on every served interface; see
// transport.Send.
func (p *Port) Send(g Group, build func(Joined) ([][]byte, error)) error {
	return p.hp.tr.Send(g, build)
}

// SendTo sends to any group on every served interface; see
// transport.SendTo.
func (p *Port) SendTo(dst func(family int) netip.Addr, build func(Joined) ([][]byte, error)) error {
	return p.hp.tr.SendTo(dst, build)
}

// SendOn sends to a group on one served interface and family.
func (p *Port) SendOn(j Joined, g Group, build func(Joined) ([][]byte, error)) error {
	return p.hp.tr.SendOn(j, g, build)
}

// SendReply sends a unicast reply out of one interface's socket.
func (p *Port) SendReply(ifIndex, family int, dst netip.AddrPort, b []byte) error {
	return p.hp.tr.SendReply(ifIndex, family, dst, b)
}

// Decisions says of every interface the host sees now whether it is
// eligible for multicast discovery and why, as Decide does (the status
// page's interface list).
func (h *Host) Decisions() ([]Decision, error) {
	h.mu.Lock()
	cfg := h.cfg
	h.mu.Unlock()
	st, err := cfg.Monitor.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("reading the interfaces: %w", err)
	}
	return Decide(st, cfg)
}

// SetSelection changes which interfaces every port serves (a reload):
// sockets on interfaces still served stay open, the others close, new
// ones open, each logged as at start.
func (h *Host) SetSelection(sel Selection) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg.Include, h.cfg.Exclude, h.cfg.ExcludeDefaultRoute = sel.Include, sel.Exclude, sel.ExcludeDefaultRoute
	for _, hp := range h.ports {
		hp.tr.setSelection(sel)
	}
}

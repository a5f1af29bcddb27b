// Package mcast is jinid's multicast presence: one Host per network
// namespace, shared by everything there that speaks multicast (the Jini
// discovery protocols on port 4160, mDNS on 5353). For each port in use
// it keeps one socket per suitable interface and family (see
// shared/design/MULTICAST.md), follows the interfaces as they come and go,
// reads each datagram once, and reports it with the interface it arrived
// on; Jini discovery datagrams are decoded once, for every subscriber.
package mcast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/netmon"
	"github.com/jinid/jinid/internal/namespace"
)

// Group is one of the two discovery multicast groups.
type Group int

const (
	// Requests is where discovering entities ask (224.0.1.85, ff05::156).
	Requests Group = iota
	// Announcements is where lookup services announce (224.0.1.84,
	// ff05::155).
	Announcements
)

func (g Group) String() string {
	if g == Requests {
		return "requests"
	}
	return "announcements"
}

// Addr returns the group's address in a family (4 or 6).
func (g Group) Addr(family int) netip.Addr {
	switch {
	case g == Requests && family == 4:
		return discovery.RequestGroupV4
	case g == Requests:
		return discovery.RequestGroupV6
	case family == 4:
		return discovery.AnnouncementGroupV4
	default:
		return discovery.AnnouncementGroupV6
	}
}

// DefaultExclude are interfaces people rarely want discovery on: container
// and VM plumbing (Docker's own bridges are br- and 12 hex digits, so a
// router's br-lan is kept), VPNs, and a router's WAN port. Loopback is
// never used (it cannot multicast). An interface named in --interfaces
// is served whatever these say.
var DefaultExclude = []string{"docker*", "br-????????????", "veth*", "virbr*", "lxcbr*", "lxdbr*", "cni*", "flannel*", "cali*",
	"vmnet*", "vboxnet*", "tun*", "tap*", "wg*", "zt*", "tailscale*", "wan*"}

// Defaults.
const (
	DefaultTTL          = 15
	DefaultReceiveLimit = 8 << 10
)

// Packet is one datagram received.
type Packet struct {
	Data []byte
	Src  netip.AddrPort
	// Dst is the address it was sent to: one of the discovery groups, or
	// a unicast address of this host.
	Dst     netip.Addr
	IfIndex int
	IfName  string
	Family  int
	At      time.Time
	// Subnets are the receiving interface's prefixes, as the monitor
	// last saw them (shared: read only).
	Subnets []netip.Prefix
}

// OnLink reports whether a is on the receiving interface's link: in one
// of its subnets, or link-local. A host that sent from elsewhere forged
// its source, or is no neighbour to answer.
func (p Packet) OnLink(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLinkLocalUnicast() {
		return true
	}
	for _, s := range p.Subnets {
		if s.Contains(a.WithZone("")) {
			return true
		}
	}
	return false
}

// transportConfig configures a transport.
type transportConfig struct {
	// Port defaults to 4160.
	Port int
	// Groups to join on every interface; nil means the four Jini
	// discovery groups. (mDNS uses the transport with its own.)
	Groups []netip.Addr
	// NoIPv4 and NoIPv6 turn a family off.
	NoIPv4, NoIPv6 bool
	// Include, if not empty, limits the transport to interfaces whose name
	// matches one of these patterns (path.Match syntax: eth*, wlan0).
	Include []string
	// Exclude skips interfaces matching any of these patterns; nil means
	// DefaultExclude, an empty slice excludes nothing.
	Exclude []string
	// ExcludeDefaultRoute skips interfaces a default route goes out of
	// (a router's WAN, whatever its name), unless named in Include.
	ExcludeDefaultRoute bool
	// TTL (IPv6: hop limit) of packets sent; 0 means 15.
	TTL int
	// NoLoopback stops this host's own sockets hearing what it sends.
	NoLoopback bool
	// ReceiveLimit drops datagrams longer than this many bytes before
	// decoding (0 means 8 KiB): a lookup service's packets are 512 bytes
	// unless configured larger.
	ReceiveLimit int

	// Namespace to open sockets in; the zero value is the process's own.
	Namespace namespace.Namespace
	// Monitor reports interface changes in that namespace. Required.
	Monitor netmon.Monitor
	// Handler receives every datagram, from one goroutine per socket.
	// Required. It may keep p.Data.
	Handler func(p Packet)
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Quiet logs the interfaces and the groups joined at debug: a port
	// beside the discovery port (mDNS's) serves the same interfaces,
	// which the discovery port's lines say once.
	Quiet bool
	// Metrics, if set, counts what the transport does.
	Metrics *Metrics
	// Clock: defaults to time.Now.
	Now func() time.Time
	// OnChange, if set, is called after the served interfaces or their
	// addresses changed (a lookup service announces at once then).
	OnChange func()
	// OnLeave, if set, is called for each interface and family the
	// transport stops serving, before its socket closes, with a way to
	// send from it a last time (an mDNS goodbye).
	OnLeave func(j Joined, send func(dst netip.AddrPort, b []byte) error)

	// keepMulticastAll leaves IP_MULTICAST_ALL as the kernel has it, as a
	// kernel without the option does (tests of the filter that stands
	// in for it).
	keepMulticastAll bool
}

func (c *transportConfig) setDefaults() error {
	if c.Monitor == nil {
		return errors.New("mcast: transportConfig.Monitor is required")
	}
	if c.Handler == nil {
		return errors.New("mcast: transportConfig.Handler is required")
	}
	if c.Port == 0 {
		c.Port = discovery.Port
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("mcast: port %d out of range 1-65535", c.Port)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < 1 || c.TTL > 255 {
		return fmt.Errorf("mcast: TTL %d out of range 1-255", c.TTL)
	}
	if c.NoIPv4 && c.NoIPv6 {
		return errors.New("mcast: both IPv4 and IPv6 are turned off")
	}
	if c.Exclude == nil {
		c.Exclude = DefaultExclude
	}
	for _, p := range append(slices.Clone(c.Include), c.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("mcast: interface pattern %q: %w", p, err)
		}
	}
	if c.ReceiveLimit == 0 {
		c.ReceiveLimit = DefaultReceiveLimit
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Joined describes one (interface, family) the transport serves.
type Joined struct {
	Index  int
	Name   string
	Family int
	// Addr is the interface's preferred address of the family: what a
	// lookup service on this interface puts in its announcements.
	Addr netip.Addr
}

type sockKey struct{ index, family int }

type sock struct {
	key  sockKey
	ifc  netmon.Interface
	conn groupConn
	// filtered: the kernel hands this socket every group any socket of
	// the host joined, on any interface (no IP_MULTICAST_ALL); read
	// drops what is not its own: another interface's, or not among the
	// groups it joined.
	filtered bool
	groups   []netip.Addr
}

// transport is one port of a Host: one socket per served interface and
// family, following the interfaces as they come and go.
type transport struct {
	cfg transportConfig
	log *slog.Logger

	mu      sync.Mutex
	socks   map[sockKey]*sock
	reasons map[int]string // why each interface is (not) served, as last logged
	// warnedNone: the transport serves no interface and has said so.
	warnedNone bool
	// filtering: its sockets hear every group (no IP_MULTICAST_ALL), and
	// it has said so.
	filtering bool
	names     map[int]string
	subnets   map[int][]netip.Prefix

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// synced is signalled after every sync, for tests that wait for one.
	synced chan struct{}
	// resync asks for a sync: the monitor saw a change (it pauses after
	// notifications itself, taking in bursts), or a send found an
	// interface gone. One slot: pending requests coalesce.
	resync      chan struct{}
	unsubscribe func()
	// sel is the interface selection, which a reload may change.
	sel atomic.Pointer[Selection]
}

// Selection says which interfaces serve multicast discovery: Include
// and Exclude are name patterns (a nil Exclude, the defaults), and
// ExcludeDefaultRoute leaves out an interface a default route goes out
// of unless Include names it.
type Selection struct {
	Include, Exclude    []string
	ExcludeDefaultRoute bool
}

// New checks cfg and returns a transport ready to Start.
func newTransport(cfg transportConfig) (*transport, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	t := &transport{
		cfg:     cfg,
		log:     cfg.Logger,
		socks:   make(map[sockKey]*sock),
		reasons: make(map[int]string),
		names:   make(map[int]string),
		synced:  make(chan struct{}, 1),
		resync:  make(chan struct{}, 1),
	}
	t.sel.Store(&Selection{Include: cfg.Include, Exclude: cfg.Exclude, ExcludeDefaultRoute: cfg.ExcludeDefaultRoute})
	return t, nil
}

// setSelection changes the interface selection and has the sockets
// follow: those of interfaces still served stay open.
func (t *transport) setSelection(sel Selection) {
	if sel.Exclude == nil {
		sel.Exclude = DefaultExclude
	}
	t.sel.Store(&sel)
	t.requestSync()
}

// Start joins the groups on the current interfaces, then follows changes
// until Close. An error reading the interfaces at start is returned; later
// ones are logged and retried on the next change.
func (t *transport) Start() error {
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.unsubscribe = t.cfg.Monitor.Subscribe(func(netmon.Delta) { t.requestSync() })
	if err := t.sync(); err != nil {
		t.unsubscribe()
		t.cancel()
		return err
	}
	t.wg.Add(1)
	go t.follow()
	return nil
}

// Close leaves every group, closes every socket and waits for the
// transport's goroutines to end.
func (t *transport) Close() error {
	if t.cancel == nil {
		return nil
	}
	t.unsubscribe()
	t.cancel()
	t.mu.Lock()
	for k, s := range t.socks {
		s.conn.Close()
		delete(t.socks, k)
	}
	t.cfg.Metrics.setJoined(t.socks)
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

func (t *transport) requestSync() {
	select {
	case t.resync <- struct{}{}:
	default:
	}
}

// follow re-reads the interfaces after each change.
func (t *transport) follow() {
	defer t.wg.Done()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-t.resync:
		}
		if err := t.sync(); err != nil {
			t.log.Warn("reading network interfaces failed; will retry on the next change", "err", err)
		}
	}
}

// eligible says whether an interface should be served, and why not.
func (t *transport) eligible(ifc netmon.Interface) (bool, string) {
	switch {
	case ifc.Flags&net.FlagLoopback != 0:
		return false, "loopback"
	case ifc.Flags&net.FlagMulticast == 0:
		return false, "not multicast-capable"
	case !ifc.IsUp():
		return false, "down"
	}
	sel := t.sel.Load()
	// Named outright (not by a pattern), it is wanted whatever the
	// exclusions say.
	if slices.Contains(sel.Include, ifc.Name) {
		return true, ""
	}
	for _, p := range sel.Exclude {
		if ok, _ := path.Match(p, ifc.Name); ok {
			return false, "excluded by pattern " + p
		}
	}
	if sel.ExcludeDefaultRoute && ifc.DefaultRoute {
		return false, "has the default route (--exclude-default-route)"
	}
	if len(sel.Include) > 0 && !slices.ContainsFunc(sel.Include, func(p string) bool {
		ok, _ := path.Match(p, ifc.Name)
		return ok
	}) {
		return false, "not matched by --interfaces"
	}
	return true, ""
}

// Decision is what the interface selection makes of one interface.
type Decision struct {
	Interface netmon.Interface
	// Families served on it (4, 6); none: not served.
	Families []int
	// Reason says why, as the start-up log does: "served (IPv4, IPv6)",
	// "excluded by pattern wan*", "down", ...
	Reason string
}

// decide says whether and in which families ifc is served, and why.
func (t *transport) decide(ifc netmon.Interface) Decision {
	d := Decision{Interface: ifc}
	ok, why := t.eligible(ifc)
	if !ok {
		d.Reason = why
		return d
	}
	var fams []string
	for _, f := range t.families() {
		if ifc.HasFamily(f) {
			d.Families = append(d.Families, f)
			fams = append(fams, fmt.Sprintf("IPv%d", f))
		}
	}
	d.Reason = "no address of a served family"
	if len(fams) > 0 {
		d.Reason = "served (" + strings.Join(fams, ", ") + ")"
	}
	return d
}

// told is the level of the interface lines: info, or debug for a quiet
// port (transportConfig.Quiet).
func (t *transport) told() slog.Level {
	if t.cfg.Quiet {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// Decide says what a Host configured as cfg makes of each interface of
// st, by index: what `jinid daemon --print-interfaces` shows, and what
// the start-up log says interface by interface.
func Decide(st netmon.State, cfg HostConfig) ([]Decision, error) {
	tr, err := newTransport(transportConfig{Monitor: netmon.NewStatic(st), Handler: func(Packet) {},
		NoIPv4: cfg.NoIPv4, NoIPv6: cfg.NoIPv6, Include: cfg.Include, Exclude: cfg.Exclude, ExcludeDefaultRoute: cfg.ExcludeDefaultRoute})
	if err != nil {
		return nil, err
	}
	out := make([]Decision, 0, len(st))
	for _, ifc := range st {
		out = append(out, tr.decide(ifc))
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool { return out[i].Interface.Index < out[j].Interface.Index })
	return out, nil
}

// families are the address families served: those not turned off that
// have a group to join.
func (t *transport) families() []int {
	var f []int
	if !t.cfg.NoIPv4 && len(t.groups(4)) > 0 {
		f = append(f, 4)
	}
	if !t.cfg.NoIPv6 && len(t.groups(6)) > 0 {
		f = append(f, 6)
	}
	return f
}

// sync makes the open sockets match the interfaces.
func (t *transport) sync() error {
	changed, err := t.syncSockets()
	if changed && t.cfg.OnChange != nil {
		t.cfg.OnChange()
	}
	return err
}

func (t *transport) syncSockets() (changed bool, err error) {
	st, err := t.cfg.Monitor.Snapshot()
	if err != nil {
		return false, err
	}
	want := make(map[sockKey]netmon.Interface)
	reasons := make(map[int]string)
	names := make(map[int]string)
	subnets := make(map[int][]netip.Prefix)
	for _, ifc := range st {
		names[ifc.Index] = ifc.Name
		subnets[ifc.Index] = ifc.Addrs
		d := t.decide(ifc)
		for _, f := range d.Families {
			want[sockKey{ifc.Index, f}] = ifc
		}
		reasons[ifc.Index] = d.Reason
	}

	// Sockets left are closed after the lock is released, each once
	// OnLeave has had its last word on it.
	var leaving []*sock
	defer func() {
		for _, s := range leaving {
			if t.cfg.OnLeave != nil {
				t.cfg.OnLeave(s.joined(), func(dst netip.AddrPort, b []byte) error { return s.conn.write(b, dst) })
			}
			s.conn.Close()
			t.log.Log(context.Background(), t.told(), "left discovery groups", "interface", s.ifc.Name, "family", s.key.family)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return false, nil
	}
	t.names, t.subnets = names, subnets
	told := t.told()
	for idx, why := range reasons {
		if t.reasons[idx] != why {
			t.log.Log(context.Background(), told, "interface", "name", names[idx], "index", idx, "discovery", why)
		}
	}
	t.reasons = reasons

	for k, s := range t.socks {
		if _, ok := want[k]; !ok {
			changed = true
			delete(t.socks, k)
			leaving = append(leaving, s)
		}
	}
	for k, ifc := range want {
		if s, ok := t.socks[k]; ok {
			if !slices.Equal(s.ifc.Addrs, ifc.Addrs) {
				changed = true
				t.log.Log(context.Background(), told, "interface addresses changed", "interface", ifc.Name, "addrs", ifc.Addrs)
			}
			s.ifc = ifc
			continue
		}
		s, err := t.open(k, ifc)
		if err != nil {
			// Not fatal: retried at the next change or rescan.
			t.log.Warn("cannot join discovery groups", "interface", ifc.Name, "family", k.family, "err", err)
			continue
		}
		t.socks[k] = s
		changed = true
		t.wg.Add(1)
		go t.read(s)
		t.log.Log(context.Background(), told, "joined discovery groups", "interface", ifc.Name, "family", k.family)
	}
	t.cfg.Metrics.setJoined(t.socks)
	if len(t.socks) == 0 && !t.warnedNone {
		t.log.Warn("no interface to multicast on: discovery waits for one (the interface lines say why each is not served; see --interfaces)",
			"port", t.cfg.Port)
	}
	t.warnedNone = len(t.socks) == 0
	select {
	case t.synced <- struct{}{}:
	default:
	}
	return changed, nil
}

func (t *transport) open(k sockKey, ifc netmon.Interface) (*sock, error) {
	c, filtered, err := listen(t.ctx, t.cfg.Namespace, k.family, t.cfg.Port, t.cfg.keepMulticastAll)
	if err != nil {
		return nil, err
	}
	if filtered && !t.filtering {
		t.filtering = true
		t.log.Info("multicast sockets cannot be kept to their own groups here (no IP_MULTICAST_ALL: a Linux before 4.20 for IPv6, or qemu-user): each drops what arrives on another interface or for another group",
			"family", k.family)
	}
	ifi := &net.Interface{Index: ifc.Index, Name: ifc.Name}
	groups := t.groups(k.family)
	for _, g := range groups {
		if err := c.join(ifi, g); err != nil {
			c.Close()
			return nil, fmt.Errorf("joining %s on %s: %w", g, ifc.Name, err)
		}
	}
	if err := c.setup(ifi, t.cfg.TTL, !t.cfg.NoLoopback); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", ifc.Name, err)
	}
	return &sock{key: k, ifc: ifc, conn: c, filtered: filtered, groups: groups}, nil
}

// groups returns the groups to join in a family.
func (t *transport) groups(family int) []netip.Addr {
	if t.cfg.Groups == nil {
		return []netip.Addr{Requests.Addr(family), Announcements.Addr(family)}
	}
	var out []netip.Addr
	for _, g := range t.cfg.Groups {
		if (family == 4) == g.Is4() {
			out = append(out, g)
		}
	}
	return out
}

// read delivers a socket's datagrams until the socket is closed. A socket
// that keeps failing is dropped, not spun on: the next sync opens a new one.
func (t *transport) read(s *sock) {
	defer t.wg.Done()
	buf := make([]byte, 64<<10)
	failures := 0
	for {
		n, idx, dst, src, err := s.conn.read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || t.ctx.Err() != nil {
				return
			}
			t.cfg.Metrics.countDropped(t.nameOf(s.key.index), "read_error")
			failures++
			if failures >= 10 {
				t.log.Warn("dropping a failing socket; it is reopened on the next interface change", "interface", t.nameOf(s.key.index), "err", err)
				t.drop(s)
				return
			}
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		failures = 0
		if s.filtered && (idx != 0 && idx != s.key.index || dst.IsMulticast() && !slices.Contains(s.groups, dst)) {
			// Another interface's (its own socket has it too), or a
			// group another socket joined: what IP_MULTICAST_ALL off
			// would not have delivered.
			continue
		}
		if idx == 0 {
			idx = s.key.index
		}
		// The socket's fields change under mu as interfaces do: what the
		// packet needs is read under it.
		t.mu.Lock()
		name, subnets := t.names[idx], t.subnets[idx]
		t.mu.Unlock()
		t.cfg.Metrics.countReceived(name, s.key.family)
		if n > t.cfg.ReceiveLimit {
			t.cfg.Metrics.countDropped(name, "oversized")
			continue
		}
		t.cfg.Handler(Packet{
			Data: append([]byte(nil), buf[:n]...), Src: src, Dst: dst,
			IfIndex: idx, IfName: name, Family: s.key.family, At: t.cfg.Now(), Subnets: subnets,
		})
	}
}

// nameOf is the name of interface idx, as last seen.
func (t *transport) nameOf(idx int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[idx]
}

func (t *transport) drop(s *sock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.socks[s.key] == s {
		delete(t.socks, s.key)
		t.cfg.Metrics.setJoined(t.socks)
	}
	s.conn.Close()
}

// target is an open socket with what it serves, read under the lock.
type target struct {
	s *sock
	j Joined
}

// served returns the open sockets, ordered by interface and family.
func (t *transport) served() []target {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]target, 0, len(t.socks))
	for _, s := range t.socks {
		out = append(out, target{s, s.joined()})
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].j, out[j].j
		return a.Index < b.Index || a.Index == b.Index && a.Family < b.Family
	})
	return out
}

// joined describes s; call with t.mu held.
func (s *sock) joined() Joined {
	a, _ := s.ifc.Addr(s.key.family)
	return Joined{Index: s.key.index, Name: s.ifc.Name, Family: s.key.family, Addr: a}
}

// Joined lists the interfaces and families served now, by index.
func (t *transport) Joined() []Joined {
	var out []Joined
	for _, x := range t.served() {
		out = append(out, x.j)
	}
	return out
}

// IsLocal says whether a is an address of one of the host's interfaces,
// served or not, as last read: a packet of this host's own, looped back
// while an interface is being left, carries one.
func (t *transport) IsLocal(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ps := range t.subnets {
		if slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Addr().WithZone("") == a }) {
			return true
		}
	}
	return false
}

// LinkOf names the served interface whose link a is on: a link-local
// address's zone, or the interface one of whose subnets holds a; "" if
// none.
func (t *transport) LinkOf(a netip.Addr) string {
	a = a.Unmap()
	if a.IsLinkLocalUnicast() {
		return a.Zone()
	}
	a = a.WithZone("")
	t.mu.Lock()
	defer t.mu.Unlock()
	best := ""
	bestIndex := 0
	for k, s := range t.socks {
		if (best == "" || k.index < bestIndex) && slices.ContainsFunc(s.ifc.Addrs, func(p netip.Prefix) bool { return p.Contains(a) }) {
			best, bestIndex = s.ifc.Name, k.index
		}
	}
	return best
}

// Send sends to group on every served interface. build returns the packets
// for one interface (so they can carry that interface's address); a nil
// result skips it. Failures on some interfaces do not stop the others; they
// are returned together. An interface that goes away meanwhile is skipped.
func (t *transport) Send(g Group, build func(Joined) ([][]byte, error)) error {
	return t.SendTo(func(family int) netip.Addr { return g.Addr(family) }, build)
}

// SendTo is Send to any group: dst gives the group's address in a family
// (an invalid address skips that family).
func (t *transport) SendTo(dst func(family int) netip.Addr, build func(Joined) ([][]byte, error)) error {
	var errs []error
	for _, x := range t.served() {
		if !dst(x.j.Family).IsValid() {
			continue
		}
		if err := t.send(x, dst(x.j.Family), build); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SendOn sends to group on one served interface and family.
func (t *transport) SendOn(j Joined, g Group, build func(Joined) ([][]byte, error)) error {
	t.mu.Lock()
	s := t.socks[sockKey{j.Index, j.Family}]
	var x target
	if s != nil {
		x = target{s, s.joined()}
	}
	t.mu.Unlock()
	if s == nil {
		return fmt.Errorf("interface %s (IPv%d) is not served", j.Name, j.Family)
	}
	return t.send(x, g.Addr(j.Family), build)
}

// SendReply sends packets to one address (a unicast reply) out of the
// socket of an interface and family.
func (t *transport) SendReply(ifIndex, family int, dst netip.AddrPort, p []byte) error {
	t.mu.Lock()
	s := t.socks[sockKey{ifIndex, family}]
	t.mu.Unlock()
	if s == nil {
		return fmt.Errorf("interface %d (IPv%d) is not served", ifIndex, family)
	}
	return s.conn.write(p, dst)
}

func (t *transport) send(x target, group netip.Addr, build func(Joined) ([][]byte, error)) error {
	s, j := x.s, x.j
	packets, err := build(j)
	if err != nil {
		return fmt.Errorf("building packets for %s: %w", j.Name, err)
	}
	dst := netip.AddrPortFrom(group, uint16(t.cfg.Port))
	for _, p := range packets {
		if err := s.conn.write(p, dst); err != nil {
			if interfaceGone(err) {
				// Removed or downed since the last sync (or its socket
				// closed by one): not served any more, so nothing failed.
				t.log.Debug("interface went away while sending", "interface", j.Name, "err", err)
				t.requestSync()
				return nil
			}
			t.cfg.Metrics.countSendError(j.Name, j.Family)
			return fmt.Errorf("sending to %s on %s: %w", dst, j.Name, err)
		}
		t.cfg.Metrics.countSent(j.Name, j.Family, p, group)
	}
	return nil
}

// waitSync blocks until the next sync completes or ctx ends; for tests.
func (t *transport) waitSync(ctx context.Context) error {
	select {
	case <-t.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// interfaceGone tells errors that mean the interface no longer exists or
// is down.
func interfaceGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENXIO) ||
		errors.Is(err, syscall.ENETDOWN) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, syscall.EADDRNOTAVAIL)
}

// Zoned returns host ready to dial: an IPv6 link-local address is only
// meaningful on the link it was heard on, so it gets the packet's arrival
// interface as its zone, replacing any the sender wrote (its own
// interface's name). See discovery.WithZone.
func (p Packet) Zoned(host string) string { return discovery.WithZone(host, p.IfName) }

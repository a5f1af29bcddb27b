package mcast

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/ipv4"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/netmon"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// warnCounter is a slog handler that counts records at Warn and above.
type warnCounter struct {
	n    atomic.Int64
	mu   sync.Mutex
	msgs []string
}

func (w *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.n.Add(1)
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// node is a transport running in a lab host, collecting what it receives.
type node struct {
	t       *testing.T
	host    *netlab.Host
	tr      *transport
	metrics *Metrics
	warns   *warnCounter
	got     chan Packet
	pending []Packet
}

func startNode(t *testing.T, h *netlab.Host, mod func(*transportConfig)) *node {
	t.Helper()
	mon, err := netmon.NewNetlink(h.Namespace(), slog.New(slog.DiscardHandler), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Shutdown(context.Background()) })
	if err := mon.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(metrics.New())
	n := &node{t: t, host: h, metrics: m, warns: &warnCounter{}, got: make(chan Packet, 100000)}
	cfg := transportConfig{
		Namespace: h.Namespace(), Monitor: mon, Metrics: m,
		Logger:  slog.New(n.warns),
		Handler: func(p Packet) { n.got <- p },
	}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := newTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	n.tr = tr
	// A veth's carrier may come up just after it is attached: wait until
	// every link is joined in every family, as the test means it to be.
	fams := 2
	if cfg.NoIPv4 || cfg.NoIPv6 {
		fams = 1
	}
	testenv.Until(t, h.Name+" joined on every link and family", func() bool { return len(tr.Joined()) >= fams*len(h.Links()) })
	noLinks := len(h.Links()) == 0
	t.Cleanup(func() {
		tr.Close()
		n.warns.mu.Lock()
		defer n.warns.mu.Unlock()
		var unexpected []string
		for _, m := range n.warns.msgs {
			// A host started with no link is told so: expected.
			if !(noLinks && strings.HasPrefix(m, noInterface)) {
				unexpected = append(unexpected, m)
			}
		}
		if len(unexpected) > 0 {
			t.Errorf("%s logged %d warnings: %q", h.Name, len(unexpected), unexpected)
		}
	})
	return n
}

const noInterface = "no interface to multicast on"

// warned says whether w has logged a warning starting with prefix.
func (w *warnCounter) warned(prefix string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.msgs, func(m string) bool { return strings.HasPrefix(m, prefix) })
}

func same(payload []byte) func(Joined) ([][]byte, error) {
	return func(Joined) ([][]byte, error) { return [][]byte{payload}, nil }
}

// next returns the first packet (kept from earlier or newly arrived)
// that match accepts, keeping the others for later calls.
func (n *node) next(match func(Packet) bool, wait time.Duration) (Packet, bool) {
	for i, p := range n.pending {
		if match(p) {
			n.pending = slices.Delete(n.pending, i, i+1)
			return p, true
		}
	}
	timeout := time.After(wait)
	for {
		select {
		case p := <-n.got:
			if match(p) {
				return p, true
			}
			n.pending = append(n.pending, p)
		case <-timeout:
			return Packet{}, false
		}
	}
}

// expect waits for a packet with the payload over dst's family and checks
// where it came from and in on.
func (n *node) expect(payload string, src netip.Addr, ifName string, dst netip.Addr) Packet {
	n.t.Helper()
	p, ok := n.next(func(p Packet) bool { return string(p.Data) == payload && p.Dst.Is4() == dst.Is4() }, 5*time.Second)
	if !ok {
		n.t.Fatalf("%s: %q from %s never arrived", n.host.Name, payload, src)
	}
	if p.Src.Addr() != src || p.IfName != ifName || p.Dst != dst || p.Src.Port() != discovery.Port {
		n.t.Fatalf("%s: %q from %s on %s to %s; want from %s:4160 on %s to %s", n.host.Name, payload, p.Src, p.IfName, p.Dst, src, ifName, dst)
	}
	return p
}

// expectNone checks that no packet with the payload arrives for a while.
func (n *node) expectNone(payload string) {
	n.t.Helper()
	if p, ok := n.next(func(p Packet) bool { return string(p.Data) == payload }, 300*time.Millisecond); ok {
		n.t.Fatalf("%s: %q arrived from %s on %s but should not have", n.host.Name, payload, p.Src, p.IfName)
	}
}

func TestHostsHearEachOther(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	var hosts []*netlab.Host
	var nodes []*node
	for _, name := range []string{"a", "b", "c"} {
		h := lab.Host(name)
		h.Attach(lan)
		hosts = append(hosts, h)
		nodes = append(nodes, startNode(t, h, nil))
	}
	a := hosts[0].Links()[0]
	if err := nodes[0].tr.Send(Announcements, same([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		n.expect("hello", a.IPv4, "eth0", discovery.AnnouncementGroupV4)
		n.expect("hello", a.IPv6, "eth0", discovery.AnnouncementGroupV6)
	}
	// Requests go to the other group.
	if err := nodes[1].tr.Send(Requests, same([]byte("who is there"))); err != nil {
		t.Fatal(err)
	}
	nodes[2].expect("who is there", hosts[1].Links()[0].IPv4, "eth0", discovery.RequestGroupV4)
	if got := nodes[0].metrics.sent.Get("eth0", "ipv4", "other", "unknown"); got != 1 {
		t.Errorf("sent ipv4 = %v, want 1", got)
	}
	j := nodes[0].tr.Joined()
	if len(j) != 2 || j[0].Name != "eth0" || j[0].Addr != a.IPv4 || j[1].Addr != a.IPv6 {
		t.Errorf("Joined = %+v", j)
	}
}

func TestGatewayTwoLANs(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	gw, x, y := lab.Host("gw"), lab.Host("x"), lab.Host("y")
	g1, g2 := gw.Attach(lan1), gw.Attach(lan2)
	lx, ly := x.Attach(lan1), y.Attach(lan2)
	ngw := startNode(t, gw, func(c *transportConfig) { c.NoIPv6 = true })
	nx := startNode(t, x, func(c *transportConfig) { c.NoIPv6 = true })
	ny := startNode(t, y, func(c *transportConfig) { c.NoIPv6 = true })

	// The gateway sends on both LANs, each packet from that LAN's address.
	err := ngw.tr.Send(Announcements, func(j Joined) ([][]byte, error) {
		return [][]byte{[]byte("from gw via " + j.Addr.String())}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nx.expect("from gw via "+g1.IPv4.String(), g1.IPv4, "eth0", discovery.AnnouncementGroupV4)
	ny.expect("from gw via "+g2.IPv4.String(), g2.IPv4, "eth0", discovery.AnnouncementGroupV4)
	nx.expectNone("from gw via " + g2.IPv4.String())

	// It hears each LAN on its own interface, and the LANs stay apart.
	nx.tr.Send(Requests, same([]byte("x asks")))
	ny.tr.Send(Requests, same([]byte("y asks")))
	ngw.expect("x asks", lx.IPv4, "eth0", discovery.RequestGroupV4)
	ngw.expect("y asks", ly.IPv4, "eth1", discovery.RequestGroupV4)
	nx.expectNone("y asks")
}

// An interface created after start is joined within one second.
func TestNewInterfaceJoinedWithinOneSecond(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	late, peer := lab.Host("late"), lab.Host("peer")
	pl := peer.Attach(lan)
	nl := startNode(t, late, nil)
	np := startNode(t, peer, nil)
	if len(nl.tr.Joined()) != 0 {
		t.Fatalf("joined %+v before any interface exists", nl.tr.Joined())
	}
	testenv.Until(t, "a warning that there is no interface to multicast on", func() bool { return nl.warns.warned(noInterface) })

	start := time.Now()
	late.Attach(lan)
	testenv.Until(t, "eth0 joined", func() bool {
		return slices.ContainsFunc(nl.tr.Joined(), func(j Joined) bool { return j.Name == "eth0" && j.Family == 4 })
	})
	// Reported, not asserted: a loaded machine takes longer (timings
	// belong to benchmarks: docs/performance.md).
	t.Logf("new interface joined %v after it was created", time.Since(start))
	// And it hears on it.
	np.tr.Send(Announcements, same([]byte("welcome")))
	nl.expect("welcome", pl.IPv4, "eth0", discovery.AnnouncementGroupV4)
}

// Deleting an interface while sending causes no errors and leaves the
// other interfaces working.
func TestDeletedInterfaceCausesNoErrors(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	gw, x := lab.Host("gw"), lab.Host("x")
	g1 := gw.Attach(lan1)
	gw.Attach(lan2)
	x.Attach(lan1)
	ngw := startNode(t, gw, nil)
	nx := startNode(t, x, nil)

	stop := make(chan struct{})
	sendErrs := make(chan error, 1000)
	var sent atomic.Int64
	// sends waits until the sender has sent n more times.
	sends := func(n int64) {
		t.Helper()
		target := sent.Load() + n
		testenv.Until(t, fmt.Sprintf("%d more sends", n), func() bool { return sent.Load() >= target })
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if err := ngw.tr.Send(Announcements, same([]byte("tick"))); err != nil {
				sendErrs <- err
			}
			sent.Add(1)
		}
	}()
	sends(10) // sending on both interfaces
	gw.Links()[1].Delete()
	testenv.Until(t, "the deleted interface left (eth0 for both families only)", func() bool { return len(ngw.tr.Joined()) == 2 })
	sends(10) // and on the one left
	close(stop)
	wg.Wait()
	close(sendErrs)
	for err := range sendErrs {
		t.Errorf("send error after deleting an interface: %v", err)
	}
	ngw.tr.Send(Announcements, same([]byte("still here")))
	nx.expect("still here", g1.IPv4, "eth0", discovery.AnnouncementGroupV4)
}

func TestEligibility(t *testing.T) {
	tr, err := newTransport(transportConfig{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, Include: []string{"eth*", "wlan0"}})
	if err != nil {
		t.Fatal(err)
	}
	up := net.FlagUp | net.FlagRunning | net.FlagMulticast
	for _, tc := range []struct {
		ifc  netmon.Interface
		want string
	}{
		{netmon.Interface{Name: "eth0", Flags: up}, ""},
		{netmon.Interface{Name: "wlan0", Flags: up}, ""},
		{netmon.Interface{Name: "lo", Flags: up | net.FlagLoopback}, "loopback"},
		{netmon.Interface{Name: "eth1", Flags: net.FlagUp | net.FlagRunning}, "not multicast-capable"},
		{netmon.Interface{Name: "eth2", Flags: net.FlagMulticast}, "down"},
		{netmon.Interface{Name: "docker0", Flags: up}, "excluded by pattern docker*"},
		{netmon.Interface{Name: "wlan1", Flags: up}, "not matched by --interfaces"},
	} {
		ok, why := tr.eligible(tc.ifc)
		if ok != (tc.want == "") || why != tc.want {
			t.Errorf("%s: eligible=%v %q, want %q", tc.ifc.Name, ok, why, tc.want)
		}
	}
	// A router's interfaces, with the defaults and with --interfaces.
	for _, tc := range []struct {
		include []string
		name    string
		want    string
	}{
		{nil, "br-lan", ""}, // OpenWrt's LAN
		{nil, "br0", ""},
		{nil, "lan1", ""},
		{nil, "eth0.10", ""}, // a VLAN
		{nil, "br-3f2a9c1d4e5b", "excluded by pattern br-????????????"}, // Docker's
		{nil, "wan", "excluded by pattern wan*"},
		{nil, "docker0", "excluded by pattern docker*"},
		{nil, "wg0", "excluded by pattern wg*"},
		{[]string{"wan"}, "wan", ""},                         // named outright: wanted
		{[]string{"br-3f2a9c1d4e5b"}, "br-3f2a9c1d4e5b", ""}, // likewise
		{[]string{"w*"}, "wan", "excluded by pattern wan*"},  // a pattern does not override
		{[]string{"br-lan"}, "br0", "not matched by --interfaces"},
	} {
		tr, err := newTransport(transportConfig{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, Include: tc.include})
		if err != nil {
			t.Fatal(err)
		}
		ok, why := tr.eligible(netmon.Interface{Name: tc.name, Flags: up})
		if ok != (tc.want == "") || why != tc.want {
			t.Errorf("--interfaces %v, %s: eligible=%v %q, want %q", tc.include, tc.name, ok, why, tc.want)
		}
	}
	// A WAN by its default route, whatever its name.
	for _, tc := range []struct {
		include []string
		want    string
	}{
		{nil, "has the default route (--exclude-default-route)"},
		{[]string{"eth1"}, ""}, // named outright: wanted
		{[]string{"eth*"}, "has the default route (--exclude-default-route)"},
	} {
		tr, err := newTransport(transportConfig{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, Include: tc.include, ExcludeDefaultRoute: true})
		if err != nil {
			t.Fatal(err)
		}
		ok, why := tr.eligible(netmon.Interface{Name: "eth1", Flags: up, DefaultRoute: true})
		if ok != (tc.want == "") || why != tc.want {
			t.Errorf("--exclude-default-route --interfaces %v: eligible=%v %q, want %q", tc.include, ok, why, tc.want)
		}
		if ok, _ := tr.eligible(netmon.Interface{Name: "eth0", Flags: up}); !ok && tc.include == nil {
			t.Errorf("--exclude-default-route: eth0, without the default route, not served")
		}
	}
	for _, bad := range []transportConfig{
		{Handler: func(Packet) {}},
		{Monitor: netmon.NewStatic(nil)},
		{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, TTL: 300},
		{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, Include: []string{"eth["}},
		{Monitor: netmon.NewStatic(nil), Handler: func(Packet) {}, NoIPv4: true, NoIPv6: true},
	} {
		if _, err := newTransport(bad); err == nil {
			t.Errorf("newTransport(%+v) accepted a bad config", bad)
		}
	}
}

// An address change is noticed: what the transport reports for the
// interface (and so what announcements carry) follows it.
func TestAddressChangeNoticed(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	h := lab.Host("h")
	link := h.Attach(lab.LAN())
	n := startNode(t, h, func(c *transportConfig) { c.NoIPv6 = true })
	newAddr := netip.MustParseAddr("198.18.1.200")
	link.ReplaceIPv4(newAddr)
	testenv.Until(t, "eth0 joined with "+newAddr.String(), func() bool {
		j := n.tr.Joined()
		return len(j) == 1 && j[0].Addr == newAddr
	})
}

// The configured TTL is what goes on the wire.
func TestTTL(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	a, b := lab.Host("a"), lab.Host("b")
	a.Attach(lan)
	b.Attach(lan)
	na := startNode(t, a, func(c *transportConfig) { c.NoIPv6 = true; c.TTL = 7 })
	var pc net.PacketConn
	if err := b.Namespace().Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", "0.0.0.0:4160")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	p := ipv4.NewPacketConn(pc)
	if err := p.JoinGroup(&net.Interface{Index: b.IfIndex("eth0")}, &net.UDPAddr{IP: discovery.AnnouncementGroupV4.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	p.SetControlMessage(ipv4.FlagTTL, true)
	if err := na.tr.Send(Announcements, same([]byte("ttl?"))); err != nil {
		t.Fatal(err)
	}
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	for {
		n, cm, _, err := p.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:n]) == "ttl?" {
			if cm == nil || cm.TTL != 7 {
				t.Fatalf("TTL on the wire %+v, want 7", cm)
			}
			return
		}
	}
}

// Decide says what the start-up log says, interface by interface.
func TestDecide(t *testing.T) {
	up := net.FlagUp | net.FlagRunning | net.FlagMulticast
	st := netmon.State{
		1: {Index: 1, Name: "lo", Flags: up | net.FlagLoopback, Addrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}},
		2: {Index: 2, Name: "eth0", Flags: up},
		3: {Index: 3, Name: "br-lan", Flags: up, Addrs: []netip.Prefix{netip.MustParsePrefix("192.168.1.1/24"), netip.MustParsePrefix("fe80::1/64")}},
		4: {Index: 4, Name: "eth1", Flags: up, DefaultRoute: true, Addrs: []netip.Prefix{netip.MustParsePrefix("203.0.113.2/24")}},
		5: {Index: 5, Name: "docker0", Flags: up, Addrs: []netip.Prefix{netip.MustParsePrefix("172.17.0.1/16")}},
	}
	ds, err := Decide(st, HostConfig{ExcludeDefaultRoute: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %v %s", d.Interface.Name, d.Families, d.Reason))
	}
	want := []string{
		"lo [] loopback",
		"eth0 [] no address of a served family",
		"br-lan [4 6] served (IPv4, IPv6)",
		"eth1 [] has the default route (--exclude-default-route)",
		"docker0 [] excluded by pattern docker*",
	}
	if !slices.Equal(got, want) {
		t.Errorf("decisions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := Decide(st, HostConfig{Include: []string{"eth["}}); err == nil {
		t.Error("Decide accepted a bad pattern")
	}
}

// Where the kernel has no IP_MULTICAST_ALL (IPv6 before Linux 4.20,
// qemu-user's emulated routers), every socket on the port hears every
// group any socket joined, on any interface: the daemon failed to join
// and served nothing. The transport then keeps the option's promise
// itself: each packet is delivered once, by the socket of the interface
// it came in on, and a socket joined to other groups (another program
// on the port) drops discovery's.
func TestWithoutMulticastAll(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	gw, x, y := lab.Host("gw"), lab.Host("x"), lab.Host("y")
	gw.Attach(lan1)
	gw.Attach(lan2)
	lx, ly := x.Attach(lan1), y.Attach(lan2)
	keep := func(c *transportConfig) { c.NoIPv6 = true; c.keepMulticastAll = true }
	ngw := startNode(t, gw, keep)
	other := startNode(t, gw, func(c *transportConfig) { keep(c); c.Groups = []netip.Addr{netip.MustParseAddr("239.255.0.9")} })
	nx := startNode(t, x, keep)
	ny := startNode(t, y, keep)

	nx.tr.Send(Requests, same([]byte("x asks")))
	ny.tr.Send(Requests, same([]byte("y asks")))
	ngw.expect("x asks", lx.IPv4, "eth0", discovery.RequestGroupV4)
	ngw.expect("y asks", ly.IPv4, "eth1", discovery.RequestGroupV4)
	// Once each: the other interface's socket heard them too.
	ngw.expectNone("x asks")
	ngw.expectNone("y asks")
	other.expectNone("x asks")
	ngw.tr.mu.Lock()
	defer ngw.tr.mu.Unlock()
	if !ngw.tr.filtering {
		t.Error("the transport did not say it filters")
	}
}

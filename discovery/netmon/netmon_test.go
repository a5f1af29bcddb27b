package netmon

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/vishvananda/netlink"

	"github.com/jinid/jinid/internal/rig/netlab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func waitFor(t *testing.T, m Monitor, what string, cond func(State) bool) {
	t.Helper()
	changed := make(chan struct{}, 1)
	defer m.Subscribe(func(Delta) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})()
	deadline := time.After(3 * time.Second)
	for {
		st, err := m.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if cond(st) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; state %+v", what, st)
		}
	}
}

func byName(st State, name string) (Interface, bool) {
	for _, i := range st {
		if i.Name == name {
			return i, true
		}
	}
	return Interface{}, false
}

// startNetlink follows h's interfaces until the test ends.
func startNetlink(t *testing.T, h *netlab.Host) *Netlink {
	t.Helper()
	m, err := NewNetlink(h.Namespace(), slog.New(slog.DiscardHandler), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNetlinkFollowsInterfaces(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("h")
	m := startNetlink(t, h)
	waitFor(t, m, "loopback", func(st State) bool { _, ok := byName(st, "lo"); return ok })

	link := h.Attach(lan)
	waitFor(t, m, "eth0 up with its addresses", func(st State) bool {
		i, ok := byName(st, "eth0")
		a4, ok4 := i.Addr(4)
		a6, ok6 := i.Addr(6)
		return ok && i.IsUp() && i.Flags&net.FlagMulticast != 0 && ok4 && a4 == link.IPv4 && ok6 && a6 == link.IPv6
	})
	link.Down()
	waitFor(t, m, "eth0 down", func(st State) bool { i, ok := byName(st, "eth0"); return ok && !i.IsUp() })
	link.Up()
	link.Delete()
	waitFor(t, m, "eth0 gone", func(st State) bool { _, ok := byName(st, "eth0"); return !ok })
}

func TestStatic(t *testing.T) {
	s := NewStatic(State{1: {Index: 1, Name: "lo"}})
	var got []Delta
	unsubscribe := s.Subscribe(func(d Delta) { got = append(got, d) })
	s.Set(State{2: {Index: 2, Name: "eth0", Addrs: []netip.Prefix{netip.MustParsePrefix("fe80::1/64"), netip.MustParsePrefix("2001:db8::1/64")}}}, nil)
	if len(got) != 1 || !got[0].Changed() || len(got[0].Old) != 1 || len(got[0].New) != 1 {
		t.Fatalf("deltas %+v, want the one change", got)
	}
	st, _ := s.Snapshot()
	if a, _ := st[2].Addr(6); a != netip.MustParseAddr("2001:db8::1") {
		t.Fatalf("preferred address %s, want the global one", a)
	}
	unsubscribe()
	s.Set(nil, nil)
	if len(got) != 1 {
		t.Fatal("called after unsubscribing")
	}
}

// Every subscriber hears of every change (issue 16: three transports
// reading one single-slot channel each heard only some).
func TestEverySubscriberHearsEveryChange(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("h")
	m := startNetlink(t, h)
	const n = 3
	var subs [n]chan Delta
	for i := range subs {
		subs[i] = make(chan Delta, 100)
		defer m.Subscribe(func(d Delta) { subs[i] <- d })()
	}
	h.Attach(lan)
	h.Attach(lan)
	// One delta may bring both interfaces (a change coalesces): each
	// subscriber must have heard of each, in whichever deltas.
	for i, ch := range subs {
		heard := map[string]bool{}
		for deadline := time.After(3 * time.Second); !heard["eth0"] || !heard["eth1"]; {
			var d Delta
			select {
			case d = <-ch:
			case <-deadline:
				t.Fatalf("subscriber %d heard of only %v", i, heard)
			}
			for _, name := range []string{"eth0", "eth1"} {
				if ifc, ok := byName(d.New, name); ok && ifc.IsUp() && ifc.HasFamily(4) && ifc.HasFamily(6) {
					if _, before := byName(d.Old, name); !before || d.Changed() {
						heard[name] = true
					}
				}
			}
		}
	}
}

// The monitor reads rtnetlink itself; vishvananda/netlink, which it read
// through before, is the oracle: on a host with IPv4 and IPv6 addresses,
// a default route, a link that is down and a point-to-point address,
// both read the same state.
func TestReadStateMatchesNetlinkLibrary(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("h")
	h.Attach(lan)
	down := h.Attach(lab.LAN())
	down.Down()
	for _, args := range [][]string{
		{"route", "add", "default", "dev", "eth0"},
		{"-6", "route", "add", "default", "dev", "eth0"},
		{"addr", "add", "192.0.2.1", "peer", "192.0.2.2/32", "dev", "eth0"},
	} {
		if out, err := h.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	m := startNetlink(t, h)
	// Settle: IPv6 addresses leave the tentative state on their own.
	waitFor(t, m, "no tentative address left", func(st State) bool {
		want, err := oracleState(h)
		return err == nil && st.Equal(want)
	})
	st, _ := m.Snapshot()
	eth0, _ := byName(st, "eth0")
	eth1, _ := byName(st, "eth1")
	if !eth0.DefaultRoute || !slices.Contains(eth0.Addrs, netip.MustParsePrefix("192.0.2.1/32")) || eth1.IsUp() {
		t.Fatalf("eth0 %+v, eth1 %+v", eth0, eth1)
	}
}

// oracleState is what the monitor read through vishvananda/netlink.
func oracleState(h *netlab.Host) (State, error) {
	nh, ok := h.Namespace().Handle()
	if !ok {
		return nil, errors.New("no namespace")
	}
	hd, err := netlink.NewHandleAt(nh)
	if err != nil {
		return nil, err
	}
	defer hd.Close()
	links, err := hd.LinkList()
	if err != nil {
		return nil, err
	}
	st := State{}
	for _, l := range links {
		a := l.Attrs()
		flags := a.Flags
		if a.RawFlags&unix.IFF_RUNNING != 0 {
			flags |= net.FlagRunning
		}
		st[a.Index] = Interface{Index: a.Index, Name: a.Name, Flags: flags}
	}
	addrs, err := hd.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		ifc, ok := st[a.LinkIndex]
		if !ok || a.IPNet == nil || a.Flags&unix.IFA_F_TENTATIVE != 0 {
			continue
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		ifc.Addrs = append(ifc.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
		st[a.LinkIndex] = ifc
	}
	routes, err := hd.RouteList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		if r.Table != 0 && r.Table != unix.RT_TABLE_MAIN || r.Dst != nil && !isZero(r.Dst) {
			continue
		}
		for _, idx := range append([]int{r.LinkIndex}, nextHopLinks(r)...) {
			if ifc, ok := st[idx]; ok {
				ifc.DefaultRoute = true
				st[idx] = ifc
			}
		}
	}
	for i, ifc := range st {
		slices.SortFunc(ifc.Addrs, func(a, b netip.Prefix) int {
			return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
		})
		st[i] = ifc
	}
	return st, nil
}

func isZero(n *net.IPNet) bool { ones, _ := n.Mask.Size(); return ones == 0 }

func nextHopLinks(r netlink.Route) []int {
	var out []int
	for _, nh := range r.MultiPath {
		out = append(out, nh.LinkIndex)
	}
	return out
}

// BenchmarkSnapshot: one full read of the interfaces, addresses and
// routes of a host with two LANs, by the monitor and by the library it
// replaced.
func BenchmarkSnapshot(b *testing.B) {
	lab := netlab.New(b)
	h := lab.Host("h")
	h.Attach(lab.LAN())
	h.Attach(lab.LAN())
	b.Run("rtnetlink", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := readState(h.Namespace()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("vishvananda", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := oracleState(h); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// routeAttrs reads what syscall.ParseNetlinkRouteAttr reads of whole
// attributes, and keeps those before a malformed one, where the library
// refuses the whole message: qemu-user leaves attributes it does not know
// in the host's byte order, and a big-endian router build under it read
// no interface at all.
func TestRouteAttrsKeepsWhatPrecedesABadOne(t *testing.T) {
	attr := func(typ uint16, v []byte) []byte {
		b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(v)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		b = append(b, v...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	good := append(attr(unix.IFLA_IFNAME, []byte("eth0\x00")), attr(unix.IFLA_MTU, []byte{0, 0, 5, 220})...)
	got := routeAttrs(good)
	if len(got) != 2 || cString(got[0].Value) != "eth0" || got[1].Attr.Type != unix.IFLA_MTU {
		t.Fatalf("whole attributes: %+v", got)
	}
	bad := append(slices.Clone(good), 0x04, 0x00, 0x10, 0x41, 0xff) // a length past the end
	bad[len(good)], bad[len(good)+1] = 0x00, 0x04                   // in the wrong byte order
	if got := routeAttrs(bad); len(got) != 2 || cString(got[0].Value) != "eth0" {
		t.Fatalf("attributes before a bad one: %+v", got)
	}
}

// FuzzRouteAttrs: any bytes are read without a panic, and where the
// library reads a message, routeAttrs reads the same.
func FuzzRouteAttrs(f *testing.F) {
	f.Add([]byte{8, 0, 3, 0, 'l', 'o', 0, 0})
	f.Add([]byte{0, 8, 0, 3, 'l', 'o', 0, 0, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := routeAttrs(b)
		m := syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: unix.RTM_NEWLINK}, Data: append(make([]byte, unix.SizeofIfInfomsg), b...)}
		want, err := func() (a []syscall.NetlinkRouteAttr, err error) {
			// The library panics on some bad lengths (it trusts the
			// kernel's): no answer to compare with, then.
			defer func() {
				if recover() != nil {
					err = errors.New("the library panicked")
				}
			}()
			return syscall.ParseNetlinkRouteAttr(&m)
		}()
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d attributes, the library %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Attr.Type != want[i].Attr.Type || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("attribute %d: %+v, the library %+v", i, got[i], want[i])
			}
		}
	})
}

package mcast

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/jinid/jinid/internal/namespace"
)

// groupConn is one UDP socket bound to the discovery port, serving one
// (interface, family): it has joined the discovery groups on that interface
// only, and sends out of it. The IPv4 and IPv6 sockets differ only in which
// x/net package drives them.
// receiveBuffer is the socket receive buffer asked for.
const receiveBuffer = 1 << 20

type groupConn interface {
	join(ifi *net.Interface, group netip.Addr) error
	// setup makes the socket send out of ifi with the given TTL (hop
	// limit) and multicast loopback.
	setup(ifi *net.Interface, ttl int, loop bool) error
	// read returns a datagram with the interface it arrived on and the
	// address it was sent to.
	read(b []byte) (n, ifIndex int, dst netip.Addr, src netip.AddrPort, err error)
	write(b []byte, dst netip.AddrPort) error
	Close() error
}

// listen opens a socket on the discovery port in ns. Every socket of the
// host shares the port (address and port reuse, so other Jini processes on
// the host can listen too), and IP_MULTICAST_ALL is off so that a socket
// hears only the groups it joined itself, on the interface it joined them:
// by default Linux would hand it every group any socket joined. Where the
// option is not there (IPV6_MULTICAST_ALL came with Linux 4.20; qemu-user
// knows neither), or keepAll asks (tests of that case), the socket hears
// them all: filtered says so, and the reader must drop what the option
// would have (transport.read).
func listen(ctx context.Context, ns namespace.Namespace, family, port int, keepAll bool) (c groupConn, filtered bool, err error) {
	network, level, allOpt := "udp4", unix.IPPROTO_IP, unix.IP_MULTICAST_ALL
	if family == 6 {
		network, level, allOpt = "udp6", unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			for _, o := range []struct{ level, opt, v int }{
				{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1},
				{unix.SOL_SOCKET, unix.SO_REUSEPORT, 1},
			} {
				if e := unix.SetsockoptInt(int(fd), o.level, o.opt, o.v); e != nil && serr == nil {
					serr = fmt.Errorf("setsockopt %d/%d: %w", o.level, o.opt, e)
				}
			}
			if keepAll {
				filtered = true
				return
			}
			switch e := unix.SetsockoptInt(int(fd), level, allOpt, 0); {
			case errors.Is(e, unix.ENOPROTOOPT):
				filtered = true
			case e != nil && serr == nil:
				serr = fmt.Errorf("setsockopt %d/%d: %w", level, allOpt, e)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	var pc net.PacketConn
	err = ns.Do(func() error {
		var err error
		pc, err = lc.ListenPacket(ctx, network, net.JoinHostPort("", strconv.Itoa(port)))
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("opening %s socket on port %d: %w", network, port, err)
	}
	// Room for bursts (a round of requests from many hosts at once); the
	// kernel caps it at net.core.rmem_max, which is fine too.
	_ = pc.(*net.UDPConn).SetReadBuffer(receiveBuffer)
	if family == 6 {
		p := ipv6.NewPacketConn(pc)
		if err := p.SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface, true); err != nil {
			pc.Close()
			return nil, false, fmt.Errorf("asking for IPv6 packet info: %w", err)
		}
		return newConn6(pc, p), filtered, nil
	}
	p := ipv4.NewPacketConn(pc)
	if err := p.SetControlMessage(ipv4.FlagDst|ipv4.FlagInterface, true); err != nil {
		pc.Close()
		return nil, false, fmt.Errorf("asking for IPv4 packet info: %w", err)
	}
	return newConn4(pc, p), filtered, nil
}

// mcastOpts are the multicast options ipv4.PacketConn and
// ipv6.PacketConn share.
type mcastOpts interface {
	JoinGroup(ifi *net.Interface, group net.Addr) error
	SetMulticastInterface(ifi *net.Interface) error
	SetMulticastLoopback(on bool) error
}

// conn is what both families share; only reading (whose control
// messages are family types) differs.
type conn struct {
	pc     net.PacketConn
	opts   mcastOpts
	setTTL func(int) error // TTL (IPv4) or hop limit (IPv6)
}

func (c *conn) join(ifi *net.Interface, g netip.Addr) error {
	err := c.opts.JoinGroup(ifi, &net.UDPAddr{IP: g.AsSlice()})
	if errors.Is(err, unix.ENOPROTOOPT) {
		// MCAST_JOIN_GROUP, which x/net uses, is not everywhere
		// (qemu-user): the older per-family options say the same.
		err = c.control(func(fd int) error {
			if g.Is4() {
				return unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP,
					&unix.IPMreqn{Multiaddr: g.As4(), Ifindex: int32(ifi.Index)})
			}
			return unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_ADD_MEMBERSHIP,
				&unix.IPv6Mreq{Multiaddr: g.As16(), Interface: uint32(ifi.Index)})
		})
	}
	return err
}

// control runs f on the socket's descriptor.
func (c *conn) control(f func(fd int) error) error {
	rc, err := c.pc.(*net.UDPConn).SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (c *conn) setup(ifi *net.Interface, ttl int, loop bool) error {
	err := c.opts.SetMulticastInterface(ifi)
	if errors.Is(err, unix.ENOPROTOOPT) {
		// IP_MULTICAST_IF and IPV6_MULTICAST_IF are not everywhere
		// (qemu-user): bound to the interface, the socket sends out of
		// it (and hears only it, as it should).
		err = c.control(func(fd int) error { return unix.BindToDevice(fd, ifi.Name) })
	}
	if err != nil {
		return fmt.Errorf("choosing the sending interface: %w", err)
	}
	if err := c.setTTL(ttl); err != nil {
		return fmt.Errorf("setting TTL (hop limit) %d: %w", ttl, err)
	}
	if err := c.opts.SetMulticastLoopback(loop); err != nil {
		return fmt.Errorf("setting multicast loopback: %w", err)
	}
	return nil
}

func (c *conn) write(b []byte, dst netip.AddrPort) error {
	_, err := c.pc.WriteTo(b, net.UDPAddrFromAddrPort(dst))
	return err
}

func (c *conn) Close() error { return c.pc.Close() }

type conn4 struct {
	conn
	p *ipv4.PacketConn
}

func newConn4(pc net.PacketConn, p *ipv4.PacketConn) *conn4 {
	return &conn4{conn: conn{pc: pc, opts: p, setTTL: p.SetMulticastTTL}, p: p}
}

func (c *conn4) read(b []byte) (int, int, netip.Addr, netip.AddrPort, error) {
	n, cm, src, err := c.p.ReadFrom(b)
	if err != nil {
		return 0, 0, netip.Addr{}, netip.AddrPort{}, err
	}
	var idx int
	var dst netip.Addr
	if cm != nil {
		idx = cm.IfIndex
		dst, _ = netip.AddrFromSlice(cm.Dst.To4())
	}
	return n, idx, dst, udpAddrPort(src), nil
}

type conn6 struct {
	conn
	p *ipv6.PacketConn
}

func newConn6(pc net.PacketConn, p *ipv6.PacketConn) *conn6 {
	return &conn6{conn: conn{pc: pc, opts: p, setTTL: p.SetMulticastHopLimit}, p: p}
}

func (c *conn6) read(b []byte) (int, int, netip.Addr, netip.AddrPort, error) {
	n, cm, src, err := c.p.ReadFrom(b)
	if err != nil {
		return 0, 0, netip.Addr{}, netip.AddrPort{}, err
	}
	var idx int
	var dst netip.Addr
	if cm != nil {
		idx = cm.IfIndex
		dst, _ = netip.AddrFromSlice(cm.Dst)
	}
	return n, idx, dst, udpAddrPort(src), nil
}

func udpAddrPort(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

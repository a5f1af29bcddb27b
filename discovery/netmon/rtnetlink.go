package netmon

// The monitor reads rtnetlink itself, with the standard library's netlink
// helpers (syscall.NetlinkRIB, ParseNetlinkMessage, ParseNetlinkRouteAttr,
// which package net links for its own interface tables) and one socket
// subscribed to the link, address and route groups. It replaced
// vishvananda/netlink, whose general routing client the monitor used
// three lists and three subscriptions of: 0.2 MB of a mips router daemon
// (docs/performance.md, "Docs and CLI that work as written (issue 35)").
// That library stays as the tests' oracle (netmon_test.go), and the
// monitor reads what it read: the main table's routes, IFA_LOCAL before
// IFA_ADDRESS, the extended address flags.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jinid/jinid/internal/namespace"
)

// readState lists the links, addresses and default routes of ns.
func readState(ns namespace.Namespace) (State, error) {
	var links, addrs, routes []byte
	err := ns.Do(func() error {
		var err error
		if links, err = syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC); err != nil {
			return fmt.Errorf("listing interfaces: %w", err)
		}
		if addrs, err = syscall.NetlinkRIB(unix.RTM_GETADDR, unix.AF_UNSPEC); err != nil {
			return fmt.Errorf("listing addresses: %w", err)
		}
		if routes, err = syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC); err != nil {
			return fmt.Errorf("listing routes: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st := State{}
	if err := eachMessage(links, unix.RTM_NEWLINK, func(m *syscall.NetlinkMessage) { addLink(st, m) }); err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	if err := eachMessage(addrs, unix.RTM_NEWADDR, func(m *syscall.NetlinkMessage) { addAddr(st, m) }); err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	if err := eachMessage(routes, unix.RTM_NEWROUTE, func(m *syscall.NetlinkMessage) {
		for _, idx := range defaultRouteLinks(m) {
			if ifc, ok := st[idx]; ok {
				ifc.DefaultRoute = true
				st[idx] = ifc
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	return st, nil
}

// eachMessage calls f with each message of type typ in b.
func eachMessage(b []byte, typ uint16, f func(*syscall.NetlinkMessage)) error {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return err
	}
	for i := range msgs {
		if msgs[i].Header.Type == typ {
			f(&msgs[i])
		}
	}
	return nil
}

// addLink adds the interface of an RTM_NEWLINK message: struct ifinfomsg
// (family, pad, type, index int32, flags uint32, change) and its name.
func addLink(st State, m *syscall.NetlinkMessage) {
	if len(m.Data) < unix.SizeofIfInfomsg {
		return
	}
	idx := int(int32(binary.NativeEndian.Uint32(m.Data[4:8])))
	raw := binary.NativeEndian.Uint32(m.Data[8:12])
	attrs := routeAttrs(m.Data[unix.SizeofIfInfomsg:])
	ifc := Interface{Index: idx, Flags: linkFlags(raw)}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_IFNAME {
			ifc.Name = cString(a.Value)
		}
	}
	st[idx] = ifc
}

// linkFlags are the net.Flags of the kernel's, as net.Interface has them:
// FlagRunning is the link's being operationally usable (IFF_RUNNING).
func linkFlags(raw uint32) net.Flags {
	var f net.Flags
	for _, m := range [...]struct {
		bit  uint32
		flag net.Flags
	}{{unix.IFF_UP, net.FlagUp}, {unix.IFF_RUNNING, net.FlagRunning}, {unix.IFF_BROADCAST, net.FlagBroadcast},
		{unix.IFF_LOOPBACK, net.FlagLoopback}, {unix.IFF_POINTOPOINT, net.FlagPointToPoint}, {unix.IFF_MULTICAST, net.FlagMulticast}} {
		if raw&m.bit != 0 {
			f |= m.flag
		}
	}
	return f
}

// addAddr adds the address of an RTM_NEWADDR message: struct ifaddrmsg
// (family, prefixlen, flags, scope, index uint32), the local address
// (IFA_LOCAL: on a point-to-point link, IFA_ADDRESS is the peer's), and
// the extended flags (IFA_FLAGS). A tentative address (duplicate address
// detection not done) cannot be sent from yet: it is left out.
func addAddr(st State, m *syscall.NetlinkMessage) {
	if len(m.Data) < unix.SizeofIfAddrmsg {
		return
	}
	bits, flags := int(m.Data[1]), uint32(m.Data[2])
	idx := int(binary.NativeEndian.Uint32(m.Data[4:8]))
	ifc, ok := st[idx]
	if !ok {
		return
	}
	attrs := routeAttrs(m.Data[unix.SizeofIfAddrmsg:])
	var local, address []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_LOCAL:
			local = a.Value
		case unix.IFA_ADDRESS:
			address = a.Value
		case unix.IFA_FLAGS:
			if len(a.Value) >= 4 {
				flags = binary.NativeEndian.Uint32(a.Value)
			}
		}
	}
	if local == nil {
		local = address
	}
	ip, ok := netip.AddrFromSlice(local)
	if !ok || flags&unix.IFA_F_TENTATIVE != 0 {
		return
	}
	ifc.Addrs = append(ifc.Addrs, netip.PrefixFrom(ip.Unmap(), bits))
	st[idx] = ifc
}

// defaultRouteLinks are the interfaces a default route of the main
// table goes out of (several for a multipath route), or none for any
// other route. struct rtmsg: family, dst_len, src_len, tos, table,
// protocol, scope, type, flags; RTA_TABLE overrides the table.
func defaultRouteLinks(m *syscall.NetlinkMessage) []int {
	if len(m.Data) < unix.SizeofRtMsg || m.Data[1] != 0 {
		return nil // a destination prefix: no default route
	}
	table := uint32(m.Data[4])
	attrs := routeAttrs(m.Data[unix.SizeofRtMsg:])
	var links []int
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.RTA_TABLE:
			if len(a.Value) >= 4 {
				table = binary.NativeEndian.Uint32(a.Value)
			}
		case unix.RTA_OIF:
			if len(a.Value) >= 4 {
				links = append(links, int(binary.NativeEndian.Uint32(a.Value)))
			}
		case unix.RTA_MULTIPATH:
			links = append(links, nextHops(a.Value)...)
		}
	}
	if table != unix.RT_TABLE_MAIN {
		return nil
	}
	return links
}

// nextHops are the interfaces of RTA_MULTIPATH's struct rtnexthop list
// (len uint16, flags, hops, ifindex int32, then its attributes).
func nextHops(b []byte) []int {
	var out []int
	for len(b) >= unix.SizeofRtNexthop {
		n := int(binary.NativeEndian.Uint16(b[0:2]))
		if n < unix.SizeofRtNexthop || n > len(b) {
			break
		}
		out = append(out, int(int32(binary.NativeEndian.Uint32(b[4:8]))))
		b = b[min(len(b), (n+3)&^3):]
	}
	return out
}

// routeAttrs reads a message's route attributes (struct rtattr: length,
// type, value, aligned to 4) up to the first malformed one, keeping those
// before it, where syscall.ParseNetlinkRouteAttr refuses the whole
// message: qemu-user translates the attributes it knows between the
// target's byte order and the host's and leaves the others (a big-endian
// router build under it then read no interface at all). The kernel's own
// messages are whole; what a message holds past a bad length is never
// read.
func routeAttrs(b []byte) []syscall.NetlinkRouteAttr {
	var out []syscall.NetlinkRouteAttr
	for len(b) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			break
		}
		out = append(out, syscall.NetlinkRouteAttr{
			Attr:  syscall.RtAttr{Len: uint16(l), Type: binary.NativeEndian.Uint16(b[2:4])},
			Value: b[unix.SizeofRtAttr:l],
		})
		b = b[min((l+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1), len(b)):]
	}
	return out
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// subscribe opens a netlink socket in ns subscribed to the changes of
// links, addresses and routes. It is non-blocking, in an *os.File, so
// that Go's poller serves it: Close interrupts a Read.
func subscribe(ns namespace.Namespace) (*os.File, error) {
	var f *os.File
	err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("opening a netlink socket: %w", err)
		}
		groups := uint32(unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR | unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE)
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("subscribing to interface changes: %w", err)
		}
		f = os.NewFile(uintptr(fd), "rtnetlink")
		return nil
	})
	return f, err
}

// errOverrun: the kernel dropped notifications (the socket's buffer was
// full); only a full re-read knows what they said.
var errOverrun = errors.New("netlink notifications dropped")

// readChanges reads one batch of notifications from f and says whether
// any matters: a link or an address, or a default route.
func readChanges(f *os.File, buf []byte) (bool, error) {
	n, err := f.Read(buf)
	if errors.Is(err, unix.ENOBUFS) {
		return true, errOverrun
	}
	if err != nil {
		return false, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return false, fmt.Errorf("parsing netlink notifications: %w", err)
	}
	for i := range msgs {
		switch msgs[i].Header.Type {
		case unix.RTM_NEWLINK, unix.RTM_DELLINK, unix.RTM_NEWADDR, unix.RTM_DELADDR:
			return true, nil
		case unix.RTM_NEWROUTE, unix.RTM_DELROUTE:
			if len(msgs[i].Data) >= unix.SizeofRtMsg && msgs[i].Data[1] == 0 {
				return true, nil // a default route (of some table): re-read
			}
		}
	}
	return false, nil
}

package inspect

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/jinid/jinid/internal/namespace"
)

// Snaplen is the most of a frame kept: whole frames, as jinid reassembles
// TCP exchanges from them.
const Snaplen = 65535

// tcpUDPFilter passes only IPv4 and IPv6 frames carrying TCP or UDP, so
// that the rest of a busy link's traffic never reaches user space.
var tcpUDPFilter = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 12, Size: 2},                         // EtherType
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x0800, SkipFalse: 2}, // IPv4?
	bpf.LoadAbsolute{Off: 23, Size: 1},                         // IPv4 protocol
	bpf.Jump{Skip: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x86DD, SkipFalse: 4}, // IPv6?
	bpf.LoadAbsolute{Off: 20, Size: 1},                         // IPv6 next header
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 6, SkipTrue: 1},       // TCP
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipFalse: 1},     // UDP
	bpf.RetConstant{Val: Snaplen},
	bpf.RetConstant{Val: 0},
}

// LiveConfig says where to capture.
type LiveConfig struct {
	// Interfaces are the interfaces' names, or the one name "any": every
	// interface, in Linux cooked form (the frames from their network
	// header on, after a header of metadata: layers.LinkTypeLinuxSLL,
	// version 1; gopacket, the pure-Go pcap library jinid uses, keeps a
	// link type in a byte, where version 2's 276 does not fit).
	Interfaces []string
	// Namespace to capture in; the zero value is the process's own.
	Namespace namespace.Namespace
	// Promisc puts each named interface in promiscuous mode while the
	// capture runs (frames for other hosts, on a mirror port); "any"
	// never is.
	Promisc bool
	// Write, if set, receives every captured frame with its interface's
	// place in Interfaces.
	Write FrameWriter
	// Dropped, if set, is told at the end how many frames the kernel
	// dropped because the capture fell behind, when it dropped any.
	Dropped func(frames uint32)
	// Filter, if set, is a capture filter (pcap-filter syntax, compiled
	// for each interface's link); without one, TCP and UDP over IP pass.
	Filter string
}

// FrameWriter saves captured frames.
type FrameWriter interface {
	WriteFrame(iface int, ci gopacket.CaptureInfo, data []byte) error
}

// sllLen is the length of a LINUX_SLL header.
const sllLen = 16

// maxQueued bounds the frames read and not yet decoded.
const maxQueued = 64

// captureBuffer is the packet socket's receive buffer: tcpdump's default,
// room for a burst of Jini ERI calls while the capture writes a file.
const captureBuffer = 2 << 20

// frame is one frame read, and the interface it came from.
type frame struct {
	src     int
	data    []byte
	at      time.Time
	ifindex int // a cooked frame's interface
}

// source is one packet socket of a capture.
type source struct {
	f      *os.File
	name   string
	cooked bool
	// names are the interfaces' names by index, for a cooked socket's
	// frames (their zone).
	names map[int]string
}

// Live captures Jini discovery traffic on cfg.Interfaces until ctx ends,
// decoding it with d, the frames of all of them in the order they are
// read. It uses Linux packet sockets directly, so it needs CAP_NET_RAW
// but no libpcap, and works in static builds.
func Live(ctx context.Context, cfg LiveConfig, d *Decoder) error {
	var srcs []*source
	defer func() {
		for _, s := range srcs {
			s.f.Close()
		}
	}()
	for _, name := range cfg.Interfaces {
		link := LinkEthernet
		if name == "any" {
			link = LinkCooked
		}
		prog := tcpUDPFilter
		if link == LinkCooked {
			prog = tcpUDPCooked
		}
		if cfg.Filter != "" {
			var err error
			if prog, err = CompileCaptureFilter(cfg.Filter, link); err != nil {
				return err
			}
		}
		s, err := openPacketSocket(cfg.Namespace, name, prog, cfg.Promisc)
		if err != nil {
			return err
		}
		srcs = append(srcs, s)
	}
	if cfg.Dropped != nil {
		defer func() {
			var n uint32
			for _, s := range srcs {
				n += dropped(s.f)
			}
			if n > 0 {
				cfg.Dropped(n)
			}
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range srcs {
			s.f.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer stop()

	defer d.Flush()
	// Frames wait here for the decoder, each a copy of up to Snaplen:
	// 64 of them (4 MiB at most; 1,024 held 64 MiB of a flood's large
	// segments). A decoder behind leaves the rest in the socket's
	// buffer, and the kernel counts what it drops.
	frames := make(chan frame, maxQueued)
	errc := make(chan error, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- s.read(i, frames)
		}()
	}
	go func() { wg.Wait(); close(frames) }()
	lastFlush := time.Now()
	var firstErr error
	for fr := range frames {
		if firstErr != nil {
			continue // draining: the readers stop at the deadline
		}
		s := srcs[fr.src]
		ci := gopacket.CaptureInfo{Timestamp: fr.at, CaptureLength: len(fr.data), Length: len(fr.data), InterfaceIndex: fr.src}
		if cfg.Write != nil {
			if err := cfg.Write.WriteFrame(fr.src, ci, fr.data); err != nil {
				firstErr = fmt.Errorf("writing capture: %w", err)
				stopReading(srcs)
				continue
			}
		}
		var p gopacket.Packet
		zone := s.name
		if s.cooked {
			p = gopacket.NewPacket(fr.data, layers.LinkTypeLinuxSLL, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
			zone = s.names[fr.ifindex]
		} else {
			p = gopacket.NewPacket(fr.data, layers.LinkTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		}
		p.Metadata().CaptureInfo = ci
		d.SetZone(zone)
		d.Packet(p)
		if fr.at.Sub(lastFlush) > 10*time.Second {
			// TCP exchanges that never closed are reported after a minute.
			d.FlushOlderThan(fr.at.Add(-time.Minute))
			lastFlush = fr.at
		}
	}
	close(errc)
	for err := range errc {
		if firstErr == nil && err != nil && ctx.Err() == nil {
			firstErr = err
		}
	}
	return firstErr
}

func stopReading(srcs []*source) {
	for _, s := range srcs {
		s.f.SetReadDeadline(time.Unix(1, 0))
	}
}

// read reads frames until the socket's deadline passes.
func (s *source) read(i int, out chan<- frame) error {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, Snaplen)
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			return fmt.Errorf("capturing on %s: %w", s.name, err)
		}
		at := time.Now()
		var data []byte
		ifindex := 0
		if s.cooked {
			ll, _ := from.(*unix.SockaddrLinklayer)
			if ll == nil {
				continue
			}
			data = make([]byte, sllLen+n)
			putSLL(data, ll)
			copy(data[sllLen:], buf[:n])
			ifindex = ll.Ifindex
		} else {
			data = append([]byte(nil), buf[:n]...)
		}
		out <- frame{src: i, data: data, at: at, ifindex: ifindex}
	}
}

// putSLL writes a LINUX_SLL header: packet type, ARPHRD type, address
// length, address (8 bytes) and protocol.
func putSLL(b []byte, ll *unix.SockaddrLinklayer) {
	binary.BigEndian.PutUint16(b[0:], uint16(ll.Pkttype))
	binary.BigEndian.PutUint16(b[2:], ll.Hatype)
	binary.BigEndian.PutUint16(b[4:], uint16(ll.Halen))
	copy(b[6:14], ll.Addr[:min(ll.Halen, 8)])
	binary.BigEndian.PutUint16(b[14:], htons(ll.Protocol))
}

// tcpUDPCooked is tcpUDPFilter for cooked frames: the protocol from the
// kernel's metadata, the network header at 0.
var tcpUDPCooked = []bpf.Instruction{
	bpf.LoadExtension{Num: bpf.ExtProto},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x0800, SkipFalse: 2},
	bpf.LoadAbsolute{Off: 9, Size: 1},
	bpf.Jump{Skip: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x86DD, SkipFalse: 4},
	bpf.LoadAbsolute{Off: 6, Size: 1},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 6, SkipTrue: 1},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipFalse: 1},
	bpf.RetConstant{Val: Snaplen},
	bpf.RetConstant{Val: 0},
}

// ErrNoInterface is the error of a capture on an interface that is not
// there.
var ErrNoInterface = errors.New("no such interface here")

// openPacketSocket opens a non-blocking AF_PACKET socket on an
// interface ("any": on all, cooked), as an *os.File so that Go's poller
// serves it: reads honour deadlines and Close interrupts them.
func openPacketSocket(ns namespace.Namespace, ifname string, prog []bpf.Instruction, promisc bool) (*source, error) {
	var fd int
	src := &source{name: ifname, cooked: ifname == "any"}
	err := ns.Do(func() error {
		index := 0
		if src.cooked {
			ifs, err := net.Interfaces()
			if err != nil {
				return fmt.Errorf("listing interfaces: %w", err)
			}
			src.names = map[int]string{}
			for _, i := range ifs {
				src.names[i.Index] = i.Name
			}
		} else {
			ifi, err := net.InterfaceByName(ifname)
			if err != nil {
				// Not Go's "route ip+net: no such network interface": what
				// to do instead.
				return fmt.Errorf("interface %q: %w (ip link lists them; any captures on all of them)", ifname, ErrNoInterface)
			}
			index = ifi.Index
		}
		kind := unix.SOCK_RAW
		if src.cooked {
			kind = unix.SOCK_DGRAM
		}
		proto := int(htons(unix.ETH_P_ALL))
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, kind|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			if errors.Is(err, unix.EPERM) {
				return fmt.Errorf("opening a packet socket needs CAP_NET_RAW (run as root): %w", err)
			}
			return fmt.Errorf("opening a packet socket: %w", err)
		}
		raw, err := bpf.Assemble(prog)
		if err == nil {
			filter := make([]unix.SockFilter, len(raw))
			for i, ins := range raw {
				filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
			}
			fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
			err = unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("attaching the capture filter: %w", err)
		}
		// Without CAP_NET_ADMIN the buffer stays at the system's default.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, captureBuffer) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, captureBuffer)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("binding the packet socket to %s: %w", ifname, err)
		}
		if promisc && !src.cooked {
			// A membership, not the interface's flag: the kernel drops it
			// when the socket closes, however the capture ends.
			mreq := unix.PacketMreq{Ifindex: int32(index), Type: unix.PACKET_MR_PROMISC}
			if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
				unix.Close(fd)
				return fmt.Errorf("putting %s in promiscuous mode: %w", ifname, err)
			}
		}
		// Frames queued before the bind may be from any interface.
		var scratch [1]byte
		for {
			if _, _, err := unix.Recvfrom(fd, scratch[:], unix.MSG_DONTWAIT|unix.MSG_TRUNC); err != nil {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	src.f = os.NewFile(uintptr(fd), "packet:"+ifname)
	return src, nil
}

// dropped returns the frames the kernel dropped on the packet socket
// since it opened (or since the last call).
func dropped(f *os.File) uint32 {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var n uint32
	rc.Control(func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			n = st.Drops
		}
	})
	return n
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
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
	Interface string
	// Namespace to capture in; the zero value is the process's own.
	Namespace namespace.Namespace
	// Write, if set, receives every captured frame, as for a pcap file.
	Write *pcapgo.Writer
	// Dropped, if set, is told at the end how many frames the kernel
	// dropped because the capture fell behind, when it dropped any.
	Dropped func(frames uint32)
	// Filter, if set, is the capture filter the kernel applies (compiled
	// for LinkEthernet); without one, TCP and UDP over IP pass.
	Filter []bpf.Instruction
}

// captureBuffer is the packet socket's receive buffer: tcpdump's default,
// room for a burst of Jini ERI calls while the capture writes a file.
const captureBuffer = 2 << 20

// Live captures Jini discovery traffic on one interface until ctx ends,
// decoding it with d. It uses a Linux packet socket directly, so it
// needs CAP_NET_RAW but no libpcap, and works in static builds.
func Live(ctx context.Context, cfg LiveConfig, d *Decoder) error {
	prog := cfg.Filter
	if prog == nil {
		prog = tcpUDPFilter
	}
	f, err := openPacketSocket(cfg.Namespace, cfg.Interface, prog)
	if err != nil {
		return err
	}
	defer f.Close()
	if cfg.Dropped != nil {
		defer func() {
			if n := dropped(f); n > 0 {
				cfg.Dropped(n)
			}
		}()
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	d.SetZone(cfg.Interface)
	defer d.Flush()
	buf := make([]byte, Snaplen)
	lastFlush := time.Now()
	for {
		n, err := f.Read(buf)
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("capturing on %s: %w", cfg.Interface, err)
		}
		frame := append([]byte(nil), buf[:n]...)
		ci := gopacket.CaptureInfo{Timestamp: now, CaptureLength: n, Length: n}
		if cfg.Write != nil {
			if err := cfg.Write.WritePacket(ci, frame); err != nil {
				return fmt.Errorf("writing capture: %w", err)
			}
		}
		p := gopacket.NewPacket(frame, layers.LinkTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		p.Metadata().CaptureInfo = ci
		d.Packet(p)
		if now.Sub(lastFlush) > 10*time.Second {
			// TCP exchanges that never closed are reported after a minute.
			d.FlushOlderThan(now.Add(-time.Minute))
			lastFlush = now
		}
	}
}

// ErrNoInterface is the error of a capture on an interface that is not
// there.
var ErrNoInterface = errors.New("no such interface here")

// openPacketSocket opens a non-blocking AF_PACKET socket bound to the
// interface, as an *os.File so that Go's poller serves it: reads honour
// deadlines and Close interrupts them.
func openPacketSocket(ns namespace.Namespace, ifname string, prog []bpf.Instruction) (*os.File, error) {
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			// Not Go's "route ip+net: no such network interface": what
			// to do instead.
			return fmt.Errorf("interface %q: %w (ip link lists them; a capture is of one named interface, there is no \"any\")", ifname, ErrNoInterface)
		}
		proto := int(htons(unix.ETH_P_ALL))
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
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
			prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
			err = unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("attaching the capture filter: %w", err)
		}
		// Without CAP_NET_ADMIN the buffer stays at the system's default.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, captureBuffer) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, captureBuffer)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("binding the packet socket to %s: %w", ifname, err)
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
	return os.NewFile(uintptr(fd), "packet:"+ifname), nil
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

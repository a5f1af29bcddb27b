// Package floodtest replays the floods a hostile host on the LAN can aim
// at a jinid daemon — multicast requests from made-up sources, storms of
// announcements from lookup services that do not exist, silent TCP
// connections — and measures what the daemon spends meanwhile. Every
// flood is bounded twice, in count and by its context, and stops by
// itself; the end-to-end tests run them inside a netlab LAN only.
package floodtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/namespace"
)

// Pace is how much of a flood to send: Count packets at most, PerSecond
// of them a second (sent in bursts every 10 ms). Sent, if set, counts
// them as they go.
type Pace struct {
	PerSecond, Count int
	Sent             *atomic.Int64
}

// each runs send(i) for i in [0, p.Count) at p's rate until ctx ends, and
// returns how many it sent.
func (p Pace) each(ctx context.Context, send func(i int) error) (int, error) {
	const tick = 10 * time.Millisecond
	perTick := max(1, p.PerSecond/int(time.Second/tick))
	t := time.NewTicker(tick)
	defer t.Stop()
	sent := 0
	for sent < p.Count {
		for range min(perTick, p.Count-sent) {
			if err := send(sent); err != nil {
				return sent, err
			}
			sent++
			if p.Sent != nil {
				p.Sent.Add(1)
			}
		}
		select {
		case <-ctx.Done():
			return sent, nil
		case <-t.C:
		}
	}
	return sent, nil
}

// SpoofedRequests sends version 2 multicast requests out of interface
// ifName of ns, each from a made-up source address of subnet (none of
// skip, and never the network or broadcast address) that it names as
// the address to connect back to, at a made-up port: what a host does
// that wants a lookup service to spend its connect-backs on nobody. It
// writes the IP header itself (a raw socket), so the sources are any it
// likes. It returns how many it sent.
func SpoofedRequests(ctx context.Context, ns namespace.Namespace, ifName string, subnet netip.Prefix, skip []netip.Addr, p Pace) (int, error) {
	if !subnet.Addr().Is4() || subnet.Bits() > 30 {
		return 0, fmt.Errorf("spoofed requests: %s is not an IPv4 subnet with hosts", subnet)
	}
	var sources []netip.Addr
	for a := subnet.Masked().Addr().Next(); subnet.Contains(a.Next()) && len(sources) < 1<<16; a = a.Next() {
		if !slices.Contains(skip, a) {
			sources = append(sources, a)
		}
	}
	var rc *ipv4.RawConn
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifName)
		if err != nil {
			return err
		}
		c, err := net.ListenPacket("ip4:udp", "0.0.0.0")
		if err != nil {
			return err
		}
		if rc, err = ipv4.NewRawConn(c); err != nil {
			c.Close()
			return err
		}
		return rc.SetMulticastInterface(ifi)
	})
	if err != nil {
		return 0, fmt.Errorf("spoofed requests: a raw socket on %s: %w", ifName, err)
	}
	defer rc.Close()
	dst := discovery.RequestGroupV4.AsSlice()
	return p.each(ctx, func(i int) error {
		src := sources[i%len(sources)]
		req := discovery.Request{Version: discovery.ProtocolV2, Host: src.String(), Port: 20000 + i%40000}
		pkts, err := req.Encode(discovery.DefaultMaxPacketSize)
		if err != nil {
			return err
		}
		udp := udpDatagram(uint16(20000+i%40000), discovery.Port, pkts[0])
		h := &ipv4.Header{Version: ipv4.Version, Len: ipv4.HeaderLen, TotalLen: ipv4.HeaderLen + len(udp),
			TTL: 1, Protocol: 17, Src: src.AsSlice(), Dst: dst}
		return rc.WriteTo(h, udp, nil)
	})
}

// udpDatagram is a UDP header and payload, with no checksum (which IPv4
// allows).
func udpDatagram(src, dst uint16, payload []byte) []byte {
	b := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
	copy(b[8:], payload)
	return b
}

// Announcements multicasts version 2 announcements out of interface
// ifName of ns, each from a lookup service that does not exist (a new
// service ID every time) in groups, at host:port: a discoverer that
// wants these groups is asked to contact each. host:port is best a
// place that answers slowly or never. It returns how many it sent.
func Announcements(ctx context.Context, ns namespace.Namespace, ifName string, groups []string, host string, port int, p Pace) (int, error) {
	var pc *ipv4.PacketConn
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifName)
		if err != nil {
			return err
		}
		c, err := net.ListenPacket("udp4", "0.0.0.0:0")
		if err != nil {
			return err
		}
		pc = ipv4.NewPacketConn(c)
		if err := pc.SetMulticastInterface(ifi); err != nil {
			pc.Close()
			return err
		}
		return pc.SetMulticastTTL(1)
	})
	if err != nil {
		return 0, fmt.Errorf("announcements: a socket on %s: %w", ifName, err)
	}
	defer pc.Close()
	dst := &net.UDPAddr{IP: discovery.AnnouncementGroupV4.AsSlice(), Port: discovery.Port}
	return p.each(ctx, func(i int) error {
		var id discovery.ServiceID
		binary.BigEndian.PutUint64(id[8:], uint64(i)+1)
		id[0] = 0xf1 // not a real one's: the rest counts
		a := discovery.Announcement{Version: discovery.ProtocolV2, Sequence: int64(i), Host: host, Port: port, ServiceID: id, Groups: groups}
		pkts, err := a.Encode(discovery.DefaultMaxPacketSize)
		if err != nil {
			return err
		}
		_, err = pc.WriteTo(pkts[0], nil, dst)
		return err
	})
}

// SilentListener accepts connections in ns on addr and never says a
// word on them, holding each until ctx ends: where the announcements
// of a storm point, so that every contact stalls. It returns the port.
func SilentListener(ctx context.Context, ns namespace.Namespace, addr string) (int, *sync.WaitGroup, error) {
	var ln net.Listener
	if err := ns.Do(func() error { var err error; ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		return 0, nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []net.Conn
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		held = nil
		mu.Unlock()
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if ctx.Err() != nil {
				c.Close()
			} else {
				held = append(held, c)
			}
			mu.Unlock()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, &wg, nil
}

// SilentStats is what a connection flood saw.
type SilentStats struct {
	// Opened counts the connections made (reopenings included); Closed,
	// those the daemon closed (over its caps at once, idle ones after its
	// timeouts, ones whose first words it refused); Failed, the attempts
	// that did not connect.
	Opened, Closed, Failed atomic.Int64
	// Said counts the bytes written, first words included.
	Said atomic.Int64
	// MaxHeldMs is the longest the daemon took to close a connection
	// that had said all its first words and then fell silent, in ms.
	MaxHeldMs atomic.Int64
}

// Connections is a flood of TCP connections that each say their first
// words (Say, if set) and then nothing.
type Connections struct {
	// Addr is host:port to connect to; N, the connections to keep open.
	Addr string
	N    int
	// PerSecond bounds the dials of all of them; one the daemon closed
	// is opened again after Reopen, so the pressure holds.
	PerSecond int
	Reopen    time.Duration
	// From are the source addresses, taken in turn (the kernel's choice
	// when empty): a host's other addresses of its prefix.
	From []netip.Addr
	// Say writes the first words on a new connection; an error (the
	// daemon closed it while it spoke) counts it as closed.
	Say func(net.Conn) error
}

// Run keeps the connections open from ns until ctx ends. Raise the
// process's open files limit first: each connection is a file.
func (f Connections) Run(ctx context.Context, ns namespace.Namespace, st *SilentStats) *sync.WaitGroup {
	var wg sync.WaitGroup
	tokens := make(chan struct{})
	wg.Add(1)
	go func() { // paces the dials of all of them
		defer wg.Done()
		every := time.Second / time.Duration(max(1, f.PerSecond))
		t := time.NewTicker(max(every, time.Microsecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	dial := func(i int) (net.Conn, error) {
		d := &net.Dialer{Timeout: 2 * time.Second}
		if len(f.From) > 0 {
			d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(f.From[i%len(f.From)], 0))
		}
		var c net.Conn
		err := ns.Do(func() error {
			var err error
			c, err = d.DialContext(ctx, "tcp", f.Addr)
			return err
		})
		return c, err
	}
	for i := range f.N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tokens:
				}
				if c, err := dial(i); err != nil {
					st.Failed.Add(1)
				} else {
					st.Opened.Add(1)
					f.hold(ctx, c, st)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(f.Reopen):
				}
			}
		}()
	}
	return &wg
}

// hold says the first words on c, then waits in silence for the daemon
// to close it or ctx to end.
func (f Connections) hold(ctx context.Context, c net.Conn, st *SilentStats) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	if f.Say != nil {
		if err := f.Say(countingConn{c, &st.Said}); err != nil {
			if ctx.Err() == nil {
				st.Closed.Add(1)
			}
			return
		}
	}
	silent := time.Now()
	var buf [512]byte
	var err error
	for err == nil {
		_, err = c.Read(buf[:]) // what the daemon says; only it ends this
	}
	if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		st.Closed.Add(1)
		held := time.Since(silent).Milliseconds()
		for m := st.MaxHeldMs.Load(); held > m && !st.MaxHeldMs.CompareAndSwap(m, held); m = st.MaxHeldMs.Load() {
		}
	}
}

// countingConn counts the bytes written on a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// JERICalls is what a Jini ERI client says that opens sessions calls on
// a connection and never ends one: the mux connection header, then the
// first bytes bytes of a call on each of sessions sessions (at most 256),
// the daemon's header read in between.
func JERICalls(sessions, bytes int) func(net.Conn) error {
	const frame = 60_000 // a Data message's body, under its 64 KiB bound
	return func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("Jmux\x01\x00\x00\x00")); err != nil { // version 1, no ration
			return err
		}
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return fmt.Errorf("the daemon's mux header: %w", err)
		}
		c.SetDeadline(time.Time{})
		msg := make([]byte, 4+frame)
		for id := range min(sessions, 256) {
			op := byte(0x80 | 0x10) // Data, Open
			for left := bytes; left > 0; op = 0x80 {
				k := min(left, frame)
				msg[0], msg[1] = op, byte(id)
				binary.BigEndian.PutUint16(msg[2:], uint16(k))
				if _, err := c.Write(msg[:4+k]); err != nil {
					return err
				}
				left -= k
			}
		}
		return nil
	}
}

// Usage is a process's resident memory and CPU time, from /proc.
type Usage struct {
	// RSSKiB is the resident set: AnonKiB of it the process's own
	// memory, FileKiB files mapped (the store's database, the binary).
	RSSKiB, AnonKiB, FileKiB int
	CPU                      time.Duration // user and system
}

// ReadUsage reads pid's usage now.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(l, ":")
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		switch k {
		case "VmRSS":
			u.RSSKiB = n
		case "RssAnon":
			u.AnonKiB = n
		case "RssFile":
			u.FileKiB = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name may hold spaces: the fields start after its ')'.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	u.CPU = time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	return u, nil
}

// Meter samples a process's usage every 100 ms until stopped: the
// sample of the highest resident memory, and the CPU spent over the time
// measured.
type Meter struct {
	pid   int
	start time.Time
	first Usage
	stop  chan struct{}
	done  chan struct{}

	mu   sync.Mutex
	peak Usage
}

// StartMeter starts sampling pid.
func StartMeter(pid int) (*Meter, error) {
	u, err := ReadUsage(pid)
	if err != nil {
		return nil, err
	}
	m := &Meter{pid: pid, start: time.Now(), first: u, peak: u, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			if u, err := ReadUsage(pid); err == nil {
				m.mu.Lock()
				if u.RSSKiB > m.peak.RSSKiB {
					m.peak = u
				}
				m.mu.Unlock()
			}
		}
	}()
	return m, nil
}

// Stop ends the sampling and returns the sample of the highest RSS, and
// the CPU the process used as a share of one core over the time
// measured.
func (m *Meter) Stop() (peak Usage, cpuShare float64) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	peak = m.peak
	m.mu.Unlock()
	u, err := ReadUsage(m.pid)
	if err != nil {
		return peak, 0
	}
	return peak, float64(u.CPU-m.first.CPU) / float64(time.Since(m.start))
}

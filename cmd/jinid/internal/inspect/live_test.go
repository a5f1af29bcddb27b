package inspect

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// Live capture on a lab host sees a lookup service's announcements and
// the host's own unicast exchange with it, and --write saves frames that
// decode to the same records.
func TestLiveCapture(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	sniffer, lh := lab.Host("sniffer"), lab.Host("lus")
	sniffer.Attach(lan)
	ll := lh.Attach(lan)
	lus, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: 2, ServiceID: discovery.ServiceID{5}, Groups: []string{"lab"},
		Namespace: lh.Namespace(), Announce: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer lus.Close()

	var pcap bytes.Buffer
	w := pcapgo.NewWriter(&pcap)
	if err := w.WriteFileHeader(Snaplen, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var live []Record
	count := func(kind string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range live {
			if r.Kind == kind {
				n++
			}
		}
		return n
	}
	done := make(chan error, 1)
	go func() {
		done <- Live(ctx, LiveConfig{Interfaces: []string{"eth0"}, Namespace: sniffer.Namespace(), Write: pcapFrames{w}}, NewDecoder(func(r Record) {
			mu.Lock()
			live = append(live, r)
			mu.Unlock()
		}))
	}()
	// The capture is open once it has seen an announcement.
	testenv.Until(t, "an announcement captured", func() bool { return count(KindMulticastAnnouncement) > 0 })

	var conn net.Conn
	if err := sniffer.Namespace().Do(func() error {
		var err error
		conn, err = net.Dial("tcp", netip.AddrPortFrom(ll.IPv4, 4160).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := unicast.Discover(t.Context(), conn, 2); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	testenv.Until(t, "the unicast exchange captured", func() bool {
		return count(KindUnicastRequest) == 1 && count(KindUnicastResponse) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	check := func(name string, rs []Record) {
		t.Helper()
		kinds := map[string]int{}
		for _, r := range rs {
			if r.Error != "" {
				t.Errorf("%s: %+v", name, r)
			}
			kinds[r.Kind]++
			if r.Kind == KindMulticastAnnouncement && r.Fields.(*AnnouncementFields).Host != ll.IPv4.String() && r.Source[0] != '[' {
				t.Errorf("%s: announcement %+v", name, r.Fields)
			}
		}
		if kinds[KindMulticastAnnouncement] == 0 || kinds[KindUnicastRequest] != 1 || kinds[KindUnicastResponse] != 1 {
			t.Errorf("%s: decoded %v; want announcements and one unicast exchange", name, kinds)
		}
	}
	check("live", live)
	var saved []Record
	if err := readAll(&pcap, func(r Record) { saved = append(saved, r) }); err != nil {
		t.Fatal(err)
	}
	check("written capture", saved)
}

func TestLiveErrors(t *testing.T) {
	err := Live(t.Context(), LiveConfig{Interfaces: []string{"no-such-if0"}}, NewDecoder(func(Record) {}))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`interface "no-such-if0"`)) {
		t.Fatalf("error %v", err)
	}
}

func TestCaptureFilter(t *testing.T) {
	vm, err := bpf.NewVM(tcpUDPFilter)
	if err != nil {
		t.Fatal(err)
	}
	frame := func(etherType uint16, protoAt int, proto byte) []byte {
		b := make([]byte, 60)
		b[12], b[13] = byte(etherType>>8), byte(etherType)
		if protoAt > 0 {
			b[protoAt] = proto
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		pass bool
	}{
		{"IPv4 UDP", frame(0x0800, 23, 17), true},
		{"IPv4 TCP", frame(0x0800, 23, 6), true},
		{"IPv4 ICMP", frame(0x0800, 23, 1), false},
		{"IPv6 UDP", frame(0x86DD, 20, 17), true},
		{"IPv6 TCP", frame(0x86DD, 20, 6), true},
		{"IPv6 ICMPv6", frame(0x86DD, 20, 58), false},
		{"ARP", frame(0x0806, 0, 0), false},
	} {
		n, err := vm.Run(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if (n > 0) != tc.pass {
			t.Errorf("%s: filter kept %d bytes, want pass=%v", tc.name, n, tc.pass)
		}
	}
}

// The packet socket asks for tcpdump's buffer, and counts the frames the
// kernel dropped when the capture falls behind: here, a burst into a
// buffer shrunk to its least while nothing reads.
func TestCaptureCountsDrops(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	sniffer, sender := lab.Host("sniffer"), lab.Host("sender")
	sl := sniffer.Attach(lan)
	sender.Attach(lan)
	src, err := openPacketSocket(sniffer.Namespace(), "eth0", tcpUDPFilter, false)
	if err != nil {
		t.Fatal(err)
	}
	f := src.f
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	rc.Control(func(fd uintptr) {
		size, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 0)
	})
	if size < captureBuffer {
		t.Errorf("receive buffer %d bytes, want at least %d", size, captureBuffer)
	}
	if n := dropped(f); n != 0 {
		t.Fatalf("%d drops before any traffic", n)
	}
	if err := sender.Namespace().Do(func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(sl.IPv4, 9).String())
		if err != nil {
			return err
		}
		defer c.Close()
		for range 500 {
			c.Write(make([]byte, 1000))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "drops counted", func() bool { return dropped(f) > 0 })
}

// pcapFrames writes frames to a pcap writer.
type pcapFrames struct{ w *pcapgo.Writer }

func (p pcapFrames) WriteFrame(_ int, ci gopacket.CaptureInfo, data []byte) error {
	return p.w.WritePacket(ci, data)
}

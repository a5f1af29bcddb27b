package mcast

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"golang.org/x/net/ipv4"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// A flood of datagrams that are not discovery messages is counted, by
// reason, and valid announcements sent amid it are all still processed.
// The flood is bounded (10,000 datagrams, paced) and stays inside the lab.
func TestFloodCountedAndAnnouncementsProcessed(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	victim, attacker := lab.Host("victim"), lab.Host("attacker")
	victim.Attach(lan)
	al := attacker.Attach(lan)

	var mu sync.Mutex
	seen := map[int64]bool{}
	var in *Inbound
	n := startNode(t, victim, func(c *transportConfig) {
		c.NoIPv6 = true
		in = &Inbound{Metrics: c.Metrics, OnAnnouncement: func(a discovery.Announcement, p Packet) {
			if p.IfName != "eth0" || p.Src.Addr() != al.IPv4 {
				t.Errorf("announcement from %s on %s", p.Src, p.IfName)
			}
			mu.Lock()
			seen[a.Sequence] = true
			mu.Unlock()
		}}
		c.Handler = func(p Packet) { in.Handle(p) }
	})

	var conn net.PacketConn
	if err := attacker.Namespace().Do(func() error {
		var err error
		conn, err = net.ListenPacket("udp4", "0.0.0.0:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := ipv4.NewPacketConn(conn)
	if err := p.SetMulticastInterface(&net.Interface{Index: attacker.IfIndex(al.Name)}); err != nil {
		t.Fatal(err)
	}
	dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(discovery.AnnouncementGroupV4, discovery.Port))

	v2 := vectors.Named("v2.announcement#0").Bytes()
	unknownFormat := append([]byte{}, v2...)
	unknownFormat[5] ^= 0xFF
	bad := []struct {
		reason, counter string
		b               []byte
	}{
		{"malformed", "rejected", []byte{0, 0, 0}},
		{"malformed", "rejected", v2[:40]},
		{"malformed", "rejected", vectors.Named("v1.announcement#0").Bytes()[:50]},
		{"version", "rejected", []byte{0x13, 0x37, 0, 0, 1, 2, 3, 4}},
		{"format", "rejected", unknownFormat},
		{"oversized", "dropped", make([]byte, 9000)},
	}
	const floods, valid = 10000, 200
	want := map[string]float64{}
	sent := 0
	datagrams := 0
	for i := 0; i < floods; i++ {
		b := bad[i%len(bad)]
		if _, err := conn.WriteTo(b.b, dst); err != nil {
			t.Fatal(err)
		}
		datagrams++
		want[b.counter+"/"+b.reason]++
		if i%(floods/valid) == 0 {
			a := discovery.Announcement{Version: 2, Sequence: int64(sent), Host: al.IPv4.String(), Port: 4160, Groups: []string{"lab"}}
			pk, _ := a.Encode(512)
			if _, err := conn.WriteTo(pk[0], dst); err != nil {
				t.Fatal(err)
			}
			sent++
			datagrams++
		}
		if i%30 == 29 {
			// Paced by what the victim has taken in, so that the test
			// measures jinid's handling, not the kernel's socket buffer.
			waitReceived(t, n, datagrams)
		}
	}

	var got map[string]float64
	var nseen int
	testenv.Until(t, "every datagram of the flood counted by reason, every valid announcement processed", func() bool {
		got = map[string]float64{}
		for k := range want {
			switch k[:len("dropped")] {
			case "dropped":
				got[k] = float64(n.metrics.dropped.Get("eth0", k[len("dropped/"):]))
			default:
				got[k] = float64(n.metrics.rejected.Get("eth0", k[len("rejected/"):]))
			}
		}
		mu.Lock()
		nseen = len(seen)
		mu.Unlock()
		return nseen == sent && equal(got, want)
	})
	t.Logf("flood of %d counted by reason %v; %d/%d valid announcements processed", floods, got, nseen, sent)
	if v := n.metrics.messages.Get("eth0", "announcement", "2"); v != uint64(sent) {
		t.Errorf("announcements counted %v, want %d", v, sent)
	}
}

func waitReceived(t *testing.T, n *node, want int) {
	t.Helper()
	testenv.Until(t, fmt.Sprintf("the victim to receive the %d datagrams sent", want), func() bool { return n.metrics.received.Get("eth0", "ipv4") >= uint64(want) })
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

package mcast

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// One host, three subscribers of the discovery port (as the lookup
// service's responder, the lookup discovery service and a second group
// discovery would be) and one of another port (as mDNS is): each
// announcement is read and decoded once and reaches every subscriber;
// each interface and family has one socket per port; a subscriber that
// leaves hears nothing more, and the port closes with its last one.
func TestHostDecodesOnceForEverySubscriber(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	hh, sender := lab.Host("h"), lab.Host("sender")
	hh.Attach(lan)
	sl := sender.Attach(lan)

	metrics := NewMetrics(metrics.New())
	host, err := NewNetlinkHost(HostConfig{Namespace: hh.Namespace(), Metrics: metrics, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Shutdown(context.Background())
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var counts [3]atomic.Int64
	var ports []*Port
	for i := range counts {
		p, err := host.Open(PortConfig{OnMessage: func(m Message) {
			if m.Announcement != nil && m.Announcement.Host == sl.IPv4.String() {
				counts[i].Add(1)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, p)
	}
	other, err := host.Open(PortConfig{Port: 5353, Groups: []netip.Addr{netip.MustParseAddr("224.0.0.251")}, OnPacket: func(Packet) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	testenv.Until(t, "both ports joined", func() bool { return len(ports[0].Joined()) >= 2 && len(other.Joined()) >= 1 })
	// One socket per interface and family on the discovery port (the
	// gauge counts the discovery port's), one per interface on the other.
	for _, f := range []string{"ipv4", "ipv6"} {
		if n := metrics.joined.Get(f); n != 1 {
			t.Errorf("%s discovery sockets: %v, want 1 for three subscribers", f, n)
		}
	}
	if n := len(other.Joined()); n != 1 {
		t.Errorf("port 5353 serves %d interface-families, want 1 (IPv4 only: its one group)", n)
	}

	sp := labSender(t, sender)
	const sent = 20
	a := discovery.Announcement{Version: discovery.ProtocolV2, Host: sl.IPv4.String(), Port: 4160, ServiceID: discovery.ServiceID{1}, Groups: []string{"lab"}}
	for i := range sent {
		a.Sequence = int64(i + 1)
		if err := sp.Send(Announcements, func(Joined) ([][]byte, error) { return a.Encode(discovery.DefaultMaxPacketSize) }); err != nil {
			t.Fatal(err)
		}
	}
	waitCounts := func(want int64) {
		t.Helper()
		testenv.Until(t, fmt.Sprintf("every subscriber to hear %d", want), func() bool {
			for i := range counts {
				if counts[i].Load() < want {
					return false
				}
			}
			return true
		})
	}
	waitCounts(sent)
	// Each datagram decoded once, whatever the number of subscribers.
	if n := metrics.messages.Get("eth0", "announcement", "2"); n != sent {
		t.Errorf("%v announcements decoded for %d sent to three subscribers, want %d", n, sent, sent)
	}

	// A subscriber leaves: the others go on, it hears nothing more.
	ports[2].Close()
	before := counts[2].Load()
	a.Sequence = 100
	sp.Send(Announcements, func(Joined) ([][]byte, error) { return a.Encode(discovery.DefaultMaxPacketSize) })
	testenv.Until(t, "the remaining subscribers to hear on", func() bool { return counts[0].Load() >= sent+1 && counts[1].Load() >= sent+1 })
	if counts[2].Load() != before {
		t.Error("a closed handle still hears")
	}
	// The port closes with its last handle: its sockets go.
	ports[0].Close()
	ports[1].Close()
	for _, f := range []string{"ipv4", "ipv6"} {
		if n := metrics.joined.Get(f); n != 0 {
			t.Errorf("%s sockets after the last handle closed: %v", f, n)
		}
	}
	if _, err := host.Open(PortConfig{}); err != nil {
		t.Fatalf("reopening the port: %v", err)
	}
}

// labSender is a discovery port of a host of its own in a lab host.
func labSender(t *testing.T, h *netlab.Host) *Port {
	t.Helper()
	host, err := NewNetlinkHost(HostConfig{Namespace: h.Namespace(), NoIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Shutdown(context.Background()) })
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, err := host.Open(PortConfig{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the sender to join", func() bool { return len(p.Joined()) >= 1 })
	return p
}

func TestHostConfigErrors(t *testing.T) {
	if _, err := NewHost(HostConfig{}); err == nil {
		t.Error("no monitor: no error")
	}
}

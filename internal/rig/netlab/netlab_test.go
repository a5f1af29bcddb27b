package netlab

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// listen opens a UDP socket in host h joined to group on its first link.
func listen(t *testing.T, h *Host, group netip.Addr) *ipv4.PacketConn {
	t.Helper()
	var pc net.PacketConn
	err := h.Namespace().Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", "0.0.0.0:4160")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	p := ipv4.NewPacketConn(pc)
	ifi := &net.Interface{Index: h.IfIndex(h.Links()[0].Name), Name: h.Links()[0].Name}
	if err := p.JoinGroup(ifi, &net.UDPAddr{IP: group.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetControlMessage(ipv4.FlagInterface|ipv4.FlagDst, true); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMulticastBetweenHosts(t *testing.T) {
	lab := New(t)
	lan := lab.LAN()
	a, b := lab.Host("a"), lab.Host("b")
	la, lb := a.Attach(lan), b.Attach(lan)
	group := netip.MustParseAddr("224.0.1.84")
	rx := listen(t, b, group)

	var tx net.PacketConn
	if err := a.Namespace().Do(func() error {
		var err error
		tx, err = net.ListenPacket("udp4", "0.0.0.0:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ptx := ipv4.NewPacketConn(tx)
	if err := ptx.SetMulticastInterface(&net.Interface{Index: a.IfIndex(la.Name)}); err != nil {
		t.Fatal(err)
	}
	dst := &net.UDPAddr{IP: group.AsSlice(), Port: 4160}
	if _, err := tx.WriteTo([]byte("hello"), dst); err != nil {
		t.Fatal(err)
	}
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	n, cm, src, err := rx.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "hello" || src.(*net.UDPAddr).IP.String() != la.IPv4.String() ||
		cm.IfIndex != b.IfIndex(lb.Name) || cm.Dst.String() != group.String() {
		t.Fatalf("got %q from %v on if %d to %v", buf[:n], src, cm.IfIndex, cm.Dst)
	}
}

func TestCleanup(t *testing.T) {
	var names []string
	t.Run("lab", func(t *testing.T) {
		lab := New(t)
		h := lab.Host("x")
		h.Attach(lab.LAN())
		names = []string{h.NetnsName(), lab.bridge}
	})
	out, _ := exec.CommandContext(context.Background(), "ip", "netns", "list").Output()
	for _, n := range names {
		if strings.Contains(string(out), n) {
			t.Errorf("namespace %s left behind", n)
		}
	}
}

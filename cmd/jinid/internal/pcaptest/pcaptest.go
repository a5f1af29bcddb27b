// Package pcaptest writes packet captures of Jini discovery traffic for
// tests, with gopacket's pure-Go pcapgo.
package pcaptest

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// capture writes a pcap of Ethernet frames, one call per packet.
type Capture struct {
	t    testing.TB
	w    *pcapgo.Writer
	buf  bytes.Buffer
	now  time.Time
	seqs map[string]uint32
}

// NewCapture starts an Ethernet pcap in memory.
func NewCapture(t testing.TB) *Capture {
	c := &Capture{t: t, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), seqs: map[string]uint32{}}
	c.w = pcapgo.NewWriter(&c.buf)
	if err := c.w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	return c
}

// Bytes returns the capture so far.
func (c *Capture) Bytes() []byte { return c.buf.Bytes() }

func (c *Capture) write(ls ...gopacket.SerializableLayer) {
	c.t.Helper()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		c.t.Fatal(err)
	}
	c.now = c.now.Add(time.Millisecond)
	ci := gopacket.CaptureInfo{Timestamp: c.now, CaptureLength: len(buf.Bytes()), Length: len(buf.Bytes())}
	if err := c.w.WritePacket(ci, buf.Bytes()); err != nil {
		c.t.Fatal(err)
	}
}

func ipLayers(src, dst string) (gopacket.SerializableLayer, gopacket.SerializableLayer, gopacket.NetworkLayer) {
	s, d := net.ParseIP(src), net.ParseIP(dst)
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{1, 0, 0x5e, 0, 1, 0x54}}
	if s.To4() == nil {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 15, SrcIP: s, DstIP: d}
		return eth, ip, ip
	}
	eth.EthernetType = layers.EthernetTypeIPv4
	ip := &layers.IPv4{Version: 4, TTL: 15, SrcIP: s, DstIP: d}
	return eth, ip, ip
}

// UDP writes a datagram to the discovery port.
func (c *Capture) UDP(src string, sport int, dst string, payload []byte) {
	c.UDPTo(src, sport, dst, discovery.Port, payload)
}

// UDPTo writes a datagram to any port.
func (c *Capture) UDPTo(src string, sport int, dst string, dport int, payload []byte) {
	eth, ipl, nl := ipLayers(src, dst)
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	switch ip := nl.(type) {
	case *layers.IPv4:
		ip.Protocol = layers.IPProtocolUDP
	case *layers.IPv6:
		ip.NextHeader = layers.IPProtocolUDP
	}
	u.SetNetworkLayerForChecksum(nl)
	c.write(eth, ipl, u, gopacket.Payload(payload))
}

// TCP writes one segment; sequence numbers are tracked per direction.
func (c *Capture) TCP(src string, sport int, dst string, dport int, syn, fin bool, payload []byte) {
	c.TCPAt(src, sport, dst, dport, syn, fin, payload, -1)
}

// TCPAt writes a segment at a given sequence number (for out-of-order
// delivery) unless seqOverride is negative.
func (c *Capture) TCPAt(src string, sport int, dst string, dport int, syn, fin bool, payload []byte, seqOverride int64) {
	eth, ipl, nl := ipLayers(src, dst)
	switch ip := nl.(type) {
	case *layers.IPv4:
		ip.Protocol = layers.IPProtocolTCP
	case *layers.IPv6:
		ip.NextHeader = layers.IPProtocolTCP
	}
	key := fmt.Sprintf("%s:%d", src, sport)
	seq := c.seqs[key]
	if seq == 0 {
		seq = 1000
	}
	useSeq := seq
	if seqOverride >= 0 {
		useSeq = uint32(seqOverride)
	}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: useSeq, SYN: syn, FIN: fin, ACK: !syn, Window: 65535}
	tcp.SetNetworkLayerForChecksum(nl)
	c.write(eth, ipl, tcp, gopacket.Payload(payload))
	if seqOverride < 0 {
		next := seq + uint32(len(payload))
		if syn || fin {
			next++
		}
		c.seqs[key] = next
	}
}

// Seq is the next sequence number of a direction.
func (c *Capture) Seq(src string, sport int) uint32 {
	return c.seqs[fmt.Sprintf("%s:%d", src, sport)]
}

// Scenario is a capture with every kind of discovery message, good and
// bad, for golden tests of inspect.
func Scenario(t testing.TB) []byte {
	c := NewCapture(t)
	v := func(name string) []byte { return vectors.Named(name).Bytes() }

	// Multicast, both versions, both families.
	c.UDP("192.0.2.10", 4160, "224.0.1.84", v("v1.announcement#0"))
	c.UDP("192.0.2.10", 4160, "224.0.1.84", v("v2.announcement#0"))
	c.UDP("192.0.2.20", 50000, "224.0.1.85", v("v1.request#0"))
	c.UDP("192.0.2.20", 50000, "224.0.1.85", v("v2.request.allgroups#0"))
	c.UDP("2001:db8::10", 4160, "ff05::155", v("v2.announcement#0"))
	// Hostile and odd datagrams: each one line, and the dump carries on.
	c.UDP("192.0.2.66", 4160, "224.0.1.84", v("v1.announcement#0")[:30])
	c.UDP("192.0.2.66", 4160, "224.0.1.84", []byte{0, 0, 0, 9, 1, 2, 3})
	c.UDP("192.0.2.66", 4160, "224.0.1.85", []byte{0, 0, 0, 2, 1, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 0})
	c.UDP("192.0.2.66", 4160, "224.0.1.84", []byte{0, 0, 0, 1, 0xff, 0xff})

	// A unicast exchange with a Java lookup service on 4160, the
	// response split in two segments that arrive out of order.
	cl, sv := "192.0.2.20", "192.0.2.10"
	c.TCP(cl, 40000, sv, 4160, true, false, nil)
	c.TCP(sv, 4160, cl, 40000, true, false, nil)
	c.TCP(cl, 40000, sv, 4160, false, false, v("v2.unicast.request"))
	resp := v("v2.unicast.response")
	base := c.Seq(sv, 4160)
	c.TCPAt(sv, 4160, cl, 40000, false, false, resp[200:], int64(base)+200)
	c.TCPAt(sv, 4160, cl, 40000, false, false, resp[:200], int64(base))
	c.seqs[fmt.Sprintf("%s:%d", sv, 4160)] = base + uint32(len(resp))
	c.TCP(sv, 4160, cl, 40000, false, true, nil)
	c.TCP(cl, 40000, sv, 4160, false, true, nil)

	// A jinid lookup service answering the v1 request above by connecting
	// back to the requester's port 45678; the requester speaks first.
	id, _ := discovery.ParseServiceID("01234567-89ab-cdef-fedc-ba9876543210")
	jresp := &unicast.Response{Version: 1, Groups: []string{"", "lab"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{
		ServiceID: id, APIURL: "http://192.0.2.30:4162", Groups: []string{"", "lab"}, Locator: "jini://192.0.2.30:4160"}}}
	jb, err := jresp.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	lus := "192.0.2.30"
	c.TCP(lus, 41000, cl, 45678, true, false, nil)
	c.TCP(cl, 45678, lus, 41000, true, false, nil)
	c.TCP(cl, 45678, lus, 41000, false, false, v("v1.unicast.request"))
	c.TCP(lus, 41000, cl, 45678, false, false, jb)
	c.TCP(lus, 41000, cl, 45678, false, true, nil)
	c.TCP(cl, 45678, lus, 41000, false, true, nil)

	// A lookup service that accepts none of the formats, and a garbled
	// response.
	c.TCP(cl, 40001, sv, 4160, false, false, v("v2.unicast.request"))
	c.TCP(sv, 4160, cl, 40001, false, false, []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0})
	c.TCP(cl, 40002, sv, 4160, false, false, v("v1.unicast.request"))
	c.TCP(sv, 4160, cl, 40002, false, false, []byte{0xAC, 0xED, 0, 5, 0x42})

	// Not discovery traffic: ignored.
	c.UDPTo("192.0.2.1", 53, "192.0.2.2", 53, []byte("dns"))
	return c.buf.Bytes()
}

// Pcapng is the pcap capture pcap written again as a pcapng (one
// interface of its link type).
func Pcapng(t testing.TB, pcap []byte) []byte {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(pcap))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriter(&b, r.LinkType())
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

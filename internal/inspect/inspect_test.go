package inspect

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/vectors"
	"github.com/jinid/jinid/unicast"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// capture writes a pcap of Ethernet frames, one call per packet.
type capture struct {
	t    *testing.T
	w    *pcapgo.Writer
	buf  bytes.Buffer
	now  time.Time
	seqs map[string]uint32
}

func newCapture(t *testing.T) *capture {
	c := &capture{t: t, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), seqs: map[string]uint32{}}
	c.w = pcapgo.NewWriter(&c.buf)
	if err := c.w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *capture) write(ls ...gopacket.SerializableLayer) {
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

func (c *capture) udp(src string, sport int, dst string, payload []byte) {
	c.udpTo(src, sport, dst, discovery.Port, payload)
}

func (c *capture) udpTo(src string, sport int, dst string, dport int, payload []byte) {
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

// tcp writes one segment; seq numbers are tracked per direction.
func (c *capture) tcp(src string, sport int, dst string, dport int, syn, fin bool, payload []byte) {
	c.tcpAt(src, sport, dst, dport, syn, fin, payload, -1)
}

func (c *capture) tcpAt(src string, sport int, dst string, dport int, syn, fin bool, payload []byte, seqOverride int64) {
	eth, ipl, nl := ipLayers(src, dst)
	nl.(*layers.IPv4).Protocol = layers.IPProtocolTCP
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

func (c *capture) seq(src string, sport int) uint32 {
	return c.seqs[fmt.Sprintf("%s:%d", src, sport)]
}

func buildCapture(t *testing.T) []byte {
	c := newCapture(t)
	v := func(name string) []byte { return vectors.Named(name).Bytes() }

	// Multicast, both versions, both families.
	c.udp("192.0.2.10", 4160, "224.0.1.84", v("v1.announcement#0"))
	c.udp("192.0.2.10", 4160, "224.0.1.84", v("v2.announcement#0"))
	c.udp("192.0.2.20", 50000, "224.0.1.85", v("v1.request#0"))
	c.udp("192.0.2.20", 50000, "224.0.1.85", v("v2.request.allgroups#0"))
	c.udp("2001:db8::10", 4160, "ff05::155", v("v2.announcement#0"))
	// Hostile and odd datagrams: each one line, and the dump carries on.
	c.udp("192.0.2.66", 4160, "224.0.1.84", v("v1.announcement#0")[:30])
	c.udp("192.0.2.66", 4160, "224.0.1.84", []byte{0, 0, 0, 9, 1, 2, 3})
	c.udp("192.0.2.66", 4160, "224.0.1.85", []byte{0, 0, 0, 2, 1, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 0})
	c.udp("192.0.2.66", 4160, "224.0.1.84", []byte{0, 0, 0, 1, 0xff, 0xff})

	// A unicast exchange with a Java lookup service on 4160, the
	// response split in two segments that arrive out of order.
	cl, sv := "192.0.2.20", "192.0.2.10"
	c.tcp(cl, 40000, sv, 4160, true, false, nil)
	c.tcp(sv, 4160, cl, 40000, true, false, nil)
	c.tcp(cl, 40000, sv, 4160, false, false, v("v2.unicast.request"))
	resp := v("v2.unicast.response")
	base := c.seq(sv, 4160)
	c.tcpAt(sv, 4160, cl, 40000, false, false, resp[200:], int64(base)+200)
	c.tcpAt(sv, 4160, cl, 40000, false, false, resp[:200], int64(base))
	c.seqs[fmt.Sprintf("%s:%d", sv, 4160)] = base + uint32(len(resp))
	c.tcp(sv, 4160, cl, 40000, false, true, nil)
	c.tcp(cl, 40000, sv, 4160, false, true, nil)

	// A jinid lookup service answering the v1 request above by connecting
	// back to the requester's port 45678; the requester speaks first.
	id, _ := discovery.ParseServiceID("01234567-89ab-cdef-fedc-ba9876543210")
	jresp := &unicast.Response{Version: 1, Groups: []string{"", "lab"}, Registrar: unicast.Registrar{Descriptor: &unicast.Descriptor{
		ServiceID: id, APIURL: "http://192.0.2.30:4162", Groups: []string{"", "lab"}, Locator: "jini://192.0.2.30:4160"}}}
	jb, err := jresp.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	lus := "192.0.2.30"
	c.tcp(lus, 41000, cl, 45678, true, false, nil)
	c.tcp(cl, 45678, lus, 41000, true, false, nil)
	c.tcp(cl, 45678, lus, 41000, false, false, v("v1.unicast.request"))
	c.tcp(lus, 41000, cl, 45678, false, false, jb)
	c.tcp(lus, 41000, cl, 45678, false, true, nil)
	c.tcp(cl, 45678, lus, 41000, false, true, nil)

	// A lookup service that accepts none of the formats, and a garbled
	// response.
	c.tcp(cl, 40001, sv, 4160, false, false, v("v2.unicast.request"))
	c.tcp(sv, 4160, cl, 40001, false, false, []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0})
	c.tcp(cl, 40002, sv, 4160, false, false, v("v1.unicast.request"))
	c.tcp(sv, 4160, cl, 40002, false, false, []byte{0xAC, 0xED, 0, 5, 0x42})

	// Not discovery traffic: ignored.
	c.udpTo("192.0.2.1", 53, "192.0.2.2", 53, []byte("dns"))
	return c.buf.Bytes()
}

func TestReadCaptureGolden(t *testing.T) {
	pcap := buildCapture(t)
	var text, js bytes.Buffer
	err := ReadCapture(bytes.NewReader(pcap), func(r Record) {
		if err := WriteText(&text, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, r); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "capture.txt", text.Bytes())
	golden(t, "capture.jsonl", js.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestReadCaptureErrors(t *testing.T) {
	if err := ReadCapture(strings.NewReader("not a capture at all"), func(Record) {}); err == nil || !strings.Contains(err.Error(), "not a pcap or pcapng capture") {
		t.Fatalf("error %v", err)
	}
	pcap := buildCapture(t)
	n := 0
	err := ReadCapture(bytes.NewReader(pcap[:len(pcap)-10]), func(Record) { n++ })
	if err == nil || n == 0 {
		t.Fatalf("truncated capture: %d records, error %v; want records then an error", n, err)
	}
}

func TestReadCapturePcapng(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	c := newCapture(t)
	c.udp("192.0.2.10", 4160, "224.0.1.84", vectors.Named("v2.announcement#0").Bytes())
	// Re-read the single packet from the pcap and write it as pcapng.
	r, _ := pcapgo.NewReader(bytes.NewReader(c.buf.Bytes()))
	data, ci, err := r.ReadPacketData()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(ci, data); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	var got []Record
	if err := ReadCapture(&buf, func(r Record) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != KindMulticastAnnouncement || got[0].Error != "" {
		t.Fatalf("got %+v", got)
	}
}

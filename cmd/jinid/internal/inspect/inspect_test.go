package inspect

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/vectors"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestReadCaptureGolden(t *testing.T) {
	pcap := pcaptest.Scenario(t)
	var text, js bytes.Buffer
	err := readAll(bytes.NewReader(pcap), func(r Record) {
		if err := WriteText(&text, r, TimeRelative); err != nil {
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
	if err := readAll(strings.NewReader("not a capture at all"), func(Record) {}); err == nil || !strings.Contains(err.Error(), "not a pcap or pcapng capture") {
		t.Fatalf("error %v", err)
	}
	pcap := pcaptest.Scenario(t)
	n := 0
	err := readAll(bytes.NewReader(pcap[:len(pcap)-10]), func(Record) { n++ })
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
	c := pcaptest.NewCapture(t)
	c.UDP("192.0.2.10", 4160, "224.0.1.84", vectors.Named("v2.announcement#0").Bytes())
	// Re-read the single packet from the pcap and write it as pcapng.
	r, _ := pcapgo.NewReader(bytes.NewReader(c.Bytes()))
	data, ci, err := r.ReadPacketData()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(ci, data); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	var got []Record
	if err := readAll(&buf, func(r Record) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != KindMulticastAnnouncement || got[0].Error != "" {
		t.Fatalf("got %+v", got)
	}
}

// BenchmarkReadCapture measures decoding a capture end to end (pcap
// parsing, gopacket layers, TCP reassembly, discovery decoding).
func BenchmarkReadCapture(b *testing.B) {
	pcap := pcaptest.Scenario(b)
	n := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(pcap)))
	for b.Loop() {
		if err := readAll(bytes.NewReader(pcap), func(Record) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "records/op")
}

// A Java lookup service's unicast response names the ServiceID its
// registrar proxy carries (Reggie's, as it sent it).
func TestJavaResponseServiceID(t *testing.T) {
	resp, err := os.ReadFile("../../../../java/javaio/testdata/reggie-unicast-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	c := pcaptest.NewCapture(t)
	cl, sv := "192.0.2.20", "192.0.2.10"
	c.TCP(cl, 40000, sv, 4160, true, false, nil)
	c.TCP(sv, 4160, cl, 40000, true, false, nil)
	c.TCP(cl, 40000, sv, 4160, false, false, vectors.Named("v2.unicast.request").Bytes())
	c.TCP(sv, 4160, cl, 40000, false, true, resp)
	c.TCP(cl, 40000, sv, 4160, false, true, nil)
	var text bytes.Buffer
	if err := readAll(bytes.NewReader(c.Bytes()), func(r Record) { WriteText(&text, r, TimeAbsolute) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "registrar=java id=9b2043d1-e829-40e9-8bb9-1a3992edd610 proxy=") {
		t.Fatalf("no Reggie's ServiceID in:\n%s", text.String())
	}
}

// A Java client's notify call names its listener; the lookup service's
// call to that listener is decoded too, even when the notify call's first
// segment was sent twice (a retransmission the LAN delivered both of)
// and its second arrived before the first.
func TestListenerLearntFromNotify(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("../../../../java/javaio/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	muxHeader := []byte("Jmux\x01\x00\x00\x00")
	call := func(body []byte) []byte { // one Data message: open, end of file
		return append([]byte{0x80 | 0x10 | 0x04, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	// The recorded Reggie's registrar listens at 10.77.0.3:35973 and the
	// recorded client's listener at 10.77.0.2:40067.
	client, lookup := "10.77.0.2", "10.77.0.3"
	for _, tc := range []struct {
		name string
		send func(c *pcaptest.Capture, request []byte)
	}{
		{"in order", func(c *pcaptest.Capture, request []byte) {
			c.TCP(client, 40001, lookup, 35973, false, false, request)
		}},
		{"a segment twice", func(c *pcaptest.Capture, request []byte) {
			seq := int64(c.Seq(client, 40001))
			c.TCPAt(client, 40001, lookup, 35973, false, false, request[:700], seq)
			c.TCP(client, 40001, lookup, 35973, false, false, request[:700])
			c.TCP(client, 40001, lookup, 35973, false, false, request[700:])
		}},
		{"out of order", func(c *pcaptest.Capture, request []byte) {
			seq := c.Seq(client, 40001)
			c.TCPAt(client, 40001, lookup, 35973, false, false, request[700:], int64(seq)+700)
			c.TCP(client, 40001, lookup, 35973, false, false, request[:700])
			c.TCPAt(client, 40001, lookup, 35973, false, false, nil, int64(seq)+int64(len(request)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pcaptest.NewCapture(t)
			c.TCP(client, 40000, lookup, 4160, true, false, nil)
			c.TCP(lookup, 4160, client, 40000, true, false, nil)
			c.TCP(client, 40000, lookup, 4160, false, false, vectors.Named("v2.unicast.request").Bytes())
			c.TCP(lookup, 4160, client, 40000, false, true, read("reggie-unicast-v2.bin"))
			c.TCP(client, 40000, lookup, 4160, false, true, nil)

			c.TCP(client, 40001, lookup, 35973, true, false, nil)
			c.TCP(lookup, 35973, client, 40001, true, false, nil)
			tc.send(c, append(slices.Clone(muxHeader), call(read("jeri/07-notify-req.bin"))...))
			c.TCP(lookup, 35973, client, 40001, false, false, append(slices.Clone(muxHeader), call(read("jeri/07-notify-rep.bin"))...))

			c.TCP(lookup, 50000, client, 40067, true, false, nil)
			c.TCP(client, 40067, lookup, 50000, true, false, nil)
			c.TCP(lookup, 50000, client, 40067, false, false, append(slices.Clone(muxHeader), call(read("jeri/16-listener-notify-req.bin"))...))
			c.TCP(client, 40067, lookup, 50000, false, false, append(slices.Clone(muxHeader), call(read("jeri/16-listener-notify-rep.bin"))...))

			var text bytes.Buffer
			if err := readAll(bytes.NewReader(c.Bytes()), func(r Record) { WriteText(&text, r, TimeAbsolute) }); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Registrar.notify/5 -> return", "10.77.0.3:50000 > 10.77.0.2:40067 jeri-call session=0 object=", "RemoteEventListener.notify -> return"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("no %q in:\n%s", want, text.String())
				}
			}
		})
	}
}

// Messages come out in the order of the packets they begin in, a TCP
// exchange's at its first packet's place, even though it is decoded
// when it ends; frame numbers and relative times count from the first
// packet. A version 1 response a lookup service sent on connecting back
// to a requester gives the port the lookup service announced (its
// connection's is of no meaning), and IPv6 host:port fields are
// bracketed.
func TestTimeOrderAndFields(t *testing.T) {
	c := pcaptest.NewCapture(t)
	v := func(name string) []byte { return vectors.Named(name).Bytes() }
	cl, lus := "2001:db8::20", "192.0.2.30"
	c.UDP(lus, 4160, "224.0.1.84", v("v1.announcement#0"))          // 1: announces 192.0.2.10:4160
	c.UDP("192.0.2.10", 4160, "224.0.1.84", v("v1.announcement#0")) // 2
	c.TCP("192.0.2.20", 45678, "192.0.2.10", 41000, true, false, nil)
	c.TCP("192.0.2.20", 45678, "192.0.2.10", 41000, false, false, v("v1.unicast.request")) // 4: the request
	c.UDP("2001:db8::10", 4160, "ff05::155", v("v2.announcement#0"))                       // 5: while it is open
	jresp := &unicast.Response{Version: 1, Groups: []string{"lab"}, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{
		ServiceID: discovery.ServiceID{1}, APIURL: "http://192.0.2.10:4162"}}}
	jb, err := jresp.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.TCP("192.0.2.10", 41000, "192.0.2.20", 45678, false, false, jb)      // 6: the response
	c.UDP(cl, 50000, discovery.RequestGroupV6.String(), v("v1.request#0")) // 7: version 1: reply to its source
	c.TCP("192.0.2.10", 41000, "192.0.2.20", 45678, false, true, nil)
	c.TCP("192.0.2.20", 45678, "192.0.2.10", 41000, false, true, nil)

	var frames []int
	var text bytes.Buffer
	d := NewDecoder(func(r Record) {
		frames = append(frames, r.Frame)
		WriteText(&text, r, TimeRelative)
	})
	// The requester's multicast request, so that the connection to its
	// port 45678 is known as discovery.
	d.rememberReplyTo("192.0.2.20", 45678)
	r, err := pcapgo.NewReader(bytes.NewReader(c.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		p := gopacket.NewPacket(data, layers.LinkTypeEthernet, gopacket.Default)
		p.Metadata().CaptureInfo = ci
		d.Packet(p)
	}
	d.Flush()
	if !slices.Equal(frames, []int{1, 2, 4, 5, 6, 7}) {
		t.Fatalf("frames %v, want 1 2 4 5 6 7 in order:\n%s", frames, &text)
	}
	for _, want := range []string{
		"     1    0.000000 udp",
		"     6    0.005000 tcp 192.0.2.10:41000 > 192.0.2.20:45678 unicast-response v1 lookup=192.0.2.10:4160 ",
		"reply-to=[2001:db8::20]:",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("no %q in:\n%s", want, &text)
		}
	}
	if st := d.Stats(); st.Packets != 9 || st.Decoded["unicast-response v1"] != 1 || st.Incomplete != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A ring of capture files: each at most the size asked (give or take a
// frame and the writer's buffer), the oldest removed, each one readable
// on its own.
func TestCaptureRing(t *testing.T) {
	dir := t.TempDir()
	w, err := NewCaptureWriter(WriterConfig{Path: filepath.Join(dir, "ring.pcapng"), Interfaces: []string{"eth0", "eth1"}, RingFiles: 3, RingBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	frame := pcaptest.NewCapture(t)
	frame.UDP("192.0.2.10", 4160, "224.0.1.84", vectors.Named("v2.announcement#0").Bytes())
	r, _ := pcapgo.NewReader(bytes.NewReader(frame.Bytes()))
	data, ci, err := r.ReadPacketData()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := w.WriteFrame(i%2, ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ring_*.pcapng"))
	if len(files) != 3 {
		t.Fatalf("%d files kept, want 3: %v", len(files), files)
	}
	for _, f := range files {
		fi, _ := os.Stat(f)
		if fi.Size() > 8<<10+4096+200 {
			t.Errorf("%s: %d bytes", f, fi.Size())
		}
		raw, _ := os.ReadFile(f)
		ng, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		for {
			if _, _, err := ng.ReadPacketData(); err != nil {
				break
			}
			n++
		}
		if ng.NInterfaces() != 2 || n == 0 {
			t.Errorf("%s: %d interfaces, %d frames", f, ng.NInterfaces(), n)
		}
	}
	if _, err := NewCaptureWriter(WriterConfig{Path: filepath.Join(dir, "two.pcap"), Interfaces: []string{"eth0", "eth1"}}); err == nil || !strings.Contains(err.Error(), "name a .pcapng file") {
		t.Errorf("two interfaces in a pcap: %v", err)
	}
}

// -z lookup's ADDRESS gives a host's port when one is known: a version 1
// answer's "host:?" was listed beside the announcements' host:4160.
func TestTallyAddressKnownPort(t *testing.T) {
	tally, err := NewTally([]string{"lookup"})
	if err != nil {
		t.Fatal(err)
	}
	id := "01234567-89ab-cdef-fedc-ba9876543210"
	tally.Add(Record{Version: 1, Fields: &UnicastResponseFields{Host: "192.0.2.10", Registrar: RegistrarField{Kind: "java", ServiceID: id}}})
	tally.Add(Record{Version: 1, Fields: &AnnouncementFields{Host: "192.0.2.10", Port: 4160, ServiceID: id}})
	tally.Add(Record{Version: 1, Fields: &UnicastResponseFields{Host: "192.0.2.30", Registrar: RegistrarField{Kind: "java", ServiceID: id}}})
	var b strings.Builder
	if err := tally.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " 192.0.2.10:4160,192.0.2.30:? ") {
		t.Errorf("want 192.0.2.10:4160 alone for its host, 192.0.2.30:? (no port known) kept:\n%s", b.String())
	}
}

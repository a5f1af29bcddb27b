package inspect

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// 256 one-way TCP streams of 1 MiB each toward port 4160, open all at
// once (a flood, as a hostile host on the LAN sends): the decoder keeps
// at most its memory budget of them (8 MiB here), decoding the oldest as
// they stand and saying what it did not keep; the heap grows by less than
// the budget plus 16 MiB (the assembler's pages, the frame times: bounded
// by counts). Before the
// budget it kept 1 MiB of each: 256 such streams took a live capture to
// 775 MB.
func TestMemoryBudget(t *testing.T) {
	const (
		budget  = 8 << 20
		streams = 256
		segment = 1400
		perConn = (1 << 20) / segment
	)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	d := NewDecoder(func(Record) {})
	d.SetMemory(budget)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: false}
	payload := make([]byte, segment)
	now := time.Unix(1_700_000_000, 0)
	send := func(i int, seq uint32, syn bool, data []byte) {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(i)}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
			EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 0, 1, byte(i)}, DstIP: net.IP{10, 0, 0, 1}}
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 4160, Seq: seq, SYN: syn, ACK: !syn, Window: 65535}
		if err := gopacket.SerializeLayers(buf, opts, eth, ip, tcp, gopacket.Payload(data)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Microsecond)
		p := gopacket.NewPacket(buf.Bytes(), layers.LinkTypeEthernet, gopacket.Default)
		p.Metadata().CaptureInfo = gopacket.CaptureInfo{Timestamp: now, CaptureLength: len(buf.Bytes()), Length: len(buf.Bytes())}
		d.Packet(p)
	}
	for i := range streams {
		send(i+2, 1000, true, nil)
	}
	for n := range perConn {
		for i := range streams {
			send(i+2, uint32(1001+n*segment), false, payload)
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := d.Stats()
	grown := int64(ms.HeapInuse) - int64(before.HeapInuse)
	t.Logf("kept %d bytes of %d sent; %d exchanges decoded early, %d bytes not kept; the heap grew by %d",
		d.kept, streams*perConn*segment, st.Early, st.Dropped, grown)
	if d.kept > budget {
		t.Errorf("the open exchanges keep %d bytes, past the budget of %d", d.kept, budget)
	}
	if grown > budget+16<<20 {
		t.Errorf("the heap grew by %d bytes, past the budget plus 16 MiB", grown)
	}
	if st.Early == 0 && st.Dropped == 0 {
		t.Error("nothing said of what was not kept")
	}
	d.Flush()
}

package inspect

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// pcapFile is a little-endian pcap file header (Ethernet) with snaplen,
// then recs.
func pcapFile(snaplen uint32, recs ...[]byte) []byte {
	var b bytes.Buffer
	h := make([]byte, 24)
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], snaplen)
	binary.LittleEndian.PutUint32(h[20:], 1)
	b.Write(h)
	for _, r := range recs {
		b.Write(r)
	}
	return b.Bytes()
}

// record is a pcap record header claiming incl of orig bytes, and data.
func record(incl, orig uint32, data []byte) []byte {
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[8:], incl)
	binary.LittleEndian.PutUint32(h[12:], orig)
	return append(h, data...)
}

// Crafted pcap files whose lengths claim ~4 GiB are an error naming the
// frame and offset, read before anything is allocated for them (on a
// 32-bit build, GOARCH=386, they panicked or aborted); a file cut short
// is an error too, never a clean end.
func TestCaptureLengths(t *testing.T) {
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"a record claiming 4 GiB", pcapFile(65535, record(0xfffffff0, 0xfffffff0, nil)), "frame 1 at offset 24 claims 4294967280 bytes"},
		{"a snap length of 4 GiB and a record as large", pcapFile(0xffffffff, record(0x7fffffff, 0x7fffffff, nil)), "frame 1 at offset 24 claims"},
		{"more captured than sent", pcapFile(65535, record(60, 10, make([]byte, 60))), "claims 60 bytes captured of 10"},
		{"a record header cut short", append(pcapFile(65535), 1, 2, 3), "its record header is cut short"},
		{"a record's data cut short", pcapFile(65535, record(60, 60, make([]byte, 10))), "reading capture"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(func(Record) {})
			err := ReadCapture(bytes.NewReader(c.file), d)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error with %q", err, c.want)
			}
		})
	}
}

// ngBlock is a little-endian pcapng block of type typ holding body,
// its length as claimed (0: the true one).
func ngBlock(typ uint32, body []byte, claimed uint32) []byte {
	n := uint32(12 + len(body))
	if claimed == 0 {
		claimed = n
	}
	b := binary.LittleEndian.AppendUint32(nil, typ)
	b = binary.LittleEndian.AppendUint32(b, claimed)
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, claimed)
}

// ngFile is a pcapng section header (little-endian), an Ethernet
// interface, then blocks.
func ngFile(blocks ...[]byte) []byte {
	shb := binary.LittleEndian.AppendUint32(nil, 0x1A2B3C4D)
	shb = binary.LittleEndian.AppendUint16(shb, 1)
	shb = binary.LittleEndian.AppendUint16(shb, 0)
	shb = append(shb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	out := append(ngBlock(0x0A0D0D0A, shb, 0), ngInterfaceBlock()...)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

func ngInterfaceBlock() []byte {
	return ngBlock(1, []byte{1, 0, 0, 0, 0, 0, 4, 0}, 0) // Ethernet, snap length 262144
}

// ngPacket is an enhanced packet block on interface 0 claiming caplen
// bytes captured, holding data (padded to 4).
func ngPacket(caplen uint32, data []byte) []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[12:], caplen)
	binary.LittleEndian.PutUint32(b[16:], caplen)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return ngBlock(6, b, 0)
}

// Crafted pcapng files: every block is checked whole before pcapgo's
// reader sees it, so a length claiming gigabytes, a million interfaces
// or a file cut in the middle of a block is an error naming the offset
// (before, pcapgo took a cut file for a clean end, and kept every
// interface block it read).
func TestCaptureLengthsPcapng(t *testing.T) {
	frame := make([]byte, 60)
	valid := ngFile(ngPacket(60, frame), ngPacket(60, frame))
	many := make([][]byte, 300)
	for i := range many {
		many[i] = ngInterfaceBlock()
	}
	for _, c := range []struct {
		name string
		file []byte
		want string // "" for none
	}{
		{"a valid file", valid, ""},
		{"a packet claiming 4 GiB captured", ngFile(ngPacket(0xfffffff0, frame)), "frame 1 claims 4294967280 bytes captured"},
		{"a block claiming 4 GiB", ngFile(ngBlock(6, make([]byte, 20), 0xfffffff0)), "claims 4294967280 bytes"},
		{"a section header claiming 1 MiB", append(ngBlock(0x0A0D0D0A, []byte{0x4D, 0x3C, 0x2B, 0x1A}, 0)[:4],
			0, 0, 0x10, 0, 0x4D, 0x3C, 0x2B, 0x1A), "claims 1048576 bytes"},
		{"300 interfaces in one section", ngFile(many...), "more than 256 interfaces"},
		{"a file cut in a packet block", valid[:len(valid)-10], "block at offset 140 (after frame 1): it is cut short"},
		{"a file cut in a block header", append(valid, 6, 0, 0), "its header is cut short"},
		{"a length not a multiple of 4", ngFile(ngBlock(6, make([]byte, 21), 0)), "a multiple of 4"},
		{"a simple packet claiming 4 GiB", ngFile(ngBlock(3, []byte{0xf0, 0xff, 0xff, 0xff}, 0)), "frame 1 claims 262144 bytes captured in a block of 16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(func(Record) {})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := ReadCapture(bytes.NewReader(c.file), d)
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("reading it allocated %d bytes", n)
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%v, want an error with %q", err, c.want)
			}
		})
	}
}

// FuzzReadCapture: no capture file, however crafted, panics the reader
// (run on 32 bits too: GOARCH=386, as .ci/run does) or makes it keep
// more than its bounds.
func FuzzReadCapture(f *testing.F) {
	frame := make([]byte, 60)
	f.Add(pcapFile(65535, record(60, 60, frame)))
	f.Add(pcapFile(0xffffffff, record(0x7fffffff, 0x7fffffff, nil)))
	f.Add(ngFile(ngPacket(60, frame)))
	f.Add(ngFile(ngPacket(0xfffffff0, frame)))
	f.Fuzz(func(t *testing.T, file []byte) {
		d := NewDecoder(func(Record) {})
		ReadCapture(bytes.NewReader(file), d)
	})
}

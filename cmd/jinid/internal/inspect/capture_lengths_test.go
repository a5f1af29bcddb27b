package inspect

import (
	"bytes"
	"encoding/binary"
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

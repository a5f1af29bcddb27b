package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// packetReader is what pcapgo's pcap and pcapng readers have in common.
type packetReader interface {
	gopacket.PacketDataSource
	LinkType() layers.LinkType
}

// ErrEmpty is ReadCapture's error for an input with no byte at all: a
// capture that stopped before it began (tcpdump interrupted at once, on
// a pipe).
var ErrEmpty = errors.New("no capture: the input is empty")

// ReadCapture decodes every discovery packet of a pcap or pcapng capture
// with d, which hands the records on in frame order. A damaged packet
// becomes a record with an error; a damaged file ends the reading with
// an error after the records decoded so far.
func ReadCapture(r io.Reader, d *Decoder) error {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if len(magic) == 0 && errors.Is(err, io.EOF) {
		return ErrEmpty
	}
	if err != nil {
		return fmt.Errorf("reading capture header: %w", err)
	}
	var src packetReader
	var ng *pcapgo.NgReader
	var blocks *ngBlocks
	guard := &lengths{br: br}
	if bytes.Equal(magic, []byte{0x0A, 0x0D, 0x0D, 0x0A}) {
		// pcapgo's pcapng reader reads several blocks a packet: each
		// is checked whole on its way to it.
		guard, blocks = nil, &ngBlocks{r: br}
		ng, err = pcapgo.NewNgReader(blocks, pcapgo.DefaultNgReaderOptions)
		src = ng
	} else {
		var pr *pcapgo.Reader
		if pr, err = pcapgo.NewReader(br); err == nil {
			// A snap length past any frame's is taken as the largest.
			if pr.Snaplen() == 0 || pr.Snaplen() > maxFrame {
				pr.SetSnaplen(maxFrame)
			}
			guard.order = pcapOrder(magic)
			src = pr
		}
	}
	if err != nil && blocks.failed() {
		return blocks.err
	}
	if err != nil {
		return fmt.Errorf("not a pcap or pcapng capture: %w", err)
	}
	defer d.Flush()
	for {
		// Every length the next record or block claims is checked
		// before the reader allocates for it: on a 32-bit build a
		// claimed 4 GiB made its allocation panic.
		if guard != nil {
			if err := guard.check(); err != nil {
				return err
			}
		}
		data, ci, err := src.ReadPacketData()
		if err != nil && blocks.failed() {
			return blocks.err // what was wrong, and where
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if guard != nil && errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("reading capture: frame %d at offset %d: its data is cut short (a truncated file)", guard.frame, guard.start)
		}
		if err != nil {
			return fmt.Errorf("reading capture: %w", err)
		}
		// A pcapng names each frame's interface, and its link type: the
		// interface is the zone of its link-local addresses.
		lt, zone := src.LinkType(), ""
		if ng != nil {
			if intf, err := ng.Interface(ci.InterfaceIndex); err == nil {
				lt = intf.LinkType
				if intf.Name != "any" {
					zone = intf.Name
				}
			}
		}
		if err := d.compileFilter(lt); err != nil {
			return err
		}
		p := gopacket.NewPacket(data, lt, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		p.Metadata().CaptureInfo = ci
		d.SetZone(zone)
		d.Packet(p)
	}
}

// maxFrame is the largest frame a capture may hold (tcpdump's largest
// snap length): what a record claims past it is a damaged (or hostile)
// file.
const maxFrame = 262144

// lengths checks, by peeking, the header of a pcap's next record before
// pcapgo reads it (and allocates what it claims).
type lengths struct {
	br     *bufio.Reader
	order  binary.ByteOrder
	frame  int   // records read so far, for errors
	offset int64 // where the next one begins, for errors
	start  int64 // where the last one began
}

// pcapOrder is the byte order of a pcap file of magic.
func pcapOrder(magic []byte) binary.ByteOrder {
	if magic[0] == 0xa1 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

func (l *lengths) check() error {
	if l.offset == 0 {
		l.offset = 24 // the file header, read
	}
	h, err := l.br.Peek(16)
	if len(h) == 0 && errors.Is(err, io.EOF) {
		return nil // the end: the reader says so
	}
	if len(h) < 16 {
		return fmt.Errorf("reading capture: frame %d at offset %d: its record header is cut short (a truncated file)", l.frame+1, l.offset)
	}
	incl, orig := l.order.Uint32(h[8:12]), l.order.Uint32(h[12:16])
	if incl > maxFrame || incl > orig {
		return fmt.Errorf("reading capture: frame %d at offset %d claims %d bytes captured of %d: a damaged file", l.frame+1, l.offset, incl, orig)
	}
	l.frame++
	l.start = l.offset
	l.offset += 16 + int64(incl)
	return nil
}

// The bounds on a pcapng's blocks: a block holds a frame and its
// options at most; a section names at most maxInterfaces interfaces,
// each described in at most maxHeaderBlock bytes (the reader keeps them
// all: a million interface blocks took 810 MB).
const (
	maxBlock       = maxFrame + 64<<10
	maxHeaderBlock = 16 << 10
	maxInterfaces  = 256
)

// pcapng block types.
const (
	ngSection     = 0x0A0D0D0A
	ngInterface   = 1
	ngObsolete    = 2
	ngSimple      = 3
	ngEnhanced    = 6
	ngByteOrderLE = 0x4D3C2B1A // 0x1A2B3C4D read little-endian as big
)

// ngBlocks passes a pcapng stream on a block at a time, each read whole
// and checked first: its length against the file's rest and the bounds
// above, a packet's captured length against its block and the largest
// frame, the interfaces a section names. What is wrong ends the stream
// with an error naming the frame and the offset, as a file cut short in
// a block does (pcapgo took that for a clean end).
type ngBlocks struct {
	r      io.Reader
	order  binary.ByteOrder // the section's
	buf    []byte           // the block being passed on
	off    int              // how much of it was
	offset int64            // where the next block begins
	frame  int              // packet blocks so far
	ifaces int              // interface blocks of this section
	snap0  uint32           // the snap length of its first interface
	err    error            // io.EOF at the end of the last block
}

func (b *ngBlocks) Read(p []byte) (int, error) {
	for b.off == len(b.buf) {
		if b.err != nil {
			return 0, b.err
		}
		b.err = b.next()
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	return n, nil
}

// failed says the stream ended on something wrong (not at the end).
func (b *ngBlocks) failed() bool { return b != nil && b.err != nil && !errors.Is(b.err, io.EOF) }

// next reads and checks the next block into buf: io.EOF at the end.
// A block found wrong is not passed on: buf is left empty.
func (b *ngBlocks) next() (err error) {
	b.buf, b.off = b.buf[:0], 0
	defer func() {
		if err != nil {
			b.buf = b.buf[:0]
		}
	}()
	where := func(what string, args ...any) error {
		return fmt.Errorf("reading capture: block at offset %d (after frame %d): %s", b.offset, b.frame, fmt.Sprintf(what, args...))
	}
	var h [12]byte
	n, err := io.ReadFull(b.r, h[:8])
	if n == 0 && errors.Is(err, io.EOF) {
		return io.EOF
	}
	if err != nil {
		return where("its header is cut short (a truncated file)")
	}
	head := 8
	if binary.BigEndian.Uint32(h[:4]) == ngSection {
		if _, err := io.ReadFull(b.r, h[8:12]); err != nil {
			return where("its header is cut short (a truncated file)")
		}
		head = 12
		b.order = binary.BigEndian
		if binary.BigEndian.Uint32(h[8:12]) == ngByteOrderLE {
			b.order = binary.LittleEndian
		}
		b.ifaces = 0
	} else if b.order == nil {
		return where("the file does not begin with a section header block")
	}
	typ, length := b.order.Uint32(h[:4]), b.order.Uint32(h[4:8])
	limit := uint32(maxBlock)
	if typ == ngSection || typ == ngInterface {
		limit = maxHeaderBlock
	}
	if length < 12 || length%4 != 0 || length > limit {
		return where("it claims %d bytes (a block is 12 to %d, a multiple of 4): a damaged file", length, limit)
	}
	if int(length) < head {
		return where("it claims %d bytes, less than its header", length)
	}
	b.buf = slices.Grow(b.buf, int(length))[:length]
	copy(b.buf, h[:head])
	if _, err := io.ReadFull(b.r, b.buf[head:]); err != nil {
		return where("it is cut short: %d bytes claimed (a truncated file)", length)
	}
	switch typ {
	case ngInterface:
		if b.ifaces++; b.ifaces > maxInterfaces {
			return where("more than %d interfaces in one section", maxInterfaces)
		}
		if b.ifaces == 1 && length >= 20 {
			b.snap0 = b.order.Uint32(b.buf[12:16])
		}
	case ngEnhanced, ngObsolete:
		b.frame++
		// type, length, interface, 8 bytes of time, captured length,
		// original length, the data padded to 4, options, length.
		if length < 32 {
			return where("a packet block of %d bytes", length)
		}
		if c := b.order.Uint32(b.buf[20:24]); c > maxFrame || 32+int64(c) > int64(length) {
			return where("frame %d claims %d bytes captured in a block of %d: a damaged file", b.frame, c, length)
		}
	case ngSimple:
		b.frame++
		// The packet's original length, cut to the first interface's
		// snap length, is what the reader takes as captured.
		if length < 16 {
			return where("a packet block of %d bytes", length)
		}
		c := b.order.Uint32(b.buf[8:12])
		if b.snap0 != 0 {
			c = min(c, b.snap0)
		}
		if c > maxFrame || 16+int64(c) > int64(length) {
			return where("frame %d claims %d bytes captured in a block of %d: a damaged file", b.frame, c, length)
		}
	}
	b.offset += int64(length)
	return nil
}

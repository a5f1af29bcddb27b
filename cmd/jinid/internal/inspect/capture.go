package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

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
	guard := &lengths{br: br}
	if bytes.Equal(magic, []byte{0x0A, 0x0D, 0x0D, 0x0A}) {
		guard = nil // pcapgo's pcapng reader reads several blocks a packet: not checked here yet
		ng, err = pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
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
		if errors.Is(err, io.EOF) {
			return nil
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
	l.offset += 16 + int64(incl)
	return nil
}

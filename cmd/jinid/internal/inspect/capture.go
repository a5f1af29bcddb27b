package inspect

import (
	"bufio"
	"bytes"
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
	if bytes.Equal(magic, []byte{0x0A, 0x0D, 0x0D, 0x0A}) {
		ng, err = pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		src = ng
	} else {
		src, err = pcapgo.NewReader(br)
	}
	if err != nil {
		return fmt.Errorf("not a pcap or pcapng capture: %w", err)
	}
	defer d.Flush()
	for {
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

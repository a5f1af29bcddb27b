// Package discovery implements the Jini multicast discovery protocols
// (versions 1 and 2, plain-text format): the request and announcement
// packets, encoded byte for byte as the Java reference implementation
// encodes them, including how it splits a large set of groups over several
// packets.
package discovery

import (
	"errors"
	"fmt"
	"net/netip"
	"unicode/utf8"

	"github.com/jinid/jinid/java/javaio"
)

// Protocol versions.
const (
	ProtocolV1 = 1
	ProtocolV2 = 2
)

// Port is the well-known Jini discovery port, for multicast (UDP) and
// unicast (TCP) alike.
const Port = 4160

// Packet sizes. The Java implementation refuses a maximum packet size below
// 512; jinid also refuses one above the largest IPv4 UDP payload.
const (
	DefaultMaxPacketSize = 512
	MinMaxPacketSize     = 512
	MaxMaxPacketSize     = 65507
)

// The multicast groups of the discovery protocols.
var (
	RequestGroupV4      = netip.AddrFrom4([4]byte{224, 0, 1, 85})
	AnnouncementGroupV4 = netip.AddrFrom4([4]byte{224, 0, 1, 84})
	RequestGroupV6      = netip.MustParseAddr("ff05::156")
	AnnouncementGroupV6 = netip.MustParseAddr("ff05::155")
)

// Errors callers act on. Decode errors wrap one of them and say what was
// wrong, where.
var (
	// ErrMalformed: the packet does not follow the protocol.
	ErrMalformed = errors.New("malformed discovery packet")
	// ErrVersion: the packet is of a protocol version jinid does not speak.
	ErrVersion = errors.New("unsupported discovery protocol version")
	// ErrPacketType: a v2 packet of the other kind (a request where an
	// announcement was expected, or the reverse).
	ErrPacketType = errors.New("wrong discovery packet type")
	// ErrEncode: the values cannot be encoded (a group that cannot fit a
	// packet, a port out of range, text that is not UTF-8).
	ErrEncode = errors.New("cannot encode discovery packet")
)

// FormatError reports a v2 packet in a format jinid does not decode. The
// Java implementation ignores such packets; so should callers.
type FormatError struct{ ID FormatID }

func (e *FormatError) Error() string {
	return fmt.Sprintf("unsupported discovery format %s", e.ID)
}

// v2 packet header: int version, byte type, long format ID.
const (
	v2HeaderLen      = 4 + 1 + 8
	typeAnnouncement = 0
	typeRequest      = 1
	serviceIDLen     = 16
	maxUshort        = 0xFFFF
)

// PacketVersion returns the protocol version a multicast packet claims,
// without decoding the rest.
func PacketVersion(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: %d bytes is too short for the protocol version", ErrMalformed, len(b))
	}
	return int(int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))), nil
}

// IsRequest reports whether a v2 packet is a request (true) or an
// announcement (false). It fails for v1 packets, which do not say: their
// destination group does.
func IsRequest(b []byte) (bool, error) {
	v, err := PacketVersion(b)
	if err != nil {
		return false, err
	}
	if v != ProtocolV2 {
		return false, fmt.Errorf("%w: protocol %d packets do not carry their type", ErrVersion, v)
	}
	if len(b) < 5 {
		return false, fmt.Errorf("%w: %d bytes is too short for the packet type", ErrMalformed, len(b))
	}
	switch b[4] {
	case typeRequest:
		return true, nil
	case typeAnnouncement:
		return false, nil
	}
	return false, fmt.Errorf("%w: packet type %d is neither announcement (0) nor request (1)", ErrMalformed, b[4])
}

// decoder reads big-endian fields from a string holding the whole packet,
// so that every string it returns is a substring of that one allocation.
type decoder struct {
	s   string
	off int
	// modified: strings are Java modified UTF-8 (version 1), not UTF-8.
	modified bool
}

func (d *decoder) remaining() int { return len(d.s) - d.off }

// The error constructors are kept out of the readers so that the readers
// stay small enough for the compiler to inline on the hot path.

//go:noinline
func (d *decoder) short(what string, n int) error {
	return fmt.Errorf("%w: %s needs %d bytes at offset %d, %d remain", ErrMalformed, what, n, d.off, d.remaining())
}

//go:noinline
func (d *decoder) overrun(what string, n int) error {
	return fmt.Errorf("%w: %s length %d exceeds remaining %d bytes", ErrMalformed, what, n, d.remaining())
}

//go:noinline
func (d *decoder) notModifiedUTF8(what string, err error) error {
	return fmt.Errorf("%w: %s at offset %d is not valid modified UTF-8: %w", ErrMalformed, what, d.off, err)
}

//go:noinline
func (d *decoder) notUTF8(what string) error {
	return fmt.Errorf("%w: %s at offset %d is not valid UTF-8", ErrMalformed, what, d.off)
}

// need checks that n bytes remain for the named fields, so the fields can
// then be read without further checks.
func (d *decoder) need(what string, n int) error {
	if d.remaining() < n {
		return d.short(what, n)
	}
	return nil
}

func (d *decoder) be16() int {
	v := int(d.s[d.off])<<8 | int(d.s[d.off+1])
	d.off += 2
	return v
}

func (d *decoder) be32() int32 {
	s := d.s[d.off : d.off+4]
	d.off += 4
	return int32(uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3]))
}

func (d *decoder) be64() uint64 {
	s := d.s[d.off : d.off+8]
	d.off += 8
	return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
		uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
}

func (d *decoder) id() ServiceID {
	var id ServiceID
	copy(id[:], d.s[d.off:d.off+serviceIDLen])
	d.off += serviceIDLen
	return id
}

// utf reads a length-prefixed string: UTF-8 in version 2, modified UTF-8
// in version 1 (WIRE.md). The Java implementation encodes version 1 strings
// with writeUTF but decodes them as strict UTF-8, so it cannot read its own
// NUL characters or characters outside the BMP; jinid reads them. Strings
// that are plain UTF-8, as nearly all are, are returned without copying.
func (d *decoder) utf(what string) (string, error) {
	if d.remaining() < 2 {
		return "", d.short(what+" length", 2)
	}
	n := int(d.s[d.off])<<8 | int(d.s[d.off+1])
	d.off += 2
	if n > d.remaining() {
		return "", d.overrun(what, n)
	}
	s := d.s[d.off : d.off+n]
	if !utf8.ValidString(s) {
		if !d.modified {
			return "", d.notUTF8(what)
		}
		conv, err := javaio.DecodeModifiedUTF8([]byte(s))
		if err != nil {
			return "", d.notModifiedUTF8(what, err)
		}
		s = conv
	}
	d.off += n
	return s, nil
}

// groups reads n length-prefixed group names into dst[:0].
func (d *decoder) groups(dst []string, n int) ([]string, error) {
	// Each group takes at least its two length bytes: a count the packet
	// cannot hold is refused before anything is allocated for it.
	if n > d.remaining()/2 {
		return dst[:0], fmt.Errorf("%w: group count %d exceeds remaining %d bytes", ErrMalformed, n, d.remaining())
	}
	if cap(dst) < n {
		dst = make([]string, 0, n)
	}
	dst = dst[:0]
	for i := range n {
		g, err := d.utf("group")
		if err != nil {
			return dst, fmt.Errorf("group %d of %d: %w", i+1, n, err)
		}
		dst = append(dst, g)
	}
	return dst, nil
}

func (d *decoder) serviceIDs(dst []ServiceID, n int) ([]ServiceID, error) {
	if n > d.remaining()/serviceIDLen {
		return dst[:0], fmt.Errorf("%w: service ID count %d exceeds remaining %d bytes", ErrMalformed, n, d.remaining())
	}
	if cap(dst) < n {
		dst = make([]ServiceID, 0, n)
	}
	dst = dst[:0]
	for range n {
		dst = append(dst, d.id())
	}
	return dst, nil
}

// v2Header checks the rest of a v2 header (after the version) for the
// wanted packet type and the plain-text format.
func (d *decoder) v2Header(wantType byte) error {
	if d.remaining() < v2HeaderLen-4 {
		return fmt.Errorf("%w: %d bytes is too short for the %d-byte version 2 header", ErrMalformed, len(d.s), v2HeaderLen)
	}
	if t := d.s[d.off]; t != wantType {
		return fmt.Errorf("%w: packet type %d, want %d", ErrPacketType, t, wantType)
	}
	d.off++
	if fid := d.be64(); FormatID(fid) != PlaintextFormat {
		return &FormatError{ID: FormatID(fid)}
	}
	return nil
}

// version reads the protocol version and leaves the offset after it.
func (d *decoder) version() (int, error) {
	if err := d.need("protocol version", 4); err != nil {
		return 0, err
	}
	v := d.be32()
	if v != ProtocolV1 && v != ProtocolV2 {
		return 0, fmt.Errorf("%w: %d", ErrVersion, v)
	}
	return int(v), nil
}

// v1Port checks a port written as a Java int.
func v1Port(p int32) (int, error) {
	if p < 0 || p > maxUshort {
		return 0, fmt.Errorf("%w: port %d out of range 0-65535", ErrMalformed, p)
	}
	return int(p), nil
}

// encoding helpers -------------------------------------------------------

func checkMaxPacketSize(n int) error {
	if n < MinMaxPacketSize || n > MaxMaxPacketSize {
		return fmt.Errorf("%w: max packet size %d out of range %d-%d", ErrEncode, n, MinMaxPacketSize, MaxMaxPacketSize)
	}
	return nil
}

func checkPort(p int) error {
	if p < 0 || p > maxUshort {
		return fmt.Errorf("%w: port %d out of range 0-65535", ErrEncode, p)
	}
	return nil
}

// checkText refuses strings Java could not hold: a Go string may carry
// bytes that are not UTF-8.
func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrEncode, what, s)
	}
	return nil
}

// utfV1Lens checks strings for version 1, which writes them as
// DataOutput.writeUTF does (modified UTF-8), and returns each one's encoded
// length with its 2-byte prefix.
func utfV1Lens(what string, ss []string) ([]int, error) {
	lens := make([]int, len(ss))
	for i, s := range ss {
		if err := checkText(what, s); err != nil {
			return nil, err
		}
		n := javaio.ModifiedUTF8Len(s)
		if n > javaio.MaxUTFLen {
			return nil, fmt.Errorf("%w: %s of %d encoded bytes is longer than %d", ErrEncode, what, n, javaio.MaxUTFLen)
		}
		lens[i] = 2 + n
	}
	return lens, nil
}

func appendUTFV1(b []byte, s string) []byte {
	b, _ = javaio.AppendUTF(b, s) // length checked by utfV1Lens
	return b
}

// utfV2Len is the length of s as version 2 writes it: a 16-bit length and
// standard UTF-8.
func utfV2Len(s string) int { return 2 + len(s) }

func appendUTFV2(b []byte, s string) []byte {
	b = append(b, byte(len(s)>>8), byte(len(s)))
	return append(b, s...)
}

func appendV2Header(b []byte, typ byte) []byte {
	b = append(b, 0, 0, 0, ProtocolV2, typ)
	return appendU64(b, uint64(PlaintextFormat))
}

func appendU16(b []byte, v int) []byte { return append(b, byte(v>>8), byte(v)) }

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendU64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

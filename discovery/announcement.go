package discovery

import (
	"fmt"
)

// Announcement is a multicast announcement: a lookup service telling the
// LAN where it is and which groups it is a member of. A set of groups too
// large for one packet is sent as several announcements, each complete in
// itself.
type Announcement struct {
	Version int
	// Sequence numbers version 2 announcements so listeners can drop stale
	// and repeated ones. Version 1 has none; it is zero there.
	Sequence  int64
	Host      string
	Port      int
	ServiceID ServiceID
	Groups    []string
}

// DecodeAnnouncement decodes a multicast announcement of either version.
func DecodeAnnouncement(b []byte) (Announcement, error) {
	var a Announcement
	err := a.UnmarshalBinary(b)
	return a, err
}

// UnmarshalBinary decodes a multicast announcement into a, reusing the
// capacity of a.Groups. On error a holds no meaningful value. Bytes after
// the announcement are ignored, as the Java implementation ignores them.
func (a *Announcement) UnmarshalBinary(b []byte) error {
	d := decoder{s: string(b)}
	v, err := d.version()
	if err != nil {
		return err
	}
	d.modified = v == ProtocolV1
	a.Version = v
	if v == ProtocolV1 {
		return a.decodeV1(&d)
	}
	return a.decodeV2(&d)
}

func (a *Announcement) decodeV1(d *decoder) error {
	var err error
	if a.Host, err = d.utf("host"); err != nil {
		return err
	}
	if err := d.need("port, service ID and group count", 4+serviceIDLen+4); err != nil {
		return err
	}
	if a.Port, err = v1Port(d.be32()); err != nil {
		return err
	}
	a.ServiceID = d.id()
	n := d.be32()
	if n < 0 {
		return fmt.Errorf("%w: group count %d is negative", ErrMalformed, n)
	}
	a.Sequence = 0
	a.Groups, err = d.groups(a.Groups, int(n))
	return err
}

func (a *Announcement) decodeV2(d *decoder) error {
	if err := d.v2Header(typeAnnouncement); err != nil {
		return err
	}
	if err := d.need("sequence number", 8); err != nil {
		return err
	}
	a.Sequence = int64(d.be64())
	var err error
	if a.Host, err = d.utf("host"); err != nil {
		return err
	}
	if err := d.need("port and group count", 4); err != nil {
		return err
	}
	a.Port = d.be16()
	if a.Groups, err = d.groups(a.Groups, d.be16()); err != nil {
		return err
	}
	if err := d.need("service ID", serviceIDLen); err != nil {
		return err
	}
	a.ServiceID = d.id()
	return nil
}

// Encode returns the packets that announce a, split over as many packets
// as the groups need exactly as the Java implementation splits them for the
// same maximum packet size.
func (a *Announcement) Encode(maxPacketSize int) ([][]byte, error) {
	if err := checkMaxPacketSize(maxPacketSize); err != nil {
		return nil, err
	}
	if err := checkPort(a.Port); err != nil {
		return nil, err
	}
	switch a.Version {
	case ProtocolV1:
		return a.encodeV1(maxPacketSize)
	case ProtocolV2:
		return a.encodeV2(maxPacketSize)
	}
	return nil, fmt.Errorf("%w: protocol version %d", ErrEncode, a.Version)
}

func (a *Announcement) encodeV1(max int) ([][]byte, error) {
	// version, port, service ID, group count
	const fixedLen = 4 + 4 + serviceIDLen + 4
	hostLen, err := utfV1Lens("host", []string{a.Host})
	if err != nil {
		return nil, err
	}
	if fixedLen+hostLen[0] > max {
		return nil, fmt.Errorf("%w: host %q does not fit a %d-byte packet", ErrEncode, a.Host, max)
	}
	lens, err := utfV1Lens("group", a.Groups)
	if err != nil {
		return nil, err
	}
	for i, n := range lens {
		if n+hostLen[0]+fixedLen > max {
			return nil, fmt.Errorf("%w: group %q too long for a %d-byte packet", ErrEncode, a.Groups[i], max)
		}
	}
	var packets [][]byte
	for next := 0; ; {
		b := make([]byte, 0, max)
		b = appendU32(b, ProtocolV1)
		b = appendUTFV1(b, a.Host)
		b = appendU32(b, uint32(a.Port))
		b = append(b, a.ServiceID[:]...)
		countAt := len(b)
		b = appendU32(b, 0)
		n := 0
		for next < len(lens) && lens[next] <= max-len(b) {
			b = appendUTFV1(b, a.Groups[next])
			next++
			n++
		}
		putU32(b[countAt:], uint32(n))
		packets = append(packets, b)
		if next == len(lens) {
			return packets, nil
		}
	}
}

func (a *Announcement) encodeV2(max int) ([][]byte, error) {
	if err := checkText("host", a.Host); err != nil {
		return nil, err
	}
	for _, g := range a.Groups {
		if err := checkText("group", g); err != nil {
			return nil, err
		}
	}
	// The service ID is written last, into room kept for it.
	limit := max - serviceIDLen
	groups := a.Groups
	var packets [][]byte
	for {
		b := make([]byte, 0, max)
		b = appendV2Header(b, typeAnnouncement)
		b = appendU64(b, uint64(a.Sequence))
		if len(b)+utfV2Len(a.Host)+2+2 > limit {
			return nil, fmt.Errorf("%w: host %q does not fit a %d-byte packet", ErrEncode, a.Host, max)
		}
		b = appendUTFV2(b, a.Host)
		b = appendU16(b, a.Port)
		countAt := len(b)
		b = appendU16(b, 0)
		n := 0
		for len(groups) > 0 && n < maxUshort && len(b)+utfV2Len(groups[0]) <= limit {
			b = appendUTFV2(b, groups[0])
			groups = groups[1:]
			n++
		}
		if n == 0 && len(groups) > 0 {
			return nil, fmt.Errorf("%w: group %q too long for a %d-byte packet", ErrEncode, groups[0], max)
		}
		putU16(b[countAt:], n)
		b = append(b, a.ServiceID[:]...)
		packets = append(packets, b)
		if len(groups) == 0 {
			return packets, nil
		}
	}
}

func putU16(b []byte, v int) { b[0], b[1] = byte(v>>8), byte(v) }

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

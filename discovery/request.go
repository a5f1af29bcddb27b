package discovery

import (
	"fmt"
	"slices"
)

// Request is a multicast request: a discovering entity asking lookup
// services of some groups to contact it by unicast discovery.
type Request struct {
	Version int
	// Host is where the requester listens for the answering connection.
	// Version 2 carries it; version 1 does not, and the datagram's source
	// address stands in for it (decoding leaves it empty).
	Host string
	Port int
	// Groups the requester is interested in; empty means any group.
	Groups []string
	// Known lists lookup services the requester has already heard from:
	// those must not answer.
	Known []ServiceID
}

// Wants reports whether a lookup service with the given ServiceID and
// member groups should answer the request: it is not among the known ones,
// and the request names no groups or one of its groups.
func (r *Request) Wants(id ServiceID, groups []string) bool {
	if slices.Contains(r.Known, id) {
		return false
	}
	if len(r.Groups) == 0 {
		return true
	}
	for _, g := range r.Groups {
		if slices.Contains(groups, g) {
			return true
		}
	}
	return false
}

// DecodeRequest decodes a multicast request of either version.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	err := r.UnmarshalBinary(b)
	return r, err
}

// UnmarshalBinary decodes a multicast request into r, reusing the capacity
// of r.Groups and r.Known. On error r holds no meaningful value. Bytes
// after the request are ignored, as the Java implementation ignores them.
func (r *Request) UnmarshalBinary(b []byte) error {
	d := decoder{s: string(b)}
	v, err := d.version()
	if err != nil {
		return err
	}
	d.modified = v == ProtocolV1
	r.Version = v
	if v == ProtocolV1 {
		return r.decodeV1(&d)
	}
	return r.decodeV2(&d)
}

func (r *Request) decodeV1(d *decoder) error {
	r.Host = ""
	if err := d.need("port and service ID count", 8); err != nil {
		return err
	}
	var err error
	if r.Port, err = v1Port(d.be32()); err != nil {
		return err
	}
	n := d.be32()
	if n < 0 {
		return fmt.Errorf("%w: service ID count %d is negative", ErrMalformed, n)
	}
	if r.Known, err = d.serviceIDs(r.Known, int(n)); err != nil {
		return err
	}
	if err := d.need("group count", 4); err != nil {
		return err
	}
	g := d.be32()
	if g < 0 {
		return fmt.Errorf("%w: group count %d is negative", ErrMalformed, g)
	}
	r.Groups, err = d.groups(r.Groups, int(g))
	return err
}

func (r *Request) decodeV2(d *decoder) error {
	if err := d.v2Header(typeRequest); err != nil {
		return err
	}
	var err error
	if r.Host, err = d.utf("host"); err != nil {
		return err
	}
	if err := d.need("port and group count", 4); err != nil {
		return err
	}
	r.Port = d.be16()
	if r.Groups, err = d.groups(r.Groups, d.be16()); err != nil {
		return err
	}
	if err := d.need("service ID count", 2); err != nil {
		return err
	}
	r.Known, err = d.serviceIDs(r.Known, d.be16())
	return err
}

// Encode returns the packets of the request, split over as many packets as
// the groups need exactly as the Java implementation splits them for the
// same maximum packet size. Every packet repeats as many known ServiceIDs
// as fit beside its groups.
func (r *Request) Encode(maxPacketSize int) ([][]byte, error) {
	if err := checkMaxPacketSize(maxPacketSize); err != nil {
		return nil, err
	}
	if err := checkPort(r.Port); err != nil {
		return nil, err
	}
	switch r.Version {
	case ProtocolV1:
		return r.encodeV1(maxPacketSize)
	case ProtocolV2:
		return r.encodeV2(maxPacketSize)
	}
	return nil, fmt.Errorf("%w: protocol version %d", ErrEncode, r.Version)
}

func (r *Request) encodeV1(max int) ([][]byte, error) {
	// version, port, service ID count, group count
	const minDataLen = 16
	lens, err := utfV1Lens("group", r.Groups)
	if err != nil {
		return nil, err
	}
	for i, n := range lens {
		if n+minDataLen > max {
			return nil, fmt.Errorf("%w: group %q too long for a %d-byte packet", ErrEncode, r.Groups[i], max)
		}
	}
	var packets [][]byte
	for next := 0; ; {
		b := make([]byte, 0, max)
		b = appendU32(b, ProtocolV1)
		b = appendU32(b, uint32(r.Port))
		// Known IDs take what room the first group leaves.
		room := max - len(b) - 4 - 4
		if next < len(lens) {
			room -= lens[next]
		}
		nids := min(len(r.Known), room/serviceIDLen)
		b = appendU32(b, uint32(nids))
		for _, id := range r.Known[:nids] {
			b = append(b, id[:]...)
		}
		countAt := len(b)
		b = appendU32(b, 0)
		n := 0
		for next < len(lens) && lens[next] <= max-len(b) {
			b = appendUTFV1(b, r.Groups[next])
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

func (r *Request) encodeV2(max int) ([][]byte, error) {
	if err := checkText("host", r.Host); err != nil {
		return nil, err
	}
	for _, g := range r.Groups {
		if err := checkText("group", g); err != nil {
			return nil, err
		}
	}
	maxIDs := min(len(r.Known), maxUshort)
	idsLen := 2 + maxIDs*serviceIDLen
	groups := r.Groups
	var packets [][]byte
	for {
		b := make([]byte, 0, max)
		b = appendV2Header(b, typeRequest)
		if len(b)+utfV2Len(r.Host)+2+2 > max {
			return nil, fmt.Errorf("%w: host %q does not fit a %d-byte packet", ErrEncode, r.Host, max)
		}
		b = appendUTFV2(b, r.Host)
		b = appendU16(b, r.Port)
		countAt := len(b)
		b = appendU16(b, 0)
		n := 0
		// The first group goes in whatever the room for known IDs; more
		// groups only into the room the IDs leave.
		if len(groups) > 0 {
			if len(b)+utfV2Len(groups[0]) > max {
				return nil, fmt.Errorf("%w: group %q too long for a %d-byte packet", ErrEncode, groups[0], max)
			}
			b = appendUTFV2(b, groups[0])
			groups = groups[1:]
			n++
		}
		if max-len(b) > idsLen {
			limit := max - idsLen
			for len(groups) > 0 && n < maxUshort && len(b)+utfV2Len(groups[0]) <= limit {
				b = appendUTFV2(b, groups[0])
				groups = groups[1:]
				n++
			}
		}
		putU16(b[countAt:], n)
		if max-len(b) < 2 {
			return nil, fmt.Errorf("%w: no room for the service ID count in a %d-byte packet", ErrEncode, max)
		}
		nids := min(maxIDs, (max-len(b)-2)/serviceIDLen)
		b = appendU16(b, nids)
		for _, id := range r.Known[:nids] {
			b = append(b, id[:]...)
		}
		packets = append(packets, b)
		if len(groups) == 0 {
			return packets, nil
		}
	}
}

package discovery

import (
	"encoding/hex"
	"fmt"
	"io"
)

// ServiceID is the 128-bit identity of a Jini service, written on the wire
// as two big-endian 64-bit halves (most significant first) and shown in
// UUID form.
type ServiceID [16]byte

// RandomServiceID returns a new version 4 (random) ServiceID read from
// rand, as the Jini specification asks. Pass crypto/rand.Reader outside
// tests.
func RandomServiceID(rand io.Reader) (ServiceID, error) {
	var id ServiceID
	if _, err := io.ReadFull(rand, id[:]); err != nil {
		return ServiceID{}, fmt.Errorf("generating service ID: %w", err)
	}
	id[6] = id[6]&0x0F | 0x40 // version 4
	id[8] = id[8]&0x3F | 0x80 // IETF variant
	return id, nil
}

// ParseServiceID parses the UUID form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// (hex digits in either case).
func ParseServiceID(s string) (ServiceID, error) {
	var id ServiceID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("service ID %q: want the UUID form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return ServiceID{}, fmt.Errorf("service ID %q: %q at position %d is not a hex digit", s, s[i:i+2], i)
		}
		id[j] = hi<<4 | lo
		j++
		i += 2
	}
	return id, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the UUID form in lower case, as Java's ServiceID does.
func (id ServiceID) String() string {
	return string(id.appendText(make([]byte, 0, 36)))
}

func (id ServiceID) appendText(b []byte) []byte {
	b = hex.AppendEncode(b, id[0:4])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[4:6])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[6:8])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[8:10])
	b = append(b, '-')
	return hex.AppendEncode(b, id[10:16])
}

// IsZero reports whether id is all zeros (no ServiceID assigned).
func (id ServiceID) IsZero() bool { return id == ServiceID{} }

// MarshalText implements encoding.TextMarshaler.
func (id ServiceID) MarshalText() ([]byte, error) { return id.appendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ServiceID) UnmarshalText(b []byte) error {
	v, err := ParseServiceID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

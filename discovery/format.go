package discovery

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
)

// FormatID names a protocol version 2 payload format: the first eight bytes
// (big-endian) of the SHA-1 of the format's name.
type FormatID uint64

// FormatIDOf computes the format ID of a format name.
func FormatIDOf(name string) FormatID {
	sum := sha1.Sum([]byte(name))
	return FormatID(binary.BigEndian.Uint64(sum[:8]))
}

// Format names of the Jini discovery protocol version 2 formats.
const (
	PlaintextFormatName = "net.jini.discovery.plaintext"
	// The secure formats: jinid recognises their IDs in captures and
	// negotiation, but does not speak them.
	SSLFormatName      = "net.jini.discovery.ssl"
	KerberosFormatName = "net.jini.discovery.kerberos"
	X500FormatName     = "net.jini.discovery.x500.SHA1withDSA"
)

// PlaintextFormat is the ID of net.jini.discovery.plaintext,
// FormatIDOf(PlaintextFormatName), written out because it is on the wire of
// every v2 packet jinid sends.
const PlaintextFormat FormatID = 0x760f15cb7490ce36

// NullFormat is the format ID a unicast server answers when it accepts none
// of the proposed formats.
const NullFormat FormatID = 0

// String returns the ID in hex, with the format's name when jinid knows it.
func (f FormatID) String() string {
	if name := f.Name(); name != "" {
		return fmt.Sprintf("%016x (%s)", uint64(f), name)
	}
	return fmt.Sprintf("%016x", uint64(f))
}

// Name returns the format's name when it is one jinid knows, or "".
func (f FormatID) Name() string {
	for _, name := range [...]string{PlaintextFormatName, SSLFormatName, KerberosFormatName, X500FormatName} {
		if FormatIDOf(name) == f {
			return name
		}
	}
	return ""
}

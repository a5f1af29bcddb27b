// Package ids makes the identifiers of registrations, sets, leases and
// iterators: 128 random bits, so that holding one is the capability to use
// it (API.md).
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns 32 hex digits of crypto-random data.
func New() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics if the OS cannot supply randomness)
	return hex.EncodeToString(b[:])
}

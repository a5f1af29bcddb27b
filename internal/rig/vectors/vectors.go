// Package vectors holds the discovery packets encoded by the Java reference
// implementation (a copy of shared/testdata/river-discovery-vectors.json),
// for the tests, fuzz seeds and benchmarks of the codecs.
package vectors

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed river-discovery-vectors.json
var raw []byte

// Raw returns the vector file as embedded.
func Raw() []byte { return raw }

// Vector is one packet or unicast exchange half.
type Vector struct {
	Name            string          `json:"name"`
	ProtocolVersion int             `json:"protocolVersion"`
	Hex             string          `json:"hex"`
	Kind            string          `json:"kind"`
	Expect          json.RawMessage `json:"expect"`
}

// Bytes returns the vector's packet.
func (v Vector) Bytes() []byte {
	b, err := hex.DecodeString(v.Hex)
	if err != nil {
		panic(fmt.Sprintf("vector %s: bad hex: %v", v.Name, err))
	}
	return b
}

// Expect is the union of the fields the vectors expect.
type Expect struct {
	Host            string   `json:"host"`
	Port            int      `json:"port"`
	ServiceID       string   `json:"serviceID"`
	Groups          []string `json:"groups"`
	Sequence        *int64   `json:"sequence"`
	KnownServiceIDs []string `json:"knownServiceIDs"`
}

// Expected decodes the vector's expectations.
func (v Vector) Expected() Expect {
	var e Expect
	if err := json.Unmarshal(v.Expect, &e); err != nil {
		panic(fmt.Sprintf("vector %s: bad expect: %v", v.Name, err))
	}
	return e
}

// Base is the name without its packet index: split packets share a base.
func (v Vector) Base() string {
	base, _, _ := strings.Cut(v.Name, "#")
	return base
}

// All returns every vector, in file order.
func All() []Vector {
	var f struct {
		Vectors []Vector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		panic(fmt.Sprintf("vectors: %v", err))
	}
	return f.Vectors
}

// Kind returns the vectors of one kind ("multicast-announcement",
// "multicast-request", "unicast-request", "unicast-response").
func Kind(kind string) []Vector {
	var out []Vector
	for _, v := range All() {
		if v.Kind == kind {
			out = append(out, v)
		}
	}
	return out
}

// Named returns the vector with the given name; it panics if there is none,
// since tests name vectors that exist.
func Named(name string) Vector {
	for _, v := range All() {
		if v.Name == name {
			return v
		}
	}
	panic("vectors: no vector " + name)
}

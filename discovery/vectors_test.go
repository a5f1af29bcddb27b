package discovery

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/jinid/jinid/internal/rig/vectors"
)

func mustID(t testing.TB, s string) ServiceID {
	t.Helper()
	id, err := ParseServiceID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ids(t testing.TB, ss []string) []ServiceID {
	var out []ServiceID
	for _, s := range ss {
		out = append(out, mustID(t, s))
	}
	return out
}

// splitGroups are the groups the split vectors carry between them.
func splitGroups() []string {
	var g []string
	for i := range 60 {
		g = append(g, fmt.Sprintf("group-number-%d", i))
	}
	return g
}

// groupsOf is the vectors' expected group list, or for split vectors the
// whole list their packets share.
func groupsOf(v vectors.Vector) []string {
	if e := v.Expected(); e.Groups != nil {
		return e.Groups
	}
	return splitGroups()
}

// byBase gathers vectors of a kind by the message they encode, in packet
// order.
func byBase(kind string) map[string][]vectors.Vector {
	m := map[string][]vectors.Vector{}
	for _, v := range vectors.Kind(kind) {
		m[v.Base()] = append(m[v.Base()], v)
	}
	return m
}

func TestAnnouncementVectors(t *testing.T) {
	for base, vs := range byBase("multicast-announcement") {
		t.Run(base, func(t *testing.T) {
			e := vs[0].Expected()
			want := Announcement{
				Version:   vs[0].ProtocolVersion,
				Host:      e.Host,
				Port:      e.Port,
				ServiceID: mustID(t, e.ServiceID),
				Groups:    groupsOf(vs[0]),
			}
			if e.Sequence != nil {
				want.Sequence = *e.Sequence
			}

			// Decoding: each packet carries the expected header fields and
			// together they carry every group once, in order.
			var all []string
			for _, v := range vs {
				got, err := DecodeAnnouncement(v.Bytes())
				if err != nil {
					t.Fatalf("%s: %v", v.Name, err)
				}
				if got.Version != want.Version || got.Host != want.Host || got.Port != want.Port ||
					got.ServiceID != want.ServiceID || got.Sequence != want.Sequence {
					t.Errorf("%s: decoded %+v, want header of %+v", v.Name, got, want)
				}
				all = append(all, got.Groups...)
			}
			if !slices.Equal(all, want.Groups) {
				t.Errorf("groups %q, want %q", all, want.Groups)
			}

			// Encoding: the same packets, split at the same places.
			packets, err := want.Encode(DefaultMaxPacketSize)
			if err != nil {
				t.Fatal(err)
			}
			comparePackets(t, packets, vs)
		})
	}
}

func TestRequestVectors(t *testing.T) {
	for base, vs := range byBase("multicast-request") {
		t.Run(base, func(t *testing.T) {
			e := vs[0].Expected()
			want := Request{
				Version: vs[0].ProtocolVersion,
				Port:    e.Port,
				Groups:  groupsOf(vs[0]),
				Known:   ids(t, e.KnownServiceIDs),
			}
			if want.Version == ProtocolV2 {
				want.Host = e.Host
			}
			var all []string
			for _, v := range vs {
				got, err := DecodeRequest(v.Bytes())
				if err != nil {
					t.Fatalf("%s: %v", v.Name, err)
				}
				if got.Version != want.Version || got.Host != want.Host || got.Port != want.Port ||
					!slices.Equal(got.Known, want.Known) {
					t.Errorf("%s: decoded %+v, want header of %+v", v.Name, got, want)
				}
				all = append(all, got.Groups...)
			}
			if !slices.Equal(all, want.Groups) && !(len(all) == 0 && len(want.Groups) == 0) {
				t.Errorf("groups %q, want %q", all, want.Groups)
			}
			packets, err := want.Encode(DefaultMaxPacketSize)
			if err != nil {
				t.Fatal(err)
			}
			comparePackets(t, packets, vs)
		})
	}
}

func comparePackets(t *testing.T, got [][]byte, want []vectors.Vector) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("encoded %d packets, Java encoded %d", len(got), len(want))
	}
	for i, v := range want {
		if !bytes.Equal(got[i], v.Bytes()) {
			t.Errorf("%s: encoded\n%x\nwant\n%x", v.Name, got[i], v.Bytes())
		}
	}
}

func TestPlaintextFormatID(t *testing.T) {
	if got := FormatIDOf(PlaintextFormatName); got != PlaintextFormat {
		t.Fatalf("FormatIDOf(%q) = %s, want %s", PlaintextFormatName, got, PlaintextFormat)
	}
	if PlaintextFormat.Name() != PlaintextFormatName {
		t.Fatalf("Name() = %q", PlaintextFormat.Name())
	}
}

package discovery

import (
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/rig/vectors"
)

func seedMulticast(f *testing.F) {
	for _, v := range vectors.All() {
		if strings.HasPrefix(v.Kind, "multicast-") {
			f.Add(v.Bytes())
		}
	}
}

func FuzzDecodeAnnouncement(f *testing.F) {
	seedMulticast(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnnouncement(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(b) > MaxMaxPacketSize {
			return
		}
		packets, err := a.Encode(MaxMaxPacketSize)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", a, err)
		}
		var groups []string
		for _, p := range packets {
			back, err := DecodeAnnouncement(p)
			if err != nil {
				t.Fatalf("re-decoding %x: %v", p, err)
			}
			if back.Host != a.Host || back.Port != a.Port || back.ServiceID != a.ServiceID || back.Sequence != a.Sequence {
				t.Fatalf("round trip: %+v became %+v", a, back)
			}
			groups = append(groups, back.Groups...)
		}
		if !slices.Equal(groups, a.Groups) {
			t.Fatalf("round trip groups: %q became %q", a.Groups, groups)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	seedMulticast(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(b) > MaxMaxPacketSize {
			return
		}
		packets, err := r.Encode(MaxMaxPacketSize)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", r, err)
		}
		var groups []string
		for _, p := range packets {
			back, err := DecodeRequest(p)
			if err != nil {
				t.Fatalf("re-decoding %x: %v", p, err)
			}
			if back.Host != r.Host || back.Port != r.Port {
				t.Fatalf("round trip: %+v became %+v", r, back)
			}
			groups = append(groups, back.Groups...)
		}
		if !slices.Equal(groups, r.Groups) && len(groups)+len(r.Groups) > 0 {
			t.Fatalf("round trip groups: %q became %q", r.Groups, groups)
		}
	})
}

func FuzzParseServiceID(f *testing.F) {
	f.Add("01234567-89ab-cdef-fedc-ba9876543210")
	f.Add("01234567-89AB-CDEF-FEDC-BA9876543210")
	f.Add("0123456789abcdeffedcba9876543210")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseServiceID(s)
		if err != nil {
			return
		}
		if id.String() != strings.ToLower(s) {
			t.Fatalf("ParseServiceID(%q).String() = %q", s, id.String())
		}
	})
}

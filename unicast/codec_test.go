package unicast

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/vectors"
)

func TestRequestVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Request
	}{
		{"v1.unicast.request", NewRequest(1)},
		{"v2.unicast.request", NewRequest(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := vectors.Named(tc.name).Bytes()
			got, err := ReadRequest(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tc.want.Version || !slices.Equal(got.Formats, tc.want.Formats) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			enc, err := tc.want.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b) {
				t.Fatalf("encoded %x, Java %x", enc, b)
			}
		})
	}
}

func TestResponseVectors(t *testing.T) {
	for _, name := range []string{"v1.unicast.response", "v2.unicast.response"} {
		t.Run(name, func(t *testing.T) {
			v := vectors.Named(name)
			e := v.Expected()
			b := v.Bytes()
			got, err := ReadResponse(bytes.NewReader(b), DefaultMaxResponseSize)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != v.ProtocolVersion || !slices.Equal(got.Groups, e.Groups) {
				t.Fatalf("got version %d groups %q, want %d %q", got.Version, got.Groups, v.ProtocolVersion, e.Groups)
			}
			if got.Version == 2 && (got.Host != e.Host || got.Port != e.Port || got.Format != discovery.PlaintextFormat) {
				t.Fatalf("got %s:%d format %s, want %s:%d plaintext", got.Host, got.Port, got.Format, e.Host, e.Port)
			}
			if got.Registrar.IsJinid() {
				t.Fatal("a Java proxy was taken for a jinid one")
			}
			if !bytes.HasPrefix(got.Registrar.Marshalled, []byte{0xAC, 0xED, 0, 5}) {
				t.Fatalf("proxy bytes do not start a Java stream: %x", got.Registrar.Marshalled[:8])
			}
			// Writing the same response gives Java's bytes again.
			enc, err := got.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b) {
				t.Fatalf("encoded\n%x\nJava\n%x", enc, b)
			}
		})
	}
}

func TestJinidDescriptorRoundTrip(t *testing.T) {
	id, _ := discovery.ParseServiceID("01234567-89ab-cdef-fedc-ba9876543210")
	d := &Descriptor{ServiceID: id, APIURL: "http://192.0.2.10:4162", Groups: []string{"", "lab"}, Locator: "jini://192.0.2.10:4160"}
	for _, version := range []int{1, 2} {
		resp := &Response{Version: version, Format: discovery.PlaintextFormat, Host: "192.0.2.10", Port: 4160,
			Groups: d.Groups, Registrar: Registrar{Descriptor: d}}
		b, err := resp.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadResponse(bytes.NewReader(b), DefaultMaxResponseSize)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if !got.Registrar.IsJinid() || got.Registrar.Descriptor.APIURL != d.APIURL || got.Registrar.Descriptor.ServiceID != id {
			t.Fatalf("v%d: descriptor not recovered: %+v", version, got.Registrar.Descriptor)
		}
		if !slices.Equal(got.Groups, d.Groups) {
			t.Fatalf("v%d: groups %q", version, got.Groups)
		}
	}
}

// Java splits block data into 1024-byte records, even inside a string; a
// v1 response with many groups must read across them.
func TestV1ManyGroupsAcrossBlockRecords(t *testing.T) {
	var groups []string
	for i := range 300 {
		groups = append(groups, strings.Repeat("g", i%40)+"-grüppe")
	}
	resp := &Response{Version: 1, Groups: groups,
		Registrar: Registrar{Descriptor: &Descriptor{ServiceID: discovery.ServiceID{1}}}}
	b, err := resp.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte{0x7A, 0, 0, 4, 0}) < 3 {
		t.Fatal("expected several 1024-byte TC_BLOCKDATALONG records")
	}
	got, err := ReadResponse(bytes.NewReader(b), DefaultMaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Groups, groups) {
		t.Fatal("groups differ after crossing block records")
	}
}

func TestResponseErrors(t *testing.T) {
	v1 := vectors.Named("v1.unicast.response").Bytes()
	v2 := vectors.Named("v2.unicast.response").Bytes()
	for _, tc := range []struct {
		name    string
		in      []byte
		max     int64
		wantIs  error
		wantMsg string
	}{
		{"empty", nil, DefaultMaxResponseSize, ErrMalformed, "stream ended"},
		{"unknown version", []byte{0, 0, 0, 9}, DefaultMaxResponseSize, ErrVersion, "neither"},
		{"null format", []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}, DefaultMaxResponseSize, ErrNoFormat, "none of the proposed"},
		{"truncated v1", v1[:len(v1)-5], DefaultMaxResponseSize, ErrMalformed, "group 2 of 2"},
		{"truncated v2 proxy", v2[:len(v2)-40], DefaultMaxResponseSize, ErrMalformed, "registrar proxy"},
		{"over limit", v2, 100, ErrTooLarge, "limit"},
		{"negative group count", append(append([]byte{}, v2[:0x1a]...), 0xFF, 0xFF, 0xFF, 0xFF), DefaultMaxResponseSize, ErrMalformed, "group count -1 is negative"},
		{"hostile group count", append(append([]byte{}, v2[:0x1a]...), 0x7F, 0xFF, 0xFF, 0xFF), DefaultMaxResponseSize, ErrMalformed, "group 1 of 2147483647"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadResponse(bytes.NewReader(tc.in), tc.max)
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v, want one wrapping %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

func TestLocator(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Locator
		str     string
		wantErr string
	}{
		{in: "jini://example.org", want: Locator{"example.org", 4160}, str: "jini://example.org:4160"},
		{in: "jini://example.org:4161/", want: Locator{"example.org", 4161}, str: "jini://example.org:4161"},
		{in: "JINI://192.0.2.1:80", want: Locator{"192.0.2.1", 80}, str: "jini://192.0.2.1:80"},
		{in: "jini://[2001:db8::1]", want: Locator{"2001:db8::1", 4160}, str: "jini://[2001:db8::1]:4160"},
		{in: "jini://[fe80::1%25eth0]:4170", want: Locator{"fe80::1%eth0", 4170}, str: "jini://[fe80::1%25eth0]:4170"},
		{in: "http://example.org", wantErr: "want jini://host[:port]"},
		{in: "jini:/example.org", wantErr: "want jini://host[:port]"},
		{in: "jini://", wantErr: "empty host"},
		{in: "jini://example.org:0", wantErr: "not a number from 1 to 65535"},
		{in: "jini://example.org:65536", wantErr: "not a number from 1 to 65535"},
		{in: "jini://example.org:", wantErr: "empty port"},
		{in: "jini://example.org:+80", wantErr: "not a number"},
		{in: "jini://example.org/path", wantErr: `unexpected "/path"`},
		{in: "jini://example.org?q", wantErr: `unexpected "?q"`},
		{in: "jini://user@example.org", wantErr: "user part"},
		{in: "jini://2001:db8::1", wantErr: "must be written in brackets"},
		{in: "jini://[192.0.2.1]", wantErr: "not an IPv6 address"},
		{in: "jini://[2001:db8::1", wantErr: "missing ]"},
		{in: "jini://exa mple", wantErr: "not allowed in a host name"},
		{in: "jini://a..b", wantErr: "empty label"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLocator(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got.String() != tc.str {
				t.Fatalf("got %+v (%s), want %+v (%s)", got, got, tc.want, tc.str)
			}
		})
	}
	a, _ := ParseLocator("jini://Example.ORG")
	b, _ := ParseLocator("jini://example.org:4160/")
	if !a.Equal(b) {
		t.Fatal("locators differing only in host case and default port should be equal")
	}
}

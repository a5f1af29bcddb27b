package unicast

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/vectors"
	"github.com/jinid/jinid/java/javaio"
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

// The descriptor is recovered both from a jinid that serves Java (inside
// the registrar proxy's custom data) and from one that does not (the
// descriptor alone, as a string).
func TestJinidDescriptorRoundTrip(t *testing.T) {
	id, _ := discovery.ParseServiceID("01234567-89ab-cdef-fedc-ba9876543210")
	d := &discovery.Descriptor{ServiceID: id, APIURL: "http://192.0.2.10:4162", Groups: []string{"", "lab"}, Locator: "jini://192.0.2.10:4160"}
	js, _ := json.Marshal(d)
	proxyClass := &javaio.Class{Name: "RegistrarProxy", SUID: 2, Flags: javaio.FlagSerializable | javaio.FlagWriteMethod}
	proxy, err := javaio.Encode(javaio.NewObject(proxyClass).SetCustom("RegistrarProxy", javaio.Block(id[:]), discovery.DescriptorMark+string(js)), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		version int
		proxy   []byte
	}{{1, nil}, {2, nil}, {1, proxy}, {2, proxy}} {
		version := c.version
		resp := &Response{Version: version, Format: discovery.PlaintextFormat, Host: "192.0.2.10", Port: 4160,
			Groups: d.Groups, Registrar: discovery.Registrar{Descriptor: d, Proxy: c.proxy}}
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
		Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: discovery.ServiceID{1}}}}
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

package discovery

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/rig/vectors"
)

func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	v2ann := vectors.Named("v2.announcement#0").Bytes()
	for _, tc := range []struct {
		name    string
		in      []byte
		request bool
		is      error
		want    string
	}{
		{"empty", nil, false, ErrMalformed, "protocol version needs 4 bytes at offset 0, 0 remain"},
		{"version 3", hx("00000003"), false, ErrVersion, "unsupported discovery protocol version: 3"},
		{"v1 group count beyond packet", hx("00000001 0000 00001040 0123456789abcdeffedcba9876543210 00011170 0000 0000 0000 0000 0000 0000"), false, ErrMalformed, "group count 70000 exceeds remaining 12 bytes"},
		{"v1 negative group count", hx("00000001 0000 00001040 0123456789abcdeffedcba9876543210 ffffffff"), false, ErrMalformed, "group count -1 is negative"},
		{"v1 port out of range", hx("00000001 0000 00011170 0123456789abcdeffedcba9876543210 00000000"), false, ErrMalformed, "port 70000 out of range"},
		{"v1 host past end", hx("00000001 00ff 41"), false, ErrMalformed, "host length 255 exceeds remaining 1 bytes"},
		{"v1 bad modified utf8 group", hx("00000001 0000 00001040 0123456789abcdeffedcba9876543210 00000001 0002 c041"), false, ErrMalformed, "group 1 of 1: malformed discovery packet: group at offset 32 is not valid modified UTF-8"},
		{"v2 bad utf8 group", hx("0000000200760f15cb7490ce36 0000000000000001 0000 1040 0001 0002 c080 0123456789abcdeffedcba9876543210"), false, ErrMalformed, "group 1 of 1: malformed discovery packet: group at offset 29 is not valid UTF-8"},
		{"v2 short header", hx("00000002 00 760f"), false, ErrMalformed, "too short for the 13-byte version 2 header"},
		{"v2 request as announcement", vectors.Named("v2.request#0").Bytes(), false, ErrPacketType, "packet type 1, want 0"},
		{"v2 announcement without service ID", v2ann[:len(v2ann)-1], false, ErrMalformed, "service ID needs 16 bytes"},
		{"v1 request ID count beyond packet", hx("00000001 0000b26e 7fffffff"), true, ErrMalformed, "service ID count 2147483647 exceeds remaining 0 bytes"},
		{"v1 request negative ID count", hx("00000001 0000b26e 80000000"), true, ErrMalformed, "service ID count -2147483648 is negative"},
		{"v2 request group count", hx("0000000201760f15cb7490ce36 0000 b26e ffff 0000"), true, ErrMalformed, "group count 65535 exceeds remaining 2 bytes"},
		{"v2 request truncated ID count", hx("0000000201760f15cb7490ce36 0000 b26e 0000"), true, ErrMalformed, "service ID count needs 2 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.request {
				_, err = DecodeRequest(tc.in)
			} else {
				_, err = DecodeAnnouncement(tc.in)
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want one wrapping %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	// An unknown v2 format is its own error type: Java ignores such packets.
	pkt := bytes.Clone(v2ann)
	pkt[5] ^= 0xFF
	_, err := DecodeAnnouncement(pkt)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.ID == PlaintextFormat {
		t.Fatalf("error %v, want a FormatError", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	long := strings.Repeat("g", 600)
	for _, tc := range []struct {
		name string
		enc  func() ([][]byte, error)
		want string
	}{
		{"packet size too small", func() ([][]byte, error) { return (&Announcement{Version: 1}).Encode(511) }, "max packet size 511 out of range 512-65507"},
		{"packet size too large", func() ([][]byte, error) { return (&Request{Version: 2}).Encode(70000) }, "max packet size 70000 out of range"},
		{"version", func() ([][]byte, error) { return (&Announcement{Version: 3}).Encode(512) }, "protocol version 3"},
		{"port", func() ([][]byte, error) { return (&Announcement{Version: 2, Port: 70000}).Encode(512) }, "port 70000 out of range"},
		{"v1 announcement group too long", func() ([][]byte, error) {
			return (&Announcement{Version: 1, Host: "h", Groups: []string{long}}).Encode(512)
		}, `group "gggg`},
		{"v2 announcement group too long", func() ([][]byte, error) {
			return (&Announcement{Version: 2, Host: "h", Groups: []string{"ok", long}}).Encode(512)
		}, "too long for a 512-byte packet"},
		{"v1 request group too long", func() ([][]byte, error) { return (&Request{Version: 1, Groups: []string{long}}).Encode(512) }, "too long"},
		{"v2 request group too long", func() ([][]byte, error) { return (&Request{Version: 2, Groups: []string{long}}).Encode(512) }, "too long"},
		{"v2 host too long", func() ([][]byte, error) { return (&Request{Version: 2, Host: long}).Encode(512) }, "does not fit a 512-byte packet"},
		{"v1 host too long", func() ([][]byte, error) { return (&Announcement{Version: 1, Host: long}).Encode(512) }, "does not fit"},
		{"invalid utf8", func() ([][]byte, error) { return (&Announcement{Version: 2, Groups: []string{"\xff"}}).Encode(512) }, "is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.enc()
			if !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrEncode saying %q", err, tc.want)
			}
		})
	}
	// A group that fits a larger packet size is encoded.
	if _, err := (&Announcement{Version: 2, Host: "h", Groups: []string{long}}).Encode(1024); err != nil {
		t.Fatal(err)
	}
}

func TestServiceID(t *testing.T) {
	id, err := RandomServiceID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if id[6]>>4 != 4 || id[8]>>6 != 2 {
		t.Fatalf("%s is not a version 4, IETF variant UUID", id)
	}
	back, err := ParseServiceID(strings.ToUpper(id.String()))
	if err != nil || back != id {
		t.Fatalf("round trip %s: %s %v", id, back, err)
	}
	for _, bad := range []string{"", "01234567-89ab-cdef-fedc-ba987654321", "0123456789abcdeffedcba9876543210", "01234567-89ab-cdef-fedc-ba987654321g"} {
		if _, err := ParseServiceID(bad); err == nil || !strings.Contains(err.Error(), "service ID") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	if _, err := RandomServiceID(bytes.NewReader(nil)); err == nil {
		t.Fatal("a failing random source must fail")
	}
	txt, _ := id.MarshalText()
	var u ServiceID
	if err := u.UnmarshalText(txt); err != nil || u != id {
		t.Fatalf("text round trip: %v", err)
	}
}

func TestRequestWants(t *testing.T) {
	me := ServiceID{1}
	for _, tc := range []struct {
		name   string
		req    Request
		groups []string
		want   bool
	}{
		{"any group", Request{}, []string{"a"}, true},
		{"shared group", Request{Groups: []string{"b", "a"}}, []string{"a"}, true},
		{"public group", Request{Groups: []string{""}}, []string{""}, true},
		{"no shared group", Request{Groups: []string{"b"}}, []string{"a"}, false},
		{"already known", Request{Known: []ServiceID{me}}, []string{"a"}, false},
		{"lookup with no groups, request for any", Request{}, nil, true},
	} {
		if got := tc.req.Wants(me, tc.groups); got != tc.want {
			t.Errorf("%s: Wants = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Version 1 writes strings as Java's writeUTF does; jinid reads back what
// it (or Java) writes, NUL and characters outside the BMP included.
func TestV1ModifiedUTF8RoundTrip(t *testing.T) {
	a := Announcement{Version: 1, Host: "h", Port: 4160, Groups: []string{"nul\x00inside", "emoji-😀", "plain"}}
	packets, err := a.Encode(DefaultMaxPacketSize)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(packets[0], []byte{0xC0, 0x80}) || !bytes.Contains(packets[0], []byte{0xED, 0xA0, 0xBD}) {
		t.Fatalf("not written as modified UTF-8: %x", packets[0])
	}
	back, err := DecodeAnnouncement(packets[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(back.Groups, "|") != strings.Join(a.Groups, "|") {
		t.Fatalf("groups %q, want %q", back.Groups, a.Groups)
	}
}

func TestSameGroups(t *testing.T) {
	for _, c := range []struct {
		a, b []string
		want bool
	}{
		{nil, []string{}, true},
		{[]string{"", "lab"}, []string{"lab", ""}, true},
		{[]string{"lab"}, []string{"lab", ""}, false},
		{[]string{"a", "a"}, []string{"a", "b"}, false},
	} {
		if got := SameGroups(c.a, c.b); got != c.want {
			t.Errorf("SameGroups(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestCheckGroup(t *testing.T) {
	long := strings.Repeat("g", MaxGroupLen)
	for _, c := range []struct {
		name string
		g    string
		ok   bool
	}{
		{"public", "", true},
		{"plain", "lab", true},
		{"at the limit", long, true},
		{"one over", long + "g", false},
		{"NULs count twice in version 1", strings.Repeat("\x00", MaxGroupLen/2+1), false},
		{"not UTF-8", "lab\xff", false},
	} {
		err := CheckGroup(c.g)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrGroupName) {
			t.Errorf("%s: CheckGroup = %v", c.name, err)
		}
	}
	// Every group that passes fits every packet: a request of either
	// version beside the longest IPv6 host with a zone, and an
	// announcement beside a host name of 200 bytes.
	for _, v := range []int{ProtocolV1, ProtocolV2} {
		for _, g := range []string{long, strings.Repeat("\x00", MaxGroupLen/2), strings.Repeat("😀", MaxGroupLen/6)} {
			r := Request{Version: v, Host: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%interface0123", Port: 4160, Groups: []string{g}}
			if _, err := r.Encode(DefaultMaxPacketSize); err != nil {
				t.Errorf("version %d request with a %d-byte group: %v", v, len(g), err)
			}
			a := Announcement{Version: v, Host: strings.Repeat("h", 200), Port: 4160, Groups: []string{g}}
			if _, err := a.Encode(DefaultMaxPacketSize); err != nil {
				t.Errorf("version %d announcement with a %d-byte group: %v", v, len(g), err)
			}
		}
	}
}

package inspect

import (
	"strings"
	"testing"
)

func TestDisplayFilter(t *testing.T) {
	seq := int64(3)
	ann := Record{Frame: 1, Kind: KindMulticastAnnouncement, Version: 2, Transport: "udp",
		Fields: &AnnouncementFields{Host: "10.0.0.7", Port: 4160, ServiceID: "01234567-89ab-cdef-fedc-ba9876543210", Groups: []string{"", "lab"}, Sequence: &seq}}
	req := Record{Frame: 2, Kind: KindMulticastRequest, Version: 1, Transport: "udp",
		Fields: &RequestFields{Host: "2001:db8::5", Port: 45678, Groups: []string{}}}
	call := Record{Frame: 3, Kind: KindJERICall, Transport: "tcp", Fields: &JERICallFields{Method: "Registrar.lookup/2", Status: "return"}}
	bad := Record{Frame: 4, Kind: KindUnknown, Transport: "udp", Error: "unsupported discovery protocol version 9"}
	all := []Record{ann, req, call, bad}
	for _, c := range []struct {
		expr string
		want []int // frames selected
	}{
		{`kind=="multicast-announcement" && group=="lab" && version==2`, []int{1}},
		{`group == ""`, []int{1}},
		{`group != "lab"`, []int{2, 3, 4}},
		{`kind == multicast-request || error`, []int{2, 4}},
		{`!(transport == udp)`, []int{3}},
		{`not error and frame != 1`, []int{2, 3}},
		{`method contains lookup`, []int{3}},
		{`requester == "[2001:db8::5]:45678"`, []int{2}},
		{`lookup == 10.0.0.7:4160 or serviceID contains 89ab`, []int{1}},
		{`port == 4160.0`, []int{1}},
	} {
		f, err := ParseFilter(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		var got []int
		for _, r := range all {
			if f.Match(r) {
				got = append(got, r.Frame)
			}
		}
		if !equalInts(got, c.want) {
			t.Errorf("%s selects %v, want %v", c.expr, got, c.want)
		}
	}
	for _, c := range []struct{ expr, msg, caret string }{
		{`kind == announcement && grup == lab`, `unknown field "grup"`, "                        ^"},
		{`kind == "lab`, "does not end", "        ^"},
		{`(kind == x`, "a ( without its )", "          ^"},
		{`kind ==`, "want a value after ==", "       ^"},
		{`kind == a b`, `unexpected "b"`, "          ^"},
		{`kind = a`, `unexpected "="`, "     ^"},
		{``, "the filter ends", "^"},
	} {
		_, err := ParseFilter(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.HasSuffix(err.Error(), "\n  "+c.caret) {
			t.Errorf("%q: error %v, want one saying %q pointing at column %d", c.expr, err, c.msg, len(c.caret))
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzDisplayFilter(f *testing.F) {
	f.Add(`kind=="multicast-announcement" && group=="lab" && version==2`)
	f.Add(`!(a || b) && "x`)
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := ParseFilter(expr)
		if err == nil {
			flt.Match(Record{Kind: KindUnknown})
		}
	})
}

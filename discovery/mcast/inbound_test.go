package mcast

import "testing"

func TestZoned(t *testing.T) {
	p := Packet{IfName: "eth1"}
	for in, want := range map[string]string{
		"fe80::1":           "fe80::1%eth1",
		"fe80::1%eth0":      "fe80::1%eth1", // the sender's own zone means nothing here
		"::ffff:198.18.0.1": "198.18.0.1",
		"2001:db8::1":       "2001:db8::1",
		"198.18.0.1":        "198.18.0.1",
		"lookup.lan":        "lookup.lan",
	} {
		if got := p.Zoned(in); got != want {
			t.Errorf("Zoned(%q) = %q, want %q", in, got, want)
		}
	}
}

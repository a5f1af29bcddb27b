package lds

import (
	"net/netip"
	"testing"

	"github.com/jinid/jinid/discovery"
)

// A link-local address is handed only to those who can use it.
func TestRegistrarForLinkLocal(t *testing.T) {
	s := &Service{linkOf: func(a netip.Addr) string {
		if netip.MustParsePrefix("192.168.1.0/24").Contains(a) {
			return "br-lan"
		}
		return ""
	}}
	ll := discovery.LookupService{ID: discovery.ServiceID{1}, Host: "fe80::2%br-lan", Port: 4160}
	v4 := discovery.LookupService{ID: discovery.ServiceID{2}, Host: "192.168.1.2", Port: 4160}
	for _, c := range []struct {
		name      string
		ls        discovery.LookupService
		to        string
		host, loc string
	}{
		{"this host, with its zone", ll, "::1", "fe80::2%br-lan", "jini://[fe80::2%25br-lan]:4160"},
		{"link-local on the link", ll, "fe80::9%br-lan", "fe80::2", "jini://[fe80::2]:4160"},
		{"in the link's subnet", ll, "192.168.1.9", "fe80::2", "jini://[fe80::2]:4160"},
		{"link-local on another link", ll, "fe80::9%wan", "", ""},
		{"another network", ll, "203.0.113.9", "", ""},
		{"unknown (a name)", ll, "", "", ""},
		{"not link-local: as it is", v4, "203.0.113.9", "192.168.1.2", "jini://192.168.1.2:4160"},
	} {
		var to netip.Addr
		if c.to != "" {
			to = netip.MustParseAddr(c.to)
		}
		r := s.RegistrarFor(c.ls, to)
		if r.Host != c.host || r.Locator != c.loc {
			t.Errorf("%s: host %q locator %q, want %q %q", c.name, r.Host, r.Locator, c.host, c.loc)
		}
	}
	if a := listenerAddr("http://[fe80::9%25br-lan]:8080/events"); a != netip.MustParseAddr("fe80::9%br-lan") {
		t.Errorf("listenerAddr of a zoned URL = %v", a)
	}
	if a := listenerAddr("http://localhost:8080/"); !a.IsLoopback() {
		t.Errorf("listenerAddr of localhost = %v", a)
	}
}

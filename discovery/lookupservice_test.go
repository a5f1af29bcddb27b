package discovery_test

import (
	"testing"

	"github.com/jinid/jinid/discovery"
)

func TestSameHost(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "::ffff:10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"fe80::1%eth0", "fe80::1", true},
		{"fe80::1%eth0", "fe80::1%eth1", false},
		{"2001:db8::1", "2001:DB8::1", true},
		{"Lookup.Example.org", "lookup.example.org", true},
		{"lookup.example.org", "10.0.0.1", false},
	} {
		if got := discovery.SameHost(c.a, c.b); got != c.want {
			t.Errorf("SameHost(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// The identity rules for Java lookup services, whose ServiceID a stand-in
// replaces until they announce it.
func TestSameAndLikely(t *testing.T) {
	java := func(id byte, standIn bool, host string, port int, proxy string, groups ...string) discovery.LookupService {
		return discovery.LookupService{ID: discovery.ServiceID{id}, IDFromProxy: standIn, Host: host, Port: port,
			Groups: groups, Registrar: discovery.Registrar{Marshalled: []byte(proxy)}}
	}
	jinid := discovery.LookupService{ID: discovery.ServiceID{9}, Host: "10.0.0.1", Port: 4160, Groups: []string{"lab"},
		Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{}}}
	for _, c := range []struct {
		name         string
		a, b         discovery.LookupService
		same, likely bool
	}{
		{"one ServiceID", java(1, false, "10.0.0.1", 4160, "x"), java(1, false, "10.0.0.2", 4170, "y"), true, false},
		{"two real ServiceIDs, one address", java(1, false, "10.0.0.1", 4160, "x"), java(2, false, "10.0.0.1", 4160, "x"), false, false},
		{"stand-in, same proxy", java(1, true, "10.0.0.1", 0, "x"), java(2, false, "10.0.0.2", 4170, "x"), true, false},
		{"stand-in, same host and port", java(1, true, "10.0.0.1", 4160, "v1"), java(2, false, "10.0.0.1", 4160, "v2"), true, false},
		{"stand-in, other port", java(1, true, "10.0.0.1", 4160, "v1"), java(2, true, "10.0.0.1", 4170, "v2"), false, false},
		{"version 1 answer (no port), same groups", java(1, true, "10.0.0.1", 0, "v1", "lab"), java(2, true, "10.0.0.1", 4160, "v2", "lab"), false, true},
		{"version 1 answer (no port), other groups", java(1, true, "10.0.0.1", 0, "v1", "lab"), java(2, true, "10.0.0.1", 4160, "v2", "ops"), false, false},
		{"version 1 answer (no port), other host", java(1, true, "10.0.0.1", 0, "v1", "lab"), java(2, true, "10.0.0.2", 4160, "v2", "lab"), false, false},
		{"a jinid lookup service is never a stand-in's", java(1, true, "10.0.0.1", 4160, "x", "lab"), jinid, false, false},
	} {
		if got := c.a.Same(c.b); got != c.same {
			t.Errorf("%s: Same = %v", c.name, got)
		}
		if got := c.b.Same(c.a); got != c.same {
			t.Errorf("%s: Same (swapped) = %v", c.name, got)
		}
		if got := c.a.Likely(c.b); got != c.likely {
			t.Errorf("%s: Likely = %v", c.name, got)
		}
	}
}

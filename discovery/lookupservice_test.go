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

// One lookup service is one ServiceID, or one stand-in: a description
// from before its real ServiceID was known is of the lookup service
// described after.
func TestSame(t *testing.T) {
	ls := func(id, standIn byte, host string, port int) discovery.LookupService {
		l := discovery.LookupService{ID: discovery.ServiceID{id}, Host: host, Port: port}
		if standIn != 0 {
			l.StandIn = discovery.ServiceID{standIn}
		}
		return l
	}
	for _, c := range []struct {
		name    string
		a, b    discovery.LookupService
		same    bool
		standIn bool // a's ID is a stand-in
	}{
		{"one ServiceID", ls(1, 0, "10.0.0.1", 4160), ls(1, 0, "10.0.0.2", 4170), true, false},
		{"two ServiceIDs, one address", ls(1, 0, "10.0.0.1", 4160), ls(2, 0, "10.0.0.1", 4160), false, false},
		{"a stand-in and the real ID", ls(7, 7, "10.0.0.1", 0), ls(2, 7, "10.0.0.1", 4160), true, true},
		{"two stand-ins", ls(7, 7, "10.0.0.1", 4160), ls(8, 8, "10.0.0.1", 4160), false, true},
		{"a stand-in and a readable proxy", ls(7, 7, "10.0.0.1", 4160), ls(2, 0, "10.0.0.1", 4160), false, true},
	} {
		if got := c.a.Same(c.b); got != c.same {
			t.Errorf("%s: Same = %v", c.name, got)
		}
		if got := c.b.Same(c.a); got != c.same {
			t.Errorf("%s: Same (swapped) = %v", c.name, got)
		}
		if got := c.a.IDIsStandIn(); got != c.standIn {
			t.Errorf("%s: IDIsStandIn = %v", c.name, got)
		}
	}
}

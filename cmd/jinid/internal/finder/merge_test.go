package finder

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestRows(t *testing.T) {
	id := "01000000-0000-0000-0000-000000000000"
	seen := []sighting{
		// A Java lookup service answering a v2 request over IPv6 (no ID),
		// then announcing over IPv4 and IPv6 (ID from the announcement).
		{host: "fe80::2%eth1", port: 4160, how: ViaRequest, iface: "eth1", version: 2, answered: true, kind: "java", proxy: 900, groups: []string{"a"}},
		{id: id, host: "fe80::2%eth1", port: 4160, how: ViaAnnouncement, iface: "eth1", version: 2, groups: []string{"a"}},
		{id: id, host: "198.18.2.2", port: 4160, how: ViaAnnouncement, iface: "eth1", version: 1, groups: []string{"a"}},
		{id: id, host: "198.18.2.2", port: 4160, how: ViaAnnouncement, iface: "eth1", version: 1, answered: true, kind: "java", proxy: 800, groups: []string{"a"}},
		// A v1 Java lookup service whose connect-back port is unknown,
		// later seen by locator at its real port.
		{host: "198.18.1.5", port: 0, how: ViaRequest, iface: "eth0", version: 1, answered: true, kind: "java", proxy: 700, groups: []string{}},
		{host: "198.18.1.5", port: 4161, how: ViaLocator, iface: "eth0", version: 1, answered: true, kind: "java", proxy: 700, groups: []string{}},
		// A failure at an address that also answered: not reported.
		{host: "198.18.1.5", port: 4161, how: ViaLocator, iface: "eth0", err: "refused"},
		// A failure nothing else explains: reported once.
		{host: "198.18.9.9", port: 4160, how: ViaLocator, err: "refused"},
		{host: "198.18.9.9", port: 4160, how: ViaLocator, err: "refused again"},
	}
	perInterface := []Result{
		{ServiceID: id, Address: "198.18.2.2:4160", Host: "198.18.2.2", Port: 4160, Family: 4, Interface: "eth1", Groups: []string{"a"},
			How: []string{ViaAnnouncement}, Versions: []int{1}, Kind: "java", ProxySize: 800},
		{ServiceID: id, Address: "[fe80::2%eth1]:4160", Host: "fe80::2%eth1", Port: 4160, Family: 6, Interface: "eth1", Groups: []string{"a"},
			How: []string{ViaAnnouncement, ViaRequest}, Versions: []int{2}, Kind: "java", ProxySize: 900},
		{Address: "198.18.1.5:4161", Host: "198.18.1.5", Port: 4161, Family: 4, Interface: "eth0", Groups: []string{},
			How: []string{ViaRequest, ViaLocator}, Versions: []int{1}, Kind: "java", ProxySize: 700},
		{Address: "198.18.9.9:4160", Host: "198.18.9.9", Port: 4160, Family: 4, Groups: []string{}, How: []string{ViaLocator}, Error: "refused"},
	}
	merged := []Result{
		{ServiceID: id, Address: "198.18.2.2:4160", Host: "198.18.2.2", Port: 4160, Family: 4, Interface: "eth1", Addresses: []string{"[fe80::2%eth1]:4160"},
			Groups: []string{"a"}, How: []string{ViaAnnouncement, ViaRequest}, Versions: []int{1, 2}, Kind: "java", ProxySize: 900},
		{Address: "198.18.1.5:4161", Host: "198.18.1.5", Port: 4161, Family: 4, Interface: "eth0", Groups: []string{},
			How: []string{ViaRequest, ViaLocator}, Versions: []int{1}, Kind: "java", ProxySize: 700},
		{Address: "198.18.9.9:4160", Host: "198.18.9.9", Port: 4160, Groups: []string{}, How: []string{ViaLocator}, Error: "refused"},
	}
	for _, c := range []struct {
		merge bool
		want  []Result
	}{{false, perInterface}, {true, merged}} {
		if got := rows(seen, c.merge); !reflect.DeepEqual(got, c.want) {
			t.Errorf("merge=%v:\n got %+v\nwant %+v", c.merge, got, c.want)
		}
	}
	// Whatever order the sightings come in (failures keep theirs: the
	// first says why), the results are the same.
	for range 50 {
		shuffled := slices.Clone(seen[:6])
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		shuffled = append(shuffled, seen[6:]...)
		for _, c := range []struct {
			merge bool
			want  []Result
		}{{false, perInterface}, {true, merged}} {
			if got := rows(shuffled, c.merge); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("merge=%v, order %+v:\n got %+v\nwant %+v", c.merge, shuffled, got, c.want)
			}
		}
	}
}

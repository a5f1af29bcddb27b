package finder

import (
	"slices"
	"testing"
)

func TestMerge(t *testing.T) {
	id := "01000000-0000-0000-0000-000000000000"
	seen := []Result{
		// A Java lookup service answering a v2 request over IPv6 (no ID),
		// then announcing over IPv4 and IPv6 (ID from the announcement).
		{Host: "2001:db8::2", Port: 4160, How: []string{ViaRequest}, Interface: "eth1", Version: 2, Kind: "java"},
		{ServiceID: id, Host: "2001:db8::2", Port: 4160, How: []string{ViaAnnouncement}, Interface: "eth1", Version: 2, Kind: "java"},
		{ServiceID: id, Host: "198.18.2.2", Port: 4160, How: []string{ViaAnnouncement}, Interface: "eth1", Version: 2, Kind: "java"},
		// A v1 Java lookup service whose connect-back port is unknown,
		// later seen by locator at its real port.
		{Host: "198.18.1.5", Port: 0, How: []string{ViaRequest}, Version: 1, Kind: "java"},
		{Host: "198.18.1.5", Port: 4161, How: []string{ViaLocator}, Version: 1, Kind: "java"},
		// A failure at an address that also answered: not reported.
		{Host: "198.18.1.5", Port: 4161, How: []string{ViaLocator}, Error: "refused"},
		// A failure nothing else explains: reported once.
		{Host: "198.18.9.9", Port: 4160, How: []string{ViaLocator}, Error: "refused"},
		{Host: "198.18.9.9", Port: 4160, How: []string{ViaLocator}, Error: "refused again"},
	}
	got := merge(seen)
	if len(got) != 3 {
		t.Fatalf("merged into %d results, want 3: %+v", len(got), got)
	}
	java := got[0]
	if java.ServiceID != id || java.Host != "198.18.2.2" || !slices.Equal(java.Addresses, []string{"[2001:db8::2]:4160"}) ||
		!slices.Equal(java.How, []string{ViaAnnouncement, ViaRequest}) {
		t.Errorf("Java lookup service over two families: %+v", java)
	}
	v1 := got[1]
	if v1.Host != "198.18.1.5" || v1.Port != 4161 || !slices.Equal(v1.How, []string{ViaRequest, ViaLocator}) || v1.Error != "" {
		t.Errorf("v1 lookup service: %+v", v1)
	}
	if bad := got[2]; bad.Host != "198.18.9.9" || bad.Error != "refused" {
		t.Errorf("unreachable: %+v", bad)
	}
}

//go:build !jinid_omit_etcd

package cluster

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/jinid/jinid/services/store"
)

type fakeMembers struct{}

func (fakeMembers) Members() []store.Member {
	return []store.Member{{Node: "b", Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}, APIPort: 4162, DiscoveryPort: 4160, ClusterPort: 4163},
		{Node: "c", Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.6")}, APIPort: 70000}} // a port past 65535: left out
}
func (fakeMembers) EtcdEndpoints() []string {
	return []string{"https://10.0.0.9:2379", "https://etcd-x:2379"}
}

// The deployment's endpoints: etcd's as given (by address, or by name
// resolved), the etcd members the client learnt of by address, and
// every member's API, discovery and cluster ports; names are listed
// apart, for URLs handed in.
func TestDeployment(t *testing.T) {
	d := NewDeployment([]string{"https://10.0.0.2:2379", "http://[fd00::2]", "https://ETCD.example.:2380", "not a url"})
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(t.Context())
	if got := d.Names(); !slices.Equal(got, []string{"etcd.example:2380"}) {
		t.Errorf("names %v", got)
	}
	before := d.Endpoints()
	for _, want := range []string{"10.0.0.2:2379", "[fd00::2]:2379"} {
		if !slices.Contains(before, netip.MustParseAddrPort(want)) {
			t.Errorf("endpoints before joining %v: no %s", before, want)
		}
	}
	d.Joined(fakeMembers{})
	after := d.Endpoints()
	for _, want := range []string{"10.0.0.9:2379", "10.0.0.5:4162", "10.0.0.5:4160", "10.0.0.5:4163"} {
		if !slices.Contains(after, netip.MustParseAddrPort(want)) {
			t.Errorf("endpoints once joined %v: no %s", after, want)
		}
	}
	if slices.ContainsFunc(after, func(ap netip.AddrPort) bool { return ap.Addr() == netip.MustParseAddr("10.0.0.6") }) {
		t.Errorf("a member's impossible port counted: %v", after)
	}
}

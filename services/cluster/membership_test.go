//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jinid/jinid/internal/rig/etcdtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/store"
)

// The members of a deployment, holder and standbys, are listed while
// their processes run, and go with them; the holder says where it
// serves and the one waiting for its hold hears it; the status lists
// them as the nodes do.
func TestMembership(t *testing.T) {
	endpoint, _ := etcdtest.Start(t)
	const prefix = "/test-members"
	join := func(node string) *Joined {
		j, err := Join(t.Context(), store.EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second,
			Node: node, LeaseTTL: 2 * time.Second}, store.Member{ClusterPort: 4163, CertSHA256: "ab"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(j.Close)
		return j
	}
	a, b := join("node-a"), join("node-b")
	a.Refresh()
	if got := a.Members(); len(got) != 2 || got[0].Node != "node-a" || got[1].Node != "node-b" || got[1].ClusterPort != 4163 {
		t.Fatalf("the members as node-a reads them: %+v", got)
	}
	root, err := a.Hold(t.Context(), "", store.HoldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var heard atomic.Value
	taken := make(chan *store.Store, 1)
	go func() {
		st, err := b.Hold(t.Context(), "", store.HoldConfig{OnHolder: func(m store.Member) { heard.Store(m) }})
		if err != nil {
			t.Error(err)
		}
		taken <- st
	}()
	read := func() store.ClusterStatus {
		st, err := store.ReadCluster(t.Context(), store.EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := read(); st.Holder != "node-a" || len(st.Members) != 2 || st.Members[0].Node != "node-a" || st.Members[1].Node != "node-b" {
		t.Fatalf("cluster status %+v", st)
	}
	// The holder says where it serves; the one waiting hears it.
	addrs := []netip.Addr{netip.MustParseAddr("192.0.2.1")}
	if err := a.Publish(t.Context(), addrs, 4162, 4160); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "node-b told where node-a serves", func() bool {
		m, _ := heard.Load().(store.Member)
		return m.Node == "node-a" && slices.Equal(m.Addrs, addrs) && m.APIPort == 4162 && m.DiscoveryPort == 4160
	})
	testenv.Until(t, "node-b reading node-a's addresses", func() bool { b.Refresh(); return slices.Equal(b.Addrs(), addrs) })
	root.Close()
	a.Close()
	st := <-taken
	if st == nil {
		t.Fatal("node-b did not take the store once node-a ended")
	}
	defer st.Close()
	testenv.Until(t, "node-a gone from the members", func() bool {
		b.Refresh()
		m := b.Members()
		return len(m) == 1 && m[0].Node == "node-b"
	})
}

// A member record under no etcd lease is no node: written by whoever can
// write the prefix, it is not among the members.
func TestMembershipIgnoresRecordsWithoutLease(t *testing.T) {
	endpoint, _ := etcdtest.Start(t)
	const prefix = "/test-forged"
	a, err := Join(t.Context(), store.EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, Timeout: 2 * time.Second,
		Node: "node-a", LeaseTTL: 2 * time.Second}, store.Member{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	forged := `{"node":"evil","addrs":["192.0.2.66"],"clusterPort":4163,"certSHA256":"00"}`
	if _, err := cli.Put(context.Background(), prefix+"/.members/evil", forged); err != nil {
		t.Fatal(err)
	}
	a.refresh()
	if got := a.Members(); len(got) != 1 || got[0].Node != "node-a" {
		t.Fatalf("members with a record under no lease: %+v", got)
	}
	if slices.Contains(a.Addrs(), netip.MustParseAddr("192.0.2.66")) {
		t.Fatal("a forged record's address taken for a member's")
	}
}

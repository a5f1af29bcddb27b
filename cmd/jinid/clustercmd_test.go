//go:build !jinid_omit_daemon && !jinid_omit_tools

package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/services/store"
)

// jinid cluster status, in every format: a holder, a node waiting, the
// shards each holds, an etcd member that does not answer.
func TestClusterStatusOutput(t *testing.T) {
	st := store.ClusterStatus{Prefix: "/jinid", Holder: "gw-lobby",
		Members: []store.Member{
			{Node: "gw-lobby", Since: at.Add(-time.Hour), Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}, APIPort: 4162, DiscoveryPort: 4160},
			{Node: "gw-lab", Since: at.Add(-30 * time.Minute)},
		},
		Shards: map[string]string{"00": "gw-lobby", "03": "gw-lab", "01": "gw-lobby"},
		Etcd: []store.EtcdMember{
			{Name: "m0", Endpoint: "http://10.0.0.2:2379", Healthy: true, IsLeader: true, Version: "3.7.3", DBSize: 1 << 20},
			{Name: "m1", Endpoint: "http://10.0.0.3:2379", Healthy: true, Version: "3.7.3", DBSize: 1 << 20},
			{Name: "m2", Endpoint: "http://10.0.0.4:2379", Error: "does not answer"},
		}}
	checkGolden(t, "cluster-status", func(p *printer) error {
		nodes, members, _ := clusterRecords(st)
		return printCluster(p, st, nodes, members)
	})
}

// cluster status fails, naming it, when a holder or shard owner is no
// live member (a record under no lease is none), or a shard is unheld.
func TestClusterProblem(t *testing.T) {
	names := []string{"00", "01"}
	live := map[string]bool{"00": true, "01": true}
	for _, tc := range []struct {
		name string
		st   store.ClusterStatus
		want string // "" no problem; else a part of the error
	}{
		{"all held by live nodes", store.ClusterStatus{Holder: "a", HolderLive: true, Shards: map[string]string{"00": "a", "01": "b"}, ShardsLive: live}, ""},
		{"no holder", store.ClusterStatus{Prefix: "/jinid"}, "no node holds the store"},
		{"a holder that is no live member", store.ClusterStatus{Holder: "evil", Shards: map[string]string{"00": "a", "01": "b"}, ShardsLive: live}, `held by "evil", which is no live member`},
		{"a shard unheld", store.ClusterStatus{Holder: "a", HolderLive: true, Shards: map[string]string{"00": "a"}, ShardsLive: live}, "held by no node: 01"},
		{"a shard held by no live member", store.ClusterStatus{Holder: "a", HolderLive: true, Shards: map[string]string{"00": "a", "01": "evil\x1b]0;x\a"},
			ShardsLive: map[string]bool{"00": true}}, `01 ("evil\x1b]0;x\a")`},
	} {
		err := clusterProblem(tc.st, names)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q in it", tc.name, err, tc.want)
		}
	}
}

//go:build !jinid_omit_daemon && !jinid_omit_tools

package main

import (
	"net/netip"
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

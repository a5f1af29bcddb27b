//go:build !jinid_omit_daemon && !jinid_omit_etcd

package main

import "github.com/jinid/jinid/services/cluster"

// clusterShards are the names of the shards of a deployment's work,
// each of which a live node must hold.
func clusterShards() []string {
	names := make([]string, cluster.Count)
	for k := range names {
		names[k] = cluster.Name(k)
	}
	return names
}

//go:build !jinid_omit_daemon && jinid_omit_etcd

package main

// clusterShards: a build without etcd reads no cluster (store.ReadCluster
// fails first).
func clusterShards() []string { return nil }

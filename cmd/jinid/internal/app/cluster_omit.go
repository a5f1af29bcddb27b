//go:build jinid_omit_etcd

package app

// newCluster makes no node of a cluster: this build has no etcd store
// (cluster.go).
func newCluster(*Daemon) clusterPart { return nil }

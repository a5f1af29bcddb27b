//go:build jinid_omit_etcd

package store

import (
	"context"
	"errors"
)

// Etcd tells whether this build can keep its store in etcd: one built
// without the etcd feature (jinid_omit_etcd: the router profile, whose
// size budget the etcd client would break) cannot.
const Etcd = false

// OpenEtcd says this build has no etcd.
func OpenEtcd(context.Context, EtcdConfig) (*Store, error) {
	return nil, errors.New("this jinid is built without etcd (as the router build is): its store is the embedded one; use the full build to keep it in etcd")
}

// Lost is nil: the embedded store is never lost.
func (s *Store) Lost() <-chan struct{} { return nil }

// Acting is nil: the embedded store is always this process's.
func (s *Store) Acting() error { return nil }

// ReadCluster says this build has no etcd.
func ReadCluster(context.Context, EtcdConfig) (ClusterStatus, error) {
	return ClusterStatus{}, errors.New("this jinid is built without etcd (as the router build is): use the full build")
}

// Node is "": the embedded store is this process's alone.
func (s *Store) Node() string { return "" }

// MaxTxnOps is 0: there is no etcd.
func (s *Store) MaxTxnOps() int { return 0 }

// Revision is 0: there is no etcd.
func (s *Store) Revision() int64 { return 0 }

package store

import (
	"errors"
	"time"
)

// EtcdConfig says where in etcd a store is.
type EtcdConfig struct {
	Endpoints []string
	// Prefix is the store's place in etcd's key space (/jinid by
	// default); several jinid deployments can share a cluster.
	Prefix string
	// CertFile, KeyFile and CAFile, if set, are TLS for the cluster's
	// client port.
	CertFile, KeyFile, CAFile string
	// Timeout bounds one request to the cluster (10 s by default): a
	// write that cannot be committed in that time fails, unacknowledged.
	Timeout time.Duration
	// Exclusive has the store held by one process at a time: OpenEtcd
	// waits until no other holds it (a standby jinid waiting for the
	// active one to end), holds it by an etcd lease of LeaseTTL, and every
	// commit is fenced by that hold, so a process that lost it (cut off
	// from etcd past the TTL) can change nothing. Lost tells when.
	Exclusive bool
	// Node names the holder, for the others' logs.
	Node string
	// LeaseTTL is the hold's lease (10 s by default): how long a dead
	// holder keeps the store from its standby.
	LeaseTTL time.Duration
	// Waiting, if set, is told once that another holds the store and
	// this one waits.
	Waiting func(holder string)
	// NoWait, with Exclusive, fails at once (ErrHeld) rather than wait
	// for another holder.
	NoWait bool
}

// ErrHeld is OpenEtcd's error for a store another process holds, with
// NoWait.
var ErrHeld = errors.New("another jinid holds the store")

// DefaultEtcdPrefix is where in etcd jinid keeps its store unless told.
const DefaultEtcdPrefix = "/jinid"

// errUnavailable wraps a backend's failures to reach its data (an etcd
// cluster without a quorum, out of reach): the client is told to try
// again later, and the store probes until a write succeeds.
var errUnavailable = errors.New("etcd")

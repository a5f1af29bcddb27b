package store

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
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
	// LeaseTTL is the hold's lease (DefaultLeaseTTL if 0): how long a
	// dead holder keeps the store from its standby. A holder cut off
	// from etcd stops acting a fifth of it (at least 0.5 s) before the
	// cluster ends it.
	LeaseTTL time.Duration
	// Waiting, if set, is told once that another holds the store and
	// this one waits.
	Waiting func(holder string)
	// OnHolder, if set, is told the holder's member record while this
	// process waits for the hold, each time it changes (a standby
	// forwards to the holder: internal/relay).
	OnHolder func(Member)
	// NoWait, with Exclusive, fails at once (ErrHeld) rather than wait
	// for another holder.
	NoWait bool
	// Insecure says the operator accepts reaching etcd on another host
	// over plain http, or over TLS without a client certificate
	// (--etcd-insecure): whoever reaches etcd then can write the store.
	// It goes in the node's member record, for cluster status.
	Insecure bool
}

// InsecureEndpoint says why endpoints reach etcd insecurely, or "": an
// endpoint on another host (not loopback) over plain http, or over TLS
// without a client certificate (certFile). etcd then cannot tell jinid
// from anyone else who reaches it, and whoever writes the prefix writes
// tokens and member records.
func InsecureEndpoint(endpoints []string, certFile string) string {
	for _, raw := range endpoints {
		u, err := url.Parse(raw)
		if err != nil {
			continue // refused as malformed elsewhere
		}
		host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() || host == "localhost" {
			continue
		}
		switch {
		case u.Scheme == "http":
			return fmt.Sprintf("endpoint %s is plain http to another host: whoever reaches it can write the store", raw)
		case certFile == "":
			return fmt.Sprintf("endpoint %s is TLS without a client certificate (--etcd-cert, --etcd-key): etcd cannot tell this node from anyone else", raw)
		}
	}
	return ""
}

// ErrHeld is OpenEtcd's error for a store another process holds, with
// NoWait.
var ErrHeld = errors.New("another jinid holds the store")

// ErrTooLarge is an Update's error when it writes more than the cluster
// takes in one transaction.
var ErrTooLarge = errors.New("a change larger than the etcd cluster takes in one transaction")

// DefaultLeaseTTL is the hold's lease unless told.
const DefaultLeaseTTL = 10 * time.Second

// DefaultEtcdPrefix is where in etcd jinid keeps its store unless told.
const DefaultEtcdPrefix = "/jinid"

// errUnavailable wraps a backend's failures to reach its data (an etcd
// cluster without a quorum, out of reach): the client is told to try
// again later, and the store probes until a write succeeds.
var errUnavailable = errors.New("etcd")

// ClusterStatus is a deployment on etcd as ReadCluster found it.
type ClusterStatus struct {
	Prefix string `json:"prefix"`
	// Holder is the node that holds the store and serves; "" if none.
	Holder string `json:"holder"`
	// Members are the nodes registered: the holder first, then those
	// waiting to take over, longest waiting first.
	Members []Member `json:"members"`
	// Etcd are the etcd cluster's members.
	Etcd []EtcdMember `json:"etcd"`
	// Shards are the shards of the deployment's work held now, each by
	// the node named (ShardPrefix).
	Shards map[string]string `json:"shards,omitempty"`
	// Ignored are the member records under no live etcd lease: no
	// node (written by hand, or by whoever can write the prefix), by
	// key.
	Ignored []string `json:"ignored,omitempty"`
	// HolderLive says the holder's key is under a live lease and names
	// a live member; ShardsLive names the shards whose hold is so.
	HolderLive bool            `json:"-"`
	ShardsLive map[string]bool `json:"-"`
}

// Member is a node of a deployment as it registered in etcd (under
// <prefix>/.members/<node>, for as long as its lease lives).
type Member struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
	// Addrs, APIPort and DiscoveryPort say where the node serves, once
	// it holds the store (Publish): where the others forward what
	// reaches them.
	Addrs         []netip.Addr `json:"addrs,omitempty"`
	APIPort       int          `json:"apiPort,omitempty"`
	DiscoveryPort int          `json:"discoveryPort,omitempty"`
	// ClusterPort is where the node serves the other nodes (the shards
	// it holds), over TLS with the certificate CertSHA256 names.
	ClusterPort int    `json:"clusterPort,omitempty"`
	CertSHA256  string `json:"certSHA256,omitempty"`
	// EtcdInsecure says the node reaches etcd insecurely, as its
	// operator allowed (EtcdConfig.Insecure); SiteCA that it admits on
	// its cluster port only certificates its site's CA signed.
	EtcdInsecure bool `json:"etcdInsecure,omitempty"`
	SiteCA       bool `json:"siteCA,omitempty"`
}

// EtcdMember is one member of the etcd cluster and what it said of
// itself.
type EtcdMember struct {
	Name     string `json:"name"`
	ID       uint64 `json:"id"`
	Endpoint string `json:"endpoint"`
	Healthy  bool   `json:"healthy"`
	IsLeader bool   `json:"isLeader"`
	Leader   uint64 `json:"leader"`
	Version  string `json:"version,omitempty"`
	DBSize   int64  `json:"dbSize,omitempty"`
	RaftTerm uint64 `json:"raftTerm,omitempty"`
	Error    string `json:"error,omitempty"`
}

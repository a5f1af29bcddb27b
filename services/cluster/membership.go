//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/store"
)

// membersKey is where the members' records are, under the deployment's
// prefix: <prefix>/.members/<node>, each under its node's etcd lease.
const membersKey = ".members/"

// Membership is this node's record among the deployment's members, and
// the other members' as last read: the record lives under the node's
// etcd lease (store.EtcdNode), and goes with it; the others' are read
// every second (polled, not watched: a watch is a stream a stopping etcd
// member waits for, and one read a second is nothing to a cluster).
type Membership struct {
	node *store.EtcdNode
	log  *slog.Logger

	mu   sync.Mutex
	self store.Member

	members struct {
		sync.Mutex
		list  []store.Member
		addrs []netip.Addr
	}
	// live are the leases of member records known to be live (each
	// asked of etcd once: a record under a lease that ends is deleted
	// with it), ignored the records not under a live lease, each
	// logged once.
	readMu    sync.Mutex // one read of the members at a time
	live      map[int64]bool
	ignored   map[string]bool
	reader    *lifecycle.Periodic
	refreshed atomic.Int64 // when Refresh last read, UnixNano
}

// NewMembership returns the membership of node with its record self
// (self.Node is node's name); Start registers it.
func NewMembership(node *store.EtcdNode, self store.Member, log *slog.Logger) *Membership {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	self.Node = node.Name()
	if self.Since.IsZero() {
		self.Since = time.Now().UTC()
	}
	m := &Membership{node: node, log: log, self: self, live: map[int64]bool{}, ignored: map[string]bool{}}
	m.reader = lifecycle.Every(time.Second, m.refresh)
	return m
}

// Start writes the node's record, reads the members, and from then on
// reads them every second.
func (m *Membership) Start(ctx context.Context) error {
	if err := m.register(ctx); err != nil {
		return err
	}
	m.refresh()
	return m.reader.Start(ctx)
}

// Shutdown stops reading the members (the record goes with the node's
// lease).
func (m *Membership) Shutdown(ctx context.Context) error { return m.reader.Shutdown(ctx) }

// register writes this node's record under its lease.
func (m *Membership) register(ctx context.Context) error {
	m.mu.Lock()
	self := m.self
	m.mu.Unlock()
	v, err := json.Marshal(self)
	if err != nil {
		return err
	}
	if err := m.node.PutLeased(ctx, membersKey+self.Node, v); err != nil {
		return fmt.Errorf("etcd: registering as a member: %w", err)
	}
	return nil
}

// Publish says where this node serves once it holds the store: the
// nodes waiting forward what reaches them there.
func (m *Membership) Publish(ctx context.Context, addrs []netip.Addr, apiPort, discoveryPort int) error {
	m.mu.Lock()
	m.self.Addrs, m.self.APIPort, m.self.DiscoveryPort = addrs, apiPort, discoveryPort
	m.mu.Unlock()
	return m.register(ctx)
}

// Members are the deployment's nodes as last read (every second), this
// one included, by name.
func (m *Membership) Members() []store.Member {
	m.members.Lock()
	defer m.members.Unlock()
	return m.members.list
}

// Addrs lists the addresses the members registered: a request another
// node forwarded comes from, or names, one of them. It does not wait on
// etcd (it is asked on the API's accept path).
func (m *Membership) Addrs() []netip.Addr {
	m.members.Lock()
	defer m.members.Unlock()
	return m.members.addrs
}

// Refresh reads the members' records now (a node that does not answer
// may be gone), unless they were read less than 100 ms ago: a flood of
// requests for a dead node's shards costs etcd ten reads a second.
func (m *Membership) Refresh() {
	now := time.Now().UnixNano()
	if last := m.refreshed.Load(); now-last < int64(100*time.Millisecond) || !m.refreshed.CompareAndSwap(last, now) {
		return
	}
	m.refresh()
}

// refresh reads the members' records; failed, the last known stay until
// a read succeeds. A record counts only under a live lease: one under
// none is no node, whoever wrote it.
func (m *Membership) refresh() {
	m.readMu.Lock()
	defer m.readMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	recs, err := m.node.Records(ctx, membersKey, 1000)
	if err != nil {
		return
	}
	m.members.Lock()
	before := m.members.list
	m.members.Unlock()
	var list []store.Member
	var addrs []netip.Addr
	seen := map[int64]bool{}
	for _, r := range recs {
		var mb store.Member
		if json.Unmarshal(r.Value, &mb) != nil {
			continue
		}
		seen[r.Lease] = true
		if !m.live[r.Lease] {
			// Asked with a second of its own: a loaded etcd answering
			// the listing slowly leaves every new member's lease time.
			lctx, cancel := context.WithTimeout(context.Background(), time.Second)
			live, err := m.node.LeaseLive(lctx, r.Lease)
			cancel()
			switch {
			case err != nil:
				// Not known now: a member already counted stays one (a
				// node gone is gone with its record), a new one is asked
				// about again at the next read.
				if !slices.ContainsFunc(before, func(o store.Member) bool { return o.Node == mb.Node }) {
					continue
				}
			case !live:
				m.ignore(r.Key, r.Lease)
				continue
			default:
				m.live[r.Lease] = true
			}
		}
		list = append(list, mb)
		addrs = append(addrs, mb.Addrs...)
	}
	for id := range m.live {
		if !seen[id] {
			delete(m.live, id) // ended with its records
		}
	}
	slices.SortFunc(list, func(a, b store.Member) int { return strings.Compare(a.Node, b.Node) })
	m.members.Lock()
	m.members.list, m.members.addrs = list, addrs
	m.members.Unlock()
}

// ignore logs, once per key, a member record not under a live lease.
func (m *Membership) ignore(key string, lease int64) {
	if m.ignored[key] {
		return
	}
	if len(m.ignored) >= 1000 {
		clear(m.ignored) // bounded: some are logged again
	}
	m.ignored[key] = true
	m.log.Warn("a member record under no live etcd lease is ignored: it is no node (written by hand, or by whoever can write the prefix)",
		"key", key, "lease", lease)
}

// Joined is this process as a node of the deployment: its etcd node
// (lease, holds, watches) and its membership.
type Joined struct {
	*store.EtcdNode
	*Membership
}

// Join makes this process a node of the deployment cfg names: its lease,
// and its record self among the members (read every second from then
// on). Close ends it.
func Join(ctx context.Context, cfg store.EtcdConfig, self store.Member, log *slog.Logger) (*Joined, error) {
	n, err := store.JoinEtcd(ctx, cfg)
	if err != nil {
		return nil, err
	}
	self.EtcdInsecure = cfg.Insecure && store.InsecureEndpoint(cfg.Endpoints, cfg.CertFile) != ""
	m := NewMembership(n, self, log)
	if err := m.Start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return &Joined{n, m}, nil
}

// Close stops following the members and ends the node: its lease is
// revoked, its record and every hold go at once.
func (j *Joined) Close() {
	j.Membership.Shutdown(context.Background())
	j.EtcdNode.Close()
}

//go:build !jinid_omit_etcd

package app

import (
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/store"
)

// Lookup services heard elsewhere in a cluster. Multicast stays on a
// segment: a node hears only its own segments' lookup services. Each
// node notes the announcements it hears on its segments in the store
// (heardBucket, a record per node and lookup service, rewritten at most
// every heardEvery), and hands each new one the others noted to its
// lookup discovery services as if heard itself, over no interface of its
// own (nodenet.go): the rules of discovery apply unchanged (it is
// contacted by unicast at its announced address, routed through the
// segment's gateway, and discarded when its announcements stop coming,
// here or relayed).
const (
	heardBucket = "cluster.heard"
	heardEvery  = 5 * time.Second
	// heardMax bounds the lookup services one node notes: a segment's
	// hosts can announce as many ServiceIDs as they like.
	heardMax = 256
	// heardStale is when a record no node rewrote is removed.
	heardStale = 10 * time.Minute
)

// heardRecord is an announcement a node heard, as it is kept.
type heardRecord struct {
	Node         string    `json:"node"`
	Announcement announced `json:"announcement"`
	At           time.Time `json:"at"`
}

type announced struct {
	Version   int      `json:"version"`
	Host      string   `json:"host"`
	Port      int      `json:"port"`
	ServiceID string   `json:"serviceID"`
	Groups    []string `json:"groups"`
}

// heardNoter notes what a node's segments announce.
type heardNoter struct {
	st   *store.Store
	node string
	// self is the cluster's own lookup service, once known (zero
	// before: then nothing is noted).
	self func() discovery.ServiceID
	log  *slog.Logger

	mu       sync.Mutex
	known    discovery.ServiceID // self, once read
	last     map[discovery.ServiceID]time.Time
	pending  map[string]heardRecord // written by flush, by key
	warnings rate.Sometimes         // at most one a minute: a segment's hosts cause them
	writer   *lifecycle.Periodic
}

func newHeardNoter(st *store.Store, node string, self func() discovery.ServiceID, log *slog.Logger) *heardNoter {
	n := &heardNoter{st: st, node: node, self: self, log: log, last: map[discovery.ServiceID]time.Time{},
		pending: map[string]heardRecord{}, warnings: rate.Sometimes{Interval: time.Minute}}
	// One writer whatever the traffic: the host's reader never waits on
	// etcd.
	n.writer = lifecycle.Every(time.Second, n.flush)
	n.writer.Start(context.Background())
	return n
}

// flush writes what was noted since it last ran (the cluster's own
// lookup service left out: its identity is read here, once the first
// holder made it, never on the host's reader).
func (n *heardNoter) flush() {
	n.mu.Lock()
	self := n.known
	n.mu.Unlock()
	if self.IsZero() {
		if self = n.self(); self.IsZero() {
			return // noted again when heard again
		}
		n.mu.Lock()
		n.known = self
		n.mu.Unlock()
	}
	n.mu.Lock()
	recs := n.pending
	n.pending = map[string]heardRecord{}
	delete(n.last, self)
	n.mu.Unlock()
	delete(recs, n.node+"/"+self.String())
	keys := slices.Sorted(maps.Keys(recs))
	for len(keys) > 0 {
		part := keys[:n.st.Chunk(len(keys), 1)]
		keys = keys[len(part):]
		err := n.st.Update(func(tx *store.Tx) error {
			for _, k := range part {
				if err := tx.Put(heardBucket, k, recs[k]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			n.log.Debug("noting the lookup services heard on this node's segments", "err", err)
		}
	}
}

// close stops the writer.
func (n *heardNoter) close() { n.writer.Shutdown(context.Background()) }

// note records an announcement heard on this node's segments, at most
// every heardEvery per lookup service, heardMax lookup services at most.
func (n *heardNoter) note(m mcast.Message) {
	a := m.Announcement
	if a == nil {
		return
	}
	n.mu.Lock()
	self := n.known
	n.mu.Unlock()
	if a.ServiceID == self {
		return
	}
	host := a.Host
	if host == "" {
		host = m.Src.Addr().String()
	}
	// An address another host can reach: not link-local (its zone is an
	// interface of this host), not loopback.
	if ip, err := netip.ParseAddr(host); err == nil && (ip.IsLinkLocalUnicast() || ip.IsLoopback()) {
		return
	}
	n.mu.Lock()
	last, known := n.last[a.ServiceID]
	switch {
	case known && m.At.Sub(last) < heardEvery:
		n.mu.Unlock()
		return
	case !known && len(n.last) >= heardMax:
		n.mu.Unlock()
		n.warnings.Do(func() {
			n.log.Warn("too many lookup services heard on this node's segments; the others are not shared", "max", heardMax)
		})
		return
	}
	n.last[a.ServiceID] = m.At
	rec := heardRecord{Node: n.node, At: m.At.UTC(), Announcement: announced{Version: a.Version, Host: host, Port: a.Port,
		ServiceID: a.ServiceID.String(), Groups: a.Groups}}
	n.pending[n.node+"/"+rec.Announcement.ServiceID] = rec
	n.mu.Unlock()
}

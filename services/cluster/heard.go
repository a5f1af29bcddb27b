//go:build !jinid_omit_etcd

package cluster

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
// own (Discovery): the rules of discovery apply unchanged (it is
// contacted by unicast at its announced address, routed through the
// segment's gateway, and discarded when its announcements stop coming,
// here or relayed).
const (
	heardBucket = "cluster.heard"
	heardEvery  = 5 * time.Second
	// heardMax bounds the lookup services one node notes: a segment's
	// hosts can announce as many ServiceIDs as they like. Past it, the
	// one heard longest ago makes way: a burst of made-up IDs delays a
	// real lookup service's sharing to its next announcement after the
	// burst at most, never for good.
	heardMax = 256
	// heardPerSource bounds what one host notes: its own lookup
	// services make way for one another past it, not for others'.
	heardPerSource = 8
	// heardAge is when a lookup service not heard since is forgotten
	// (and its record removed): three announcement intervals (a
	// lookup service's default, 2 minutes).
	heardAge = 3 * 2 * time.Minute
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
	last     map[discovery.ServiceID]heardFrom
	sources  map[netip.Addr]int     // how many of last each source noted
	newest   time.Time              // the latest announcement noted: what ages the others
	pending  map[string]heardRecord // written by flush, by key
	gone     map[string]bool        // removed by flush, by key
	warnings rate.Sometimes         // at most one a minute: a segment's hosts cause them
	writer   *lifecycle.Periodic
}

// heardFrom is when a lookup service was last noted, and from which
// source.
type heardFrom struct {
	at  time.Time
	src netip.Addr
}

func newHeardNoter(st *store.Store, node string, self func() discovery.ServiceID, log *slog.Logger) *heardNoter {
	n := &heardNoter{st: st, node: node, self: self, log: log, last: map[discovery.ServiceID]heardFrom{},
		sources: map[netip.Addr]int{}, pending: map[string]heardRecord{}, gone: map[string]bool{},
		warnings: rate.Sometimes{Interval: time.Minute}}
	// One writer whatever the traffic: the host's reader never waits on
	// etcd.
	n.writer = lifecycle.Every(time.Second, n.flush)
	return n
}

// Start starts the writer; Shutdown stops it.
func (n *heardNoter) Start(ctx context.Context) error    { return n.writer.Start(ctx) }
func (n *heardNoter) Shutdown(ctx context.Context) error { return n.writer.Shutdown(ctx) }

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
	// What was not heard for heardAge is forgotten here, once a flush,
	// not on the path of every announcement.
	for id, f := range n.last {
		if n.newest.Sub(f.at) > heardAge {
			n.forget(id, f)
		}
	}
	recs, gone := n.pending, n.gone
	n.pending, n.gone = map[string]heardRecord{}, map[string]bool{}
	if f, ok := n.last[self]; ok {
		n.forget(self, f)
	}
	n.mu.Unlock()
	delete(recs, n.node+"/"+self.String())
	keys := slices.Sorted(maps.Keys(recs))
	for k := range gone {
		if _, ok := recs[k]; !ok {
			keys = append(keys, k)
		}
	}
	for len(keys) > 0 {
		part := keys[:n.st.Chunk(len(keys), 1)]
		keys = keys[len(part):]
		err := n.st.Update(func(tx *store.Tx) error {
			for _, k := range part {
				rec, ok := recs[k]
				if !ok {
					if err := tx.Delete(heardBucket, k); err != nil {
						return err
					}
					continue
				}
				if err := tx.Put(heardBucket, k, rec); err != nil {
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

// forget drops id from what is noted, and its record at the next flush.
// n.mu is held.
func (n *heardNoter) forget(id discovery.ServiceID, f heardFrom) {
	delete(n.last, id)
	if n.sources[f.src]--; n.sources[f.src] <= 0 {
		delete(n.sources, f.src)
	}
	key := n.node + "/" + id.String()
	delete(n.pending, key)
	n.gone[key] = true
}

// makeRoom makes room for a new lookup service from src: src's oldest
// goes past heardPerSource, the oldest of all past heardMax. n.mu is
// held.
func (n *heardNoter) makeRoom(src netip.Addr) {
	oldest := func(of func(heardFrom) bool) {
		var id discovery.ServiceID
		var at heardFrom
		found := false
		for k, f := range n.last {
			if of(f) && (!found || f.at.Before(at.at)) {
				id, at, found = k, f, true
			}
		}
		if found {
			n.forget(id, at)
		}
	}
	if n.sources[src] >= heardPerSource {
		oldest(func(f heardFrom) bool { return f.src == src })
		n.warnings.Do(func() {
			n.log.Warn("a host announces more lookup services than a node shares of one host; the oldest make way", "source", src, "max", heardPerSource)
		})
	}
	if len(n.last) >= heardMax {
		oldest(func(heardFrom) bool { return true })
		n.warnings.Do(func() {
			n.log.Warn("too many lookup services heard on this node's segments; those heard longest ago make way", "max", heardMax)
		})
	}
}

// note records an announcement heard on this node's segments, at most
// every heardEvery per lookup service; heardMax lookup services at
// most, heardPerSource from one source, each forgotten (by flush)
// heardAge after it was last heard.
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
	src := m.Src.Addr().WithZone("").Unmap()
	n.mu.Lock()
	last, known := n.last[a.ServiceID]
	switch {
	case known && m.At.Sub(last.at) < heardEvery:
		n.mu.Unlock()
		return
	case known && last.src != src:
		// Heard from another host now: counted there.
		n.forget(a.ServiceID, last)
		n.makeRoom(src)
	case !known:
		n.makeRoom(src)
	}
	if m.At.After(n.newest) {
		n.newest = m.At
	}
	if _, still := n.last[a.ServiceID]; !still {
		n.sources[src]++
	}
	delete(n.gone, n.node+"/"+a.ServiceID.String())
	n.last[a.ServiceID] = heardFrom{at: m.At, src: src}
	rec := heardRecord{Node: n.node, At: m.At.UTC(), Announcement: announced{Version: a.Version, Host: host, Port: a.Port,
		ServiceID: a.ServiceID.String(), Groups: a.Groups}}
	n.pending[n.node+"/"+rec.Announcement.ServiceID] = rec
	n.mu.Unlock()
}

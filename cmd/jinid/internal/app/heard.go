//go:build !jinid_omit_etcd

package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/store"
)

// Lookup services heard elsewhere in a cluster. Multicast stays on a
// segment: the node holding the store hears only its own segments'
// lookup services. The other nodes note the announcements they hear on
// theirs in the store (heardBucket, a record per node and lookup
// service, rewritten at most every heardEvery), and the holder hands
// each new one to its lookup discovery service as if heard itself, over
// no interface of its own: the rules of discovery apply unchanged (it is
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

// heardNoter is a standby's side: it notes what its segments announce.
type heardNoter struct {
	st   *store.Store
	node string
	self discovery.ServiceID // the cluster's own lookup service
	log  *slog.Logger

	mu       sync.Mutex
	last     map[discovery.ServiceID]time.Time
	pending  map[string]heardRecord // written by flush, by key
	warnings rate.Sometimes         // at most one a minute: a segment's hosts cause them
	writer   *lifecycle.Periodic
}

func newHeardNoter(st *store.Store, node string, self discovery.ServiceID, log *slog.Logger) *heardNoter {
	n := &heardNoter{st: st, node: node, self: self, log: log, last: map[discovery.ServiceID]time.Time{},
		pending: map[string]heardRecord{}, warnings: rate.Sometimes{Interval: time.Minute}}
	// One writer whatever the traffic: the host's reader never waits on
	// etcd.
	n.writer = lifecycle.Every(time.Second, n.flush)
	n.writer.Start(context.Background())
	return n
}

// flush writes what was noted since it last ran.
func (n *heardNoter) flush() {
	n.mu.Lock()
	recs := n.pending
	n.pending = map[string]heardRecord{}
	n.mu.Unlock()
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
			n.log.Debug("standby: noting the lookup services heard", "err", err)
		}
	}
}

// close stops the writer.
func (n *heardNoter) close() { n.writer.Shutdown(context.Background()) }

// note records an announcement heard on this node's segments, at most
// every heardEvery per lookup service, heardMax lookup services at most.
func (n *heardNoter) note(m mcast.Message) {
	a := m.Announcement
	if a == nil || a.ServiceID == n.self {
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
			n.log.Warn("standby: too many lookup services heard on this node's segments; the others are not shared", "max", heardMax)
		})
		return
	}
	n.last[a.ServiceID] = m.At
	rec := heardRecord{Node: n.node, At: m.At.UTC(), Announcement: announced{Version: a.Version, Host: host, Port: a.Port,
		ServiceID: a.ServiceID.String(), Groups: a.Groups}}
	n.pending[n.node+"/"+rec.Announcement.ServiceID] = rec
	n.mu.Unlock()
}

// addHeardRelay has the holder hand what the other nodes heard to its
// lookup discovery service.
func (d *Daemon) addHeardRelay(st *store.Store, mc *group.Multicast) {
	d.parts.Add("lookup services heard by other nodes", &heardRelay{st: st, node: st.Node(), mc: mc, log: d.log})
}

// heardRelay is the holder's side: it hands what the others heard to
// its lookup discovery service.
type heardRelay struct {
	st   *store.Store
	node string
	mc   *group.Multicast
	log  *slog.Logger

	seen   map[string]time.Time // the record's At last relayed, by key
	reader *lifecycle.Periodic
}

// Start reads the records every second.
func (r *heardRelay) Start(ctx context.Context) error {
	r.seen = map[string]time.Time{}
	r.reader = lifecycle.Every(time.Second, r.relay)
	return r.reader.Start(ctx)
}

func (r *heardRelay) Shutdown(ctx context.Context) error { return r.reader.Shutdown(ctx) }

// relay hands over each record rewritten since it was last read (not
// this node's own), and removes those no node rewrote for heardStale.
func (r *heardRelay) relay() {
	now := time.Now()
	var fresh []announced
	var stale []string
	err := r.st.View(func(tx *store.Tx) error {
		return tx.ForEach(heardBucket, func(key string, raw []byte) error {
			var rec heardRecord
			if err := json.Unmarshal(raw, &rec); err != nil || strings.HasPrefix(key, r.node+"/") {
				return nil
			}
			if now.Sub(rec.At) > heardStale {
				stale = append(stale, key)
				return nil
			}
			if rec.At.After(r.seen[key]) {
				r.seen[key] = rec.At
				fresh = append(fresh, rec.Announcement)
			}
			return nil
		})
	})
	if err != nil {
		r.log.Debug("reading the lookup services other nodes heard", "err", err)
		return
	}
	for _, a := range fresh {
		id, err := discovery.ParseServiceID(a.ServiceID)
		if err != nil {
			continue
		}
		r.mc.Relayed(discovery.Announcement{Version: a.Version, Host: a.Host, Port: a.Port, ServiceID: id, Groups: a.Groups})
	}
	for len(stale) > 0 {
		n := r.st.Chunk(len(stale), 1)
		part := stale[:n]
		stale = stale[n:]
		r.st.Update(func(tx *store.Tx) error {
			for _, k := range part {
				if err := tx.Delete(heardBucket, k); err != nil {
					return err
				}
			}
			return nil
		})
		for _, k := range part {
			delete(r.seen, k)
		}
	}
}

//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/services/store"
)

// DiscoveryConfig gives a node's Discovery its dependencies.
type DiscoveryConfig struct {
	// Node is this node's membership: the records of what the other
	// nodes heard are followed through its watch.
	Node *store.EtcdNode
	// Etcd opens the deployment's store, not held: where each node notes
	// what its segments announce (its own records only).
	Etcd store.EtcdConfig
	// Multicast, if set, is the node's multicast host (nil: multicast
	// off; the engines hear the other nodes' records alone, and reach
	// lookup services by unicast).
	Multicast *mcast.HostConfig
	// Self is the cluster's own lookup service, once the store has its
	// identity (zero before): every node announces it, none notes it.
	Self func(*store.Store) discovery.ServiceID
	// Namespace is where lookup services are dialed with multicast off.
	Namespace namespace.Namespace
	Logger    *slog.Logger
}

// Discovery is a node's discovery of lookup services, for every lookup
// discovery service it runs (the deployment's, while it holds the
// store, and its shards'): its own segments, through a multicast host of
// its own (which its other parts share) and group discovery's network on
// it; and what the other nodes heard on theirs, from their records in
// the store, handed over as if heard here. What its segments announce
// it notes there for them. Each lookup discovery service's engine takes
// it all through one fan-out, and a lookup service new to several
// engines is contacted once for all of them (Network: the engines of k
// shards cost one contact, not k; each applies its own registrations'
// rules to the answer).
type Discovery struct {
	cfg DiscoveryConfig
	log *slog.Logger
	fan *group.Fanout
	net *group.SharedContacts

	// Set by Start.
	st    *store.Store
	host  *mcast.Host
	mc    *group.Multicast
	noter *heardNoter
	port  *mcast.Port
	relay *heardRelay
	parts lifecycle.Group
}

// NewDiscovery returns a node's discovery; Start starts it.
func NewDiscovery(cfg DiscoveryConfig) *Discovery {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Etcd.Exclusive, cfg.Etcd.Waiting, cfg.Etcd.OnHolder = false, nil, nil
	return &Discovery{cfg: cfg, log: cfg.Logger, fan: group.NewFanout(),
		net: &group.SharedContacts{Network: group.UnicastNetwork{Namespace: cfg.Namespace}}}
}

// Start opens the store, the multicast host (if on), group discovery's
// network on it, the noting of what the node's segments announce, and
// the relay of what the other nodes noted; each started before the next
// is made (and all shut down, in reverse, if one fails).
func (d *Discovery) Start(ctx context.Context) error {
	st, err := store.OpenEtcd(ctx, d.cfg.Etcd)
	if err != nil {
		return err
	}
	d.st = st
	d.parts.Add("the deployment's store, not held", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return st.Close() }})
	if hc := d.cfg.Multicast; hc != nil {
		if d.host, err = mcast.NewNetlinkHost(*hc); err != nil {
			return errors.Join(err, d.parts.Shutdown(ctx))
		}
		d.parts.Add("the node's multicast host", d.host)
		if err := d.parts.Start(ctx); err != nil {
			return err
		}
		if d.mc, err = group.NewMulticast(group.MulticastConfig{Host: d.host, Namespace: hc.Namespace, Logger: d.log.With("service", "lds")}); err != nil {
			return errors.Join(err, d.parts.Shutdown(ctx))
		}
		d.mc.SetSink(d.fan)
		d.net.Network = d.mc
		d.parts.Add("group discovery's network", d.mc)
		d.noter = newHeardNoter(st, d.cfg.Etcd.Node, d.self, d.log)
		d.parts.Add("noting what the node's segments announce", d.noter)
		if err := d.parts.Start(ctx); err != nil {
			return err
		}
		if d.port, err = d.host.Open(mcast.PortConfig{OnMessage: d.noter.note}); err != nil {
			return errors.Join(err, d.parts.Shutdown(ctx))
		}
		d.parts.Add("hearing the node's segments", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return d.port.Close() }})
	}
	d.relay = &heardRelay{node: d.cfg.Etcd.Node, follow: d.cfg.Node.Follow, st: st, sink: d.fan, log: d.log}
	d.parts.Add("what the other nodes heard", d.relay)
	return d.parts.Start(ctx)
}

// Shutdown stops it all, in reverse.
func (d *Discovery) Shutdown(ctx context.Context) error { return d.parts.Shutdown(ctx) }

// self is the cluster's own lookup service, once known.
func (d *Discovery) self() discovery.ServiceID { return d.cfg.Self(d.st) }

// Store is the deployment's store as the node reads it, not held.
func (d *Discovery) Store() *store.Store { return d.st }

// Host is the node's multicast host (nil with multicast off), which its
// other parts share.
func (d *Discovery) Host() *mcast.Host { return d.host }

// Network is what the node's engines run on: one contact with a lookup
// service for all of them.
func (d *Discovery) Network() group.Network { return d.net }

// LinkOf names the served interface whose link an address is on.
func (d *Discovery) LinkOf(a netip.Addr) string {
	if d.mc == nil {
		return ""
	}
	return d.mc.LinkOf(a)
}

// Add has a lookup discovery service's engine hear the node's discovery
// from now on, and at once every announcement the other nodes' records
// hold: it need not wait for them to be heard again.
func (d *Discovery) Add(s group.LinkSink) (remove func()) {
	remove = d.fan.Add(s)
	d.relay.replay(s)
	return remove
}

// heardRelay hands what the other nodes heard to the node's engines, as
// etcd's watch of their records delivers it (no polling), and removes
// the records no node rewrote for heardStale (a node gone for good).
type heardRelay struct {
	node   string
	follow func(context.Context, store.FollowConfig) (*store.Follower, error)
	st     *store.Store
	sink   group.Sink
	log    *slog.Logger

	mu       sync.Mutex
	last     map[string]heardRecord // the other nodes' records, by key
	follower *store.Follower
	sweeper  *lifecycle.Periodic
}

// heardSweep is how often the records are looked at for staleness.
const heardSweep = time.Minute

func (r *heardRelay) Start(ctx context.Context) error {
	r.last = map[string]heardRecord{}
	f, err := r.follow(ctx, store.FollowConfig{Buckets: []string{heardBucket}, Apply: r.apply, Logger: r.log})
	if err != nil {
		return err
	}
	r.follower = f
	r.sweeper = lifecycle.Every(heardSweep, r.sweep)
	return r.sweeper.Start(ctx)
}

func (r *heardRelay) Shutdown(ctx context.Context) error {
	err := r.sweeper.Shutdown(ctx)
	r.follower.Close()
	return err
}

// apply takes a batch of changes of the records: each rewritten since
// (not this node's own) is handed to the engines.
func (r *heardRelay) apply(b store.Batch) error {
	var fresh []announced
	r.mu.Lock()
	before := r.last
	if b.Reset {
		r.last = map[string]heardRecord{}
	}
	for _, c := range b.Changes {
		if c.Bucket != heardBucket || strings.HasPrefix(c.Key, r.node+"/") {
			continue
		}
		var rec heardRecord
		if c.Value == nil || json.Unmarshal(c.Value, &rec) != nil {
			delete(r.last, c.Key)
			continue
		}
		if old, ok := before[c.Key]; !ok || rec.At.After(old.At) {
			fresh = append(fresh, rec.Announcement)
		}
		r.last[c.Key] = rec
	}
	r.mu.Unlock()
	for _, a := range fresh {
		hand(r.sink, a)
	}
	return nil
}

// sweep removes the records no node rewrote for heardStale.
func (r *heardRelay) sweep() {
	now := time.Now()
	var stale []string
	r.mu.Lock()
	for k, rec := range r.last {
		if now.Sub(rec.At) > heardStale {
			stale = append(stale, k)
		}
	}
	r.mu.Unlock()
	for len(stale) > 0 {
		part := stale[:r.st.Chunk(len(stale), 1)]
		stale = stale[len(part):]
		err := r.st.Update(func(tx *store.Tx) error {
			for _, key := range part {
				if err := tx.Delete(heardBucket, key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			r.log.Debug("removing the records of lookup services no node hears any more", "err", err)
		}
	}
}

// replay hands s every record as last followed.
func (r *heardRelay) replay(s group.Sink) {
	r.mu.Lock()
	recs := make([]announced, 0, len(r.last))
	for _, rec := range r.last {
		recs = append(recs, rec.Announcement)
	}
	r.mu.Unlock()
	for _, a := range recs {
		hand(s, a)
	}
}

// hand gives s a record's announcement, as heard over no interface of
// this host: the rules of discovery (contact at its announced address,
// discard on silence) apply as to any other.
func hand(s group.Sink, a announced) {
	id, err := discovery.ParseServiceID(a.ServiceID)
	if err != nil {
		return
	}
	s.HandleAnnouncement(discovery.Announcement{Version: a.Version, Host: a.Host, Port: a.Port, ServiceID: id, Groups: a.Groups}, "")
}

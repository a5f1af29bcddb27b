//go:build !jinid_omit_etcd

package app

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
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// nodeNet is a node's discovery of lookup services, for every lookup
// discovery service it runs (the deployment's, while it holds the store,
// and its shards'): its own segments, through a multicast host of its
// own (which its other parts share) and group discovery's network on
// it; and what the other nodes heard on theirs, from their records in
// the store (heard.go), handed over as if heard here. What its segments
// announce it notes there for them. Each lookup discovery service's
// engine takes it all through one fan-out, and a lookup service new to
// several engines is contacted once for all of them (network: the
// engines of k shards cost one contact, not k; each applies its own
// registrations' rules to the answer). With multicast off there is
// no host: the engines hear the other nodes' records alone, and reach
// lookup services by unicast.
type nodeNet struct {
	fan  *group.Fanout
	host *mcast.Host      // nil with multicast off
	mc   *group.Multicast // nil with multicast off
	// network is what every engine contacts lookup services through:
	// one contact for all of them (group.SharedContacts), over mc, or
	// unicast from the namespace with multicast off.
	network *group.SharedContacts
	st      *store.Store // the deployment's, not held: the records
	noter   *heardNoter  // nil with multicast off
	port    *mcast.Port
	relay   *heardRelay
}

// startNodeNet starts the node's discovery network.
func (d *Daemon) startNodeNet(ctx context.Context) (*nodeNet, error) {
	cfg := d.cfg.Etcd
	cfg.Exclusive, cfg.Waiting, cfg.OnHolder = false, nil, nil
	st, err := store.OpenEtcd(ctx, cfg)
	if err != nil {
		return nil, err
	}
	n := &nodeNet{fan: group.NewFanout(), st: st, network: &group.SharedContacts{Network: group.UnicastNetwork{Namespace: d.cfg.Namespace}}}
	n.relay = &heardRelay{st: st, node: cfg.Node, sink: n.fan, log: d.log}
	if !d.cfg.NoMulticast {
		if err := n.startMulticast(ctx, d); err != nil {
			st.Close()
			return nil, err
		}
	}
	if err := n.relay.Start(ctx); err != nil {
		n.shutdown(ctx)
		return nil, err
	}
	return n, nil
}

// startMulticast opens the host, group discovery's network on it, and
// the noting of what the node's segments announce.
func (n *nodeNet) startMulticast(ctx context.Context, d *Daemon) error {
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: d.cfg.Namespace, Logger: d.log,
		Include: d.cfg.Include, Exclude: d.cfg.Exclude, ExcludeDefaultRoute: d.cfg.ExcludeDefaultRoute,
		Metrics: mcast.NewMetrics(d.obs.metrics)})
	if err != nil {
		return err
	}
	if err := host.Start(ctx); err != nil {
		return err
	}
	n.host = host
	mc, err := group.NewMulticast(group.MulticastConfig{Host: host, Namespace: d.cfg.Namespace, Logger: d.log.With("service", "lds")})
	if err != nil {
		return err
	}
	mc.SetSink(n.fan)
	if err := mc.Start(ctx); err != nil {
		return err
	}
	n.mc, n.network.Network = mc, mc
	n.noter = newHeardNoter(n.st, d.cfg.Etcd.Node, n.self, d.log)
	n.port, err = host.Open(mcast.PortConfig{OnMessage: n.noter.note})
	return err
}

// self is the cluster's own lookup service (every node announces it,
// none notes it), once the store has its identity.
func (n *nodeNet) self() discovery.ServiceID {
	m, _, _ := lookup.ReadMeta(n.st)
	return m.ServiceID
}

// linkOf names the served interface whose link an address is on.
func (n *nodeNet) linkOf(a netip.Addr) string {
	if n.mc == nil {
		return ""
	}
	return n.mc.LinkOf(a)
}

// add has a lookup discovery service's engine hear the node's discovery
// from now on, and at once every announcement the other nodes' records
// hold: it need not wait for them to be heard again.
func (n *nodeNet) add(s group.LinkSink) (remove func()) {
	remove = n.fan.Add(s)
	n.relay.replay(s)
	return remove
}

// shutdown stops it all.
func (n *nodeNet) shutdown(ctx context.Context) error {
	var errs []error
	if n.relay.reader != nil {
		errs = append(errs, n.relay.Shutdown(ctx))
	}
	if n.port != nil {
		errs = append(errs, n.port.Close())
	}
	if n.noter != nil {
		n.noter.close()
	}
	if n.mc != nil {
		errs = append(errs, n.mc.Shutdown(ctx))
	}
	if n.host != nil {
		errs = append(errs, n.host.Shutdown(ctx))
	}
	errs = append(errs, n.st.Close())
	return errors.Join(errs...)
}

// heardRelay hands what the other nodes heard to the node's engines.
type heardRelay struct {
	st   *store.Store
	node string
	sink group.Sink
	log  *slog.Logger

	mu     sync.Mutex
	seen   map[string]time.Time // the record's At last relayed, by key
	last   map[string]announced // the records as last read, by key
	reader *lifecycle.Periodic
}

// Start reads the records every second.
func (r *heardRelay) Start(ctx context.Context) error {
	r.seen, r.last = map[string]time.Time{}, map[string]announced{}
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
	current := map[string]announced{}
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
			current[key] = rec.Announcement
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
	r.mu.Lock()
	r.last = current
	r.mu.Unlock()
	for _, a := range fresh {
		r.hand(r.sink, a)
	}
	for len(stale) > 0 {
		k := r.st.Chunk(len(stale), 1)
		part := stale[:k]
		stale = stale[k:]
		r.st.Update(func(tx *store.Tx) error {
			for _, key := range part {
				if err := tx.Delete(heardBucket, key); err != nil {
					return err
				}
			}
			return nil
		})
		for _, key := range part {
			delete(r.seen, key)
		}
	}
}

// replay hands s every record as last read.
func (r *heardRelay) replay(s group.Sink) {
	r.mu.Lock()
	recs := make([]announced, 0, len(r.last))
	for _, a := range r.last {
		recs = append(recs, a)
	}
	r.mu.Unlock()
	for _, a := range recs {
		r.hand(s, a)
	}
}

// hand gives s a record's announcement, as heard over no interface of
// this host: the rules of discovery (contact at its announced address,
// discard on silence) apply as to any other.
func (r *heardRelay) hand(s group.Sink, a announced) {
	id, err := discovery.ParseServiceID(a.ServiceID)
	if err != nil {
		return
	}
	s.HandleAnnouncement(discovery.Announcement{Version: a.Version, Host: a.Host, Port: a.Port, ServiceID: id, Groups: a.Groups}, "")
}

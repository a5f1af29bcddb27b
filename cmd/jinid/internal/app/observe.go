package app

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/status"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
)

// observed is what the daemon shows of itself: metrics, the journal of
// notable events, the lookup services heard announcing, and the
// services the status page counts (set while building).
type observed struct {
	metrics *metrics.Registry
	journal *status.Journal
	heard   *status.Heard
	started time.Time

	grantor *lease.Grantor
	lds     *lds.Service
	renewal *renewal.Service
	mailbox *mailbox.Service
	txn     *txn.Service // nil with --no-transactions

	lsEvents *metrics.Counter
}

// statusRefresh is how often the status page reloads itself.
const statusRefresh = 10

func newObserved(now time.Time, announceEvery time.Duration) *observed {
	o := &observed{metrics: metrics.New(), journal: status.NewJournal(time.Now), started: now,
		// Heard for as long as the lookup discovery service would keep
		// one: three missed announcements.
		heard: status.NewHeard(3 * cmp.Or(announceEvery, 120*time.Second))}
	o.lsEvents = o.metrics.Counter("jinid_lookup_service_events_total",
		"Lookup services discovered, changed and discarded by the lookup discovery service, by event, the engine that saw it (group, locator) and for discards the reason.",
		"event", "by", "reason")
	return o
}

// onDiscoveryEvent counts an event of the lookup discovery service's
// engines and notes discoveries and discards.
func (o *observed) onDiscoveryEvent(ev discovery.Event, by string) {
	o.lsEvents.Inc(ev.Kind.String(), by, ev.Reason)
	switch ev.Kind {
	case discovery.Discovered, discovery.Discarded:
		how := "by " + by
		if ev.Interface != "" {
			how += " on " + ev.Interface
		}
		if ev.Reason != "" {
			how += ", " + ev.Reason
		}
		o.journal.Add("lookup service "+ev.Kind.String(), fmt.Sprintf("%s at %s, groups %s (%s)",
			ev.ID, ev.Address(), discovery.GroupsText(ev.Groups, ","), how))
	}
	if ev.Kind == discovery.Discarded {
		o.heard.Forget(ev.ID.String()) // not listed on as still announcing
	}
}

func (o *observed) onDeliveryFailed(listener string, out event.Outcome, _ error) {
	o.journal.Add("event not delivered", fmt.Sprintf("to %s: %s", listener, out))
}

func (o *observed) onRenewalFailed(grantor string, why fault.Code) {
	o.journal.Add("renewal failed", fmt.Sprintf("at %s: %s", grantor, why))
}

// onAnnouncement notes a lookup service heard announcing (not this one).
func (d *Daemon) onAnnouncement(a discovery.Announcement, p mcast.Packet) {
	if a.ServiceID == d.registrar.Meta().ServiceID {
		return
	}
	host := a.Host
	if host == "" {
		host = p.Src.Addr().String()
	}
	d.obs.heard.Note(p.At, a.ServiceID.String(), discovery.Locator{Host: p.Zoned(host), Port: a.Port}.Address(),
		a.Groups, a.Version, p.IfName)
}

// countsMetrics registers the gauges read at scrape time.
func (d *Daemon) countsMetrics() {
	m := d.obs.metrics
	m.GaugeFunc("jinid_registrations", "Registrations held, by service (lookup, lookup_notify, lds, renewal, mailbox).",
		[]string{"service"}, func(emit func(float64, ...string)) {
			for _, c := range d.counts() {
				if c.What == "registrations" {
					emit(float64(c.N), c.Service)
				}
			}
		})
	m.GaugeFunc("jinid_leases", "Leases granted and live, by kind.", []string{"kind"}, func(emit func(float64, ...string)) {
		n := d.obs.grantor.CountByKind()
		d.eachShard(func(sp shardParts) {
			for k, c := range sp.grantor.CountByKind() {
				n[k] += c
			}
		})
		for _, k := range slices.Sorted(maps.Keys(n)) {
			emit(float64(n[k]), k)
		}
	})
	m.GaugeFunc("jinid_renewal_client_leases", "Client leases the lease renewal service keeps renewing, in all its sets.", nil,
		func(emit func(float64, ...string)) {
			_, n := d.renewalCount()
			emit(float64(n))
		})
	m.GaugeFunc("jinid_mailbox_events_stored", "Events the event mailbox stores, not yet taken.", nil, func(emit func(float64, ...string)) {
		_, n := d.mailboxCount()
		emit(float64(n))
	})
	m.GaugeFunc("jinid_lookup_services_known", "Lookup services known, by source: held by the lookup discovery service (lds), or heard announcing (announcement).",
		[]string{"source"}, func(emit func(float64, ...string)) {
			emit(float64(len(d.obs.lds.Known())), "lds")
			emit(float64(len(d.obs.heard.List(time.Now()))), "announcement")
		})
	if d.cfg.Store == StoreEtcd {
		m.GaugeFunc("jinid_cluster_shards_held", "Shards of the cluster's work (renewal sets, mailboxes, transactions) this node holds and serves.", nil,
			func(emit func(float64, ...string)) { emit(float64(d.shardsHeld())) })
	}
	m.GaugeFunc("jinid_ready", "1 when the daemon is ready (GET /readyz answers 200), 0 when not.", nil, func(emit func(float64, ...string)) {
		v := 1.0
		for _, c := range d.readiness() {
			if !c.OK {
				v = 0
			}
		}
		emit(v)
	})
}

// renewalCount is the renewal sets and client leases this node keeps:
// the deployment's own service's and its shards'.
func (d *Daemon) renewalCount() (sets, leases int) {
	return d.withShards(d.obs.renewal.Count, func(sp shardParts) (int, int) { return sp.renewal.Count() })
}

// mailboxCount is the mailbox registrations and events this node
// keeps: the deployment's own mailbox's and its shards'.
func (d *Daemon) mailboxCount() (boxes, events int) {
	return d.withShards(d.obs.mailbox.Count, func(sp shardParts) (int, int) { return sp.mailbox.Count() })
}

// withShards adds the pair of counts each shard this node serves has to
// the deployment's own service's.
func (d *Daemon) withShards(own func() (int, int), shard func(shardParts) (int, int)) (a, b int) {
	a, b = own()
	d.eachShard(func(sp shardParts) {
		x, y := shard(sp)
		a, b = a+x, b+y
	})
	return a, b
}

// txnCounts are the transactions this node holds: the deployment's own
// manager's and its shards'.
func (d *Daemon) txnCounts() txn.Counts {
	var c txn.Counts
	add := func(o txn.Counts) {
		for i, n := range o.ByState {
			c.ByState[i] += n
		}
		c.RollingForward += o.RollingForward
	}
	if t := d.obs.txn; t != nil {
		add(t.Counts())
	}
	d.eachShard(func(sp shardParts) {
		if sp.txn != nil {
			add(sp.txn.Counts())
		}
	})
	return c
}

// shardParts are the services of a shard this node serves.
type shardParts struct {
	store   *store.Store
	grantor *lease.Grantor
	renewal *renewal.Service
	mailbox *mailbox.Service
	txn     *txn.Service // nil with NoTransactions
	notify  *lookup.Notifier
	lds     *lds.Service
}

// ldsCount is the lookup discovery service's registrations, its
// shards' too.
func (d *Daemon) ldsCount() int {
	n := d.obs.lds.Count()
	d.eachShard(func(sp shardParts) { n += sp.lds.Count() })
	return n
}

// leaseCount is the live leases this node granted, its shards' too.
func (d *Daemon) leaseCount() int {
	n := d.obs.grantor.Count()
	d.eachShard(func(sp shardParts) { n += sp.grantor.Count() })
	return n
}

// counts are the numbers of each service, for the page and the gauges.
func (d *Daemon) counts() []status.Count {
	items, notifies := d.registrar.Count()
	d.eachShard(func(sp shardParts) { notifies += sp.notify.Count() })
	sets, clientLeases := d.renewalCount()
	boxes, events := d.mailboxCount()
	counts := []status.Count{
		{Service: "lookup", What: "registrations", N: items},
		{Service: "lookup_notify", What: "registrations", N: notifies},
		{Service: "lds", What: "registrations", N: d.ldsCount()},
		{Service: "renewal", What: "registrations", N: sets},
		{Service: "renewal", What: "client leases", N: clientLeases},
		{Service: "mailbox", What: "registrations", N: boxes},
		{Service: "mailbox", What: "events stored", N: events},
		{Service: "leases", What: "live", N: d.leaseCount()},
	}
	if d.obs.txn != nil {
		c := d.txnCounts()
		open, rolling := c.ByState[txn.Active]+c.ByState[txn.Voting], c.RollingForward
		counts = append(counts, status.Count{Service: "transactions", What: "open", N: open},
			status.Count{Service: "transactions", What: "rolling forward", N: rolling})
	}
	return counts
}

// liveness: the process can serve. A store write that has run for a
// minute is a wedged daemon that a restart would mend.
func (d *Daemon) liveness() []api.Check {
	c := api.Check{Name: "store_writer", OK: true}
	if w := d.store.Writing(); w > time.Minute {
		c.OK, c.Detail = false, fmt.Sprintf("a write has been running for %s", w.Round(time.Second))
	}
	return []api.Check{{Name: "serving", OK: true}, c}
}

// readiness: the daemon can do its work.
func (d *Daemon) readiness() []api.Check {
	checks := make([]api.Check, 0, 3)
	// Not the store's path: anyone who may read sees these (the status
	// page shows it to administrators).
	st := api.Check{Name: "store", OK: true, Detail: "takes writes"}
	if ok, why := d.store.Health(); !ok {
		st.OK, st.Detail = false, why
	} else if err := d.store.Reachable(context.Background()); err != nil {
		st.OK, st.Detail = false, err.Error()
	}
	svc := api.Check{Name: "services", OK: d.running.Load()}
	if !svc.OK {
		svc.Detail = "starting or stopping"
	}
	checks = append(checks, st, svc)
	mc := api.Check{Name: "multicast", OK: true, Detail: d.multicastState()}
	if p := d.mcPort.Load(); p != nil && len(p.Joined()) == 0 {
		mc.OK = false
		mc.Detail = "no eligible interface (the log's interface lines say why each is not served; see --interfaces)"
	}
	return append(checks, mc)
}

// storePlace is where the store is, as the status page shows it to an
// administrator: the data directory, or etcd's endpoints and prefix and
// this node's name there.
func (d *Daemon) storePlace() string {
	if node := d.store.Node(); node != "" {
		trust := "nodes by pinned certificates"
		if d.cfg.ClusterCA != "" {
			trust = "nodes by the site CA"
		}
		if store.InsecureEndpoint(d.cfg.Etcd.Endpoints, d.cfg.Etcd.CertFile) != "" {
			trust = "etcd INSECURE (--etcd-insecure), " + trust
		}
		return fmt.Sprintf("%s (node %s, holding the store and %d of the cluster's shards; %s)", d.store.Path(), node, d.shardsHeld(), trust)
	}
	return d.cfg.DataDir
}

// statusPage gathers the status page; after is the cursor of its page
// of registered services.
func (d *Daemon) statusPage(after string) status.Page {
	now := time.Now()
	m := d.registrar.Meta()
	p := status.Page{Now: now, Version: d.cfg.Version, Refresh: statusRefresh, Multicast: d.multicastState(),
		Identity: status.Identity{ServiceID: m.ServiceID.String(), Groups: m.Groups, API: d.apiURL(netip.Addr{}),
			Unicast: d.unicast.Addr().String(), DataDir: d.storePlace(), Started: d.obs.started},
		Counts: d.counts(), Events: d.obs.journal.List(), Ready: true}
	for _, c := range d.readiness() {
		p.Checks = append(p.Checks, status.Check{Name: c.Name, OK: c.OK, Detail: c.Detail})
		p.Ready = p.Ready && c.OK
	}
	if d.host != nil {
		ds, err := d.host.Decisions()
		if err != nil {
			p.Interfaces = append(p.Interfaces, status.Interface{Name: "?", State: err.Error()})
		}
		for _, dc := range ds {
			ifc := status.Interface{Name: dc.Interface.Name, Served: len(dc.Families) > 0, State: dc.Reason}
			for _, a := range dc.Interface.Addrs {
				ifc.Addresses = append(ifc.Addresses, a.String())
			}
			p.Interfaces = append(p.Interfaces, ifc)
		}
	}
	p.LookupServices = d.lookupServices(now)
	p.Registered, p.RegisteredTotal, p.RegisteredNext = d.registered(after)
	return p
}

// statusPageSize is how many registered services a page of the status
// page lists.
const statusPageSize = 100

// registered is a page of the services registered here, after the
// cursor after, for the status page.
func (d *Daemon) registered(after string) ([]status.Registered, int, string) {
	items, total, next, err := d.registrar.Page(lookup.Template{}, after, statusPageSize)
	if err != nil {
		return nil, 0, ""
	}
	out := make([]status.Registered, 0, len(items))
	for _, it := range items {
		r := status.Registered{ServiceID: it.ServiceID, Types: it.Types, Endpoint: it.Endpoint}
		for _, a := range it.Attributes {
			if n, ok := a.Fields["name"].(string); ok && a.Type == "net.jini.lookup.entry.Name" {
				r.Name = n
			}
		}
		if rec, err := d.registrar.Lease(it.ServiceID); err == nil {
			r.Owner = rec.Owner
			if rec.Expiration != lease.Never {
				r.Expires = time.UnixMilli(rec.Expiration)
			}
		}
		out = append(out, r)
	}
	return out, total, next
}

// lookupServices merges what the lookup discovery service holds with
// what was heard announcing, one row per ServiceID.
func (d *Daemon) lookupServices(now time.Time) []status.LookupService {
	byID := map[string]*status.LookupService{}
	for _, h := range d.obs.heard.List(now) {
		h.Kind = "announcing"
		byID[h.ServiceID] = &h
	}
	for _, k := range d.obs.lds.Known() {
		id := k.ID.String()
		var how []string
		if k.ByGroup {
			g := "group"
			if k.Interface != "" {
				g += " (" + k.Interface + ")"
			}
			how = append(how, g)
		}
		for _, l := range k.Locators {
			how = append(how, "locator "+l)
		}
		kind := "java"
		if k.Registrar.Descriptor != nil {
			kind = "jinid"
		}
		ls := byID[id]
		if ls == nil {
			ls = &status.LookupService{ServiceID: id, Since: k.Since}
			byID[id] = ls
		} else {
			how = append(how, ls.How)
			ls.Since = minTime(ls.Since, k.Since)
		}
		ls.Address, ls.Groups, ls.Kind, ls.How = k.Address(), k.Groups, kind, strings.Join(how, "; ")
		if !slices.Contains(ls.Versions, k.Version) && k.Version != 0 {
			ls.Versions = append(ls.Versions, k.Version)
			slices.Sort(ls.Versions)
		}
	}
	out := make([]status.LookupService, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, *byID[id])
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

package lookup

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// Sender delivers events; *event.Dispatcher is one.
type Sender interface {
	Send(event.Delivery)
}

// Lease kinds and store buckets.
const (
	ItemLease = "lookup.item"
	// StaticLease is the kind of a static service's registration: as
	// long as the daemon's configuration names it (RegisterStatic).
	StaticLease = "lookup.static"
	NotifyLease = "lookup.notify"

	itemsBucket  = "lookup.items"
	notifyBucket = "lookup.notify"
	metaBucket   = "lookup.meta"
)

// Transitions, by their names in the API.
const (
	MatchNoMatch = apitypes.MatchNoMatch
	NoMatchMatch = apitypes.NoMatchMatch
	MatchMatch   = apitypes.MatchMatch
)

// Default lease policies, in milliseconds: the Java registrar's five
// minutes for service leases, half an hour for event leases.
var (
	DefaultItemPolicy   = lease.Policy{Default: 5 * 60_000, Max: 60 * 60_000}
	DefaultNotifyPolicy = lease.Policy{Default: 30 * 60_000, Max: 60 * 60_000}
)

// storedItem is a registration: the item and its lease. (On disk it is
// an itemRecord: see records.go.)
type storedItem struct {
	Item  Item
	Lease string
	// Owner is who registered it (access.Principal.Owner): only they, or
	// an administrator, may replace it or change its attributes. "" is
	// anyone (an item registered before owners were kept).
	Owner string
	size  int // its record's bytes, for the limits
}

// recordSize is the bytes an item's record takes.
func recordSize(si *storedItem) int {
	raw, _ := json.Marshal(recordOf(si))
	return len(raw)
}

// checkSize bounds an item, noting its size, and the bytes of all items
// and of its owner's, were it to replace old (nil: none). Items are held
// in memory: these bound what the lookup service's clients can make it
// hold, whatever the counts.
func (r *Registrar) checkSize(tx *store.Tx, si, old *storedItem) error {
	si.size = recordSize(si)
	if max := cmp.Or(r.cfg.MaxItemBytes, DefaultMaxItemBytes); si.size > max {
		return fault.Limit(apitypes.TooLarge, "itemBytes", 0, "the item takes %d bytes, more than %d", si.size, max)
	}
	grow, ownerGrow := si.size, si.size
	if old != nil {
		grow -= old.size
		if old.Owner == si.Owner {
			ownerGrow -= old.size
		}
	}
	// What changes of the same commit add is not in memory yet.
	pending := int(tx.Pending("items", int64(grow)))
	var ownerPending int
	if si.Owner != "" {
		ownerPending = int(tx.Pending("items/"+si.Owner, int64(ownerGrow)))
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if held, max := r.bytes+pending, cmp.Or(r.cfg.ItemsBytes, DefaultItemsBytes); grow > 0 && held+grow > max {
		return fault.Limit(apitypes.TooMany, "itemsBytes", quotaRetry, "the lookup service holds %d bytes of items, and takes %d at most", held, max)
	}
	if held, max := r.ownerBytes[si.Owner]+ownerPending, cmp.Or(r.cfg.ItemsBytesPerOwner, DefaultItemsBytesPerOwner); si.Owner != "" && ownerGrow > 0 && held+ownerGrow > max {
		return fault.Limit(apitypes.TooMany, "itemsBytesPerClient", quotaRetry, "this client's items take %d bytes, and may take %d at most", held, max)
	}
	return nil
}

// quotaRetry is when to try again after a quota refusal (seconds): items
// go when their leases end, minutes at most by default.
const quotaRetry = 60

// putLocked makes si the item of id (nil: none), keeping the byte counts.
func (r *Registrar) putLocked(id string, si *storedItem) {
	if old := r.items[id]; old != nil {
		r.bytes -= old.size
		if old.Owner != "" {
			if r.ownerBytes[old.Owner] -= old.size; r.ownerBytes[old.Owner] <= 0 {
				delete(r.ownerBytes, old.Owner)
			}
		}
		delete(r.items, id)
		r.index.remove(old)
	}
	if si == nil {
		return
	}
	r.items[id] = si
	r.index.add(si)
	r.bytes += si.size
	if si.Owner != "" {
		r.ownerBytes[si.Owner] += si.size
	}
}

// storedNotify is a notify registration (on disk a notifyRecord).
type storedNotify struct {
	ID          string
	EventID     int64
	Seq         int64
	Template    Template
	Transitions []string
	Listener    string
	Handback    []byte
	Lease       string
	HostLocal   bool
	// From, for a notifier's registration, is the revision of the
	// registry it was made at: the changes after it are its events.
	From int64
}

// Meta is the lookup service's own state.
type Meta struct {
	ServiceID   discovery.ServiceID `json:"serviceID"`
	Groups      []string            `json:"groups"`
	Locators    []string            `json:"locators"`
	NextEventID int64               `json:"nextEventID"`
}

// Config gives the registrar its dependencies.
type Config struct {
	Store   *store.Store
	Grantor *lease.Grantor
	// Outbound is where requests made on clients' behalf may go: each URL
	// handed in is checked against it. Nil means its fixed rules alone.
	Outbound     *outbound.Policy
	Dispatcher   Sender
	Logger       *slog.Logger
	ItemPolicy   lease.Policy
	NotifyPolicy lease.Policy
	// OnMetaChange, if set, hears that groups or locators changed (the
	// lookup service announces at once then).
	OnMetaChange func()
	// UnicastPort tells where the lookup service answers unicast
	// discovery (its locator); nil means 4160.
	UnicastPort func() int
	// MaxItemBytes bounds an item as stored (its JSON), ItemsBytes all
	// of them and ItemsBytesPerOwner one client's; PageSize and MaxPage
	// are a listing's page by default and at most, and PageBytes bounds a
	// page's items' bytes (a page stops before it). 0 means the defaults.
	MaxItemBytes, ItemsBytes, ItemsBytesPerOwner int
	PageSize, MaxPage, PageBytes                 int
	// Listings bounds the pages (listings and queries) built and sent at
	// once: each holds up to PageBytes, twice over while it is encoded.
	Listings int
}

// Defaults of the registrar's limits.
const (
	DefaultListings           = 4
	DefaultMaxItemBytes       = 64 << 10
	DefaultItemsBytes         = 16 << 20
	DefaultItemsBytesPerOwner = 4 << 20
	DefaultPageSize           = 100
	DefaultMaxPage            = 1000
	DefaultPageBytes          = 1 << 20
)

// Registrar is the lookup service's state and operations.
type Registrar struct {
	cfg Config
	log *slog.Logger

	mu       sync.RWMutex
	items    map[string]*storedItem
	index    index // of items: what a template may match
	notifies map[string]*storedNotify
	meta     Meta
	// bytes is the items' sizes in all, ownerBytes by owner.
	bytes      int
	ownerBytes map[string]int
	// listings holds a token per page being built or sent.
	listings chan struct{}
	// book tells the leases' ends: the grantor's, or a follower's copy.
	book leaseBook
	// follower is the copy's leases, for a registrar that follows
	// another's state (NewFollower); nil for one that keeps its own.
	follower *followedLeases
}

// New loads the registrar from the store and registers its lease kinds.
// Call the grantor's Load afterwards.
func New(cfg Config) (*Registrar, error) {
	if cfg.ItemPolicy == (lease.Policy{}) {
		cfg.ItemPolicy = DefaultItemPolicy
	}
	if cfg.NotifyPolicy == (lease.Policy{}) {
		cfg.NotifyPolicy = DefaultNotifyPolicy
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Registrar{cfg: cfg, log: cfg.Logger, items: map[string]*storedItem{}, index: index{}, notifies: map[string]*storedNotify{},
		ownerBytes: map[string]int{}, listings: make(chan struct{}, cmp.Or(cfg.Listings, DefaultListings)), book: cfg.Grantor}
	if err := r.load(); err != nil {
		return nil, err
	}
	cfg.Grantor.Register(ItemLease, cfg.ItemPolicy, r.releaseItem)
	cfg.Grantor.Register(StaticLease, lease.Policy{Default: lease.Forever, Max: lease.Forever}, r.releaseItem)
	cfg.Grantor.Register(NotifyLease, cfg.NotifyPolicy, r.releaseNotify)
	cfg.Grantor.Share(ItemLease)
	return r, nil
}

func (r *Registrar) load() error {
	err := r.cfg.Store.View(func(tx *store.Tx) error {
		if err := tx.ForEach(itemsBucket, func(k string, raw []byte) error {
			var rec itemRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("item %s: %w", k, err)
			}
			si := rec.stored()
			si.size = recordSize(&si)
			r.putLocked(k, &si) // before anyone else has r
			return nil
		}); err != nil {
			return err
		}
		if err := loadNotifies(tx, r.notifies); err != nil {
			return err
		}
		_, err := tx.Get(metaBucket, "meta", &r.meta)
		return err
	})
	if err != nil {
		return fmt.Errorf("loading the lookup service: %w", err)
	}
	if r.meta.ServiceID.IsZero() {
		// First start: the lookup service's own identity, kept forever.
		id, err := discovery.RandomServiceID(rand.Reader)
		if err != nil {
			return err
		}
		r.meta = Meta{ServiceID: id, Groups: []string{""}, Locators: []string{}, NextEventID: 1}
		if err := r.cfg.Store.Update(func(tx *store.Tx) error { return tx.Put(metaBucket, "meta", r.meta) }); err != nil {
			return fmt.Errorf("storing the lookup service's identity: %w", err)
		}
	}
	return nil
}

// loadNotifies reads the notify registrations a store holds into m.
func loadNotifies(tx *store.Tx, m map[string]*storedNotify) error {
	return tx.ForEach(notifyBucket, func(k string, raw []byte) error {
		var rec notifyRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("notify registration %s: %w", k, err)
		}
		n := rec.stored()
		m[k] = &n
		return nil
	})
}

// ReadMeta reads the lookup service's identity and groups as a store
// holds them, for a process that does not run the registrar (a node of
// a cluster waiting to take over, which announces it on its segments);
// false if there is none yet.
func ReadMeta(st *store.Store) (Meta, bool, error) {
	var m Meta
	var ok bool
	err := st.View(func(tx *store.Tx) error {
		var err error
		ok, err = tx.Get(metaBucket, "meta", &m)
		return err
	})
	return m, ok, err
}

// Meta returns the lookup service's identity, groups and locators.
func (r *Registrar) Meta() Meta {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.meta
	m.Groups = slices.Clone(m.Groups)
	m.Locators = slices.Clone(m.Locators)
	return m
}

// SetGroups replaces the member groups.
func (r *Registrar) SetGroups(groups []string) error {
	if groups == nil {
		return fault.New(apitypes.NullArgument, "groups is required (an empty list means no groups)")
	}
	for i, g := range groups {
		if err := discovery.CheckGroup(g); err != nil {
			return fault.New(apitypes.InvalidArgument, "group %d: %v", i, err) // it could be announced in no packet
		}
	}
	return r.setMeta(func(m *Meta) { m.Groups = slices.Compact(slices.Sorted(slices.Values(groups))) })
}

// SetLocators replaces the locators the lookup service joins.
func (r *Registrar) SetLocators(locs []string) error {
	if locs == nil {
		return fault.New(apitypes.NullArgument, "locators is required (an empty list means none)")
	}
	for _, l := range locs {
		if _, err := discovery.ParseLocator(l); err != nil {
			return fault.New(apitypes.InvalidArgument, "%v", err)
		}
	}
	return r.setMeta(func(m *Meta) { m.Locators = slices.Clone(locs) })
}

func (r *Registrar) setMeta(change func(*Meta)) error {
	return r.cfg.Store.Update(func(tx *store.Tx) error {
		m := r.Meta()
		change(&m)
		if err := tx.Put(metaBucket, "meta", m); err != nil {
			return err
		}
		tx.OnCommit(func() {
			r.mu.Lock()
			r.meta = m
			r.mu.Unlock()
			if r.cfg.OnMetaChange != nil {
				r.cfg.OnMetaChange()
			}
		})
		return nil
	})
}

// Registration is what Register returns.
type Registration struct {
	ServiceID string
	Lease     lease.Record
}

// Register registers an item for a leased time: a new ServiceID if it has
// none, and a registration of an existing ServiceID replaces that item.
func (r *Registrar) Register(it Item, duration int64, by string) (Registration, error) {
	return r.register(it, ItemLease, duration, by)
}

// StaticOwner owns the static services: no client may change them, an
// administrator may (as any registration).
const StaticOwner = "jinid:static"

// RegisterStatic registers a static service of the daemon's
// configuration: for as long as the configuration names it, beyond the
// client lease policy (a lease of kind StaticLease, FOREVER), owned by
// StaticOwner. It replaces a registration of the same ServiceID.
func (r *Registrar) RegisterStatic(it Item) (Registration, error) {
	return r.register(it, StaticLease, lease.Forever, StaticOwner)
}

// Static are the ServiceIDs of the static services registered.
func (r *Registrar) Static() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for id, si := range r.items {
		if si.Owner == StaticOwner {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ServiceOwner owns the items of jinid's own services (its helper
// services as Java programs find them), registered by the daemon.
const ServiceOwner = "jinid:service"

// RegisterService registers one of jinid's own services: as a static
// service (FOREVER, beyond the lease policy), owned by ServiceOwner.
func (r *Registrar) RegisterService(it Item) (Registration, error) {
	return r.register(it, StaticLease, lease.Forever, ServiceOwner)
}

// Services are the ServiceIDs of jinid's own services registered.
func (r *Registrar) Services() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for id, si := range r.items {
		if si.Owner == ServiceOwner {
			out = append(out, id)
		}
	}
	return out
}

func (r *Registrar) register(it Item, kind string, duration int64, by string) (Registration, error) {
	if it.ServiceID == "" {
		id, err := discovery.RandomServiceID(rand.Reader)
		if err != nil {
			return Registration{}, err
		}
		it.ServiceID = id.String()
	} else if id, err := discovery.ParseServiceID(it.ServiceID); err != nil {
		return Registration{}, fault.New(apitypes.InvalidArgument, "%v", err)
	} else {
		it.ServiceID = id.String()
	}
	if err := validateItem(&it); err != nil {
		return Registration{}, err
	}
	var reg Registration
	// Registrations made at the same time share a commit: each claims its
	// ServiceID and the notify registrations it advances, and counts the
	// others' bytes and leases (see store.Shared).
	err := r.cfg.Store.Shared(func(tx *store.Tx) error {
		if err := tx.Claim("item/" + it.ServiceID); err != nil {
			return err
		}
		r.mu.RLock()
		old := r.items[it.ServiceID]
		r.mu.RUnlock()
		var before *Item
		if old != nil {
			// The daemon's configuration (a static service) acts as its
			// administrator does.
			if err := mayChange(old, by); err != nil && kind != StaticLease {
				return err
			}
			before = &old.Item
		}
		send, err := r.transitions(tx, before, &it)
		if err != nil {
			return err
		}
		if old != nil {
			if err := r.cfg.Grantor.Drop(tx, old.Lease); err != nil {
				return err
			}
		}
		rec, err := r.cfg.Grantor.Grant(tx, kind, it.ServiceID, by, duration)
		if err != nil {
			return err
		}
		si := &storedItem{Item: it, Lease: rec.ID, Owner: by}
		if err := r.checkSize(tx, si, old); err != nil {
			return err
		}
		if err := tx.Put(itemsBucket, it.ServiceID, recordOf(si)); err != nil {
			return err
		}
		tx.OnCommit(func() {
			r.mu.Lock()
			r.putLocked(it.ServiceID, si)
			r.mu.Unlock()
			send()
		})
		reg = Registration{ServiceID: it.ServiceID, Lease: rec}
		return nil
	})
	return reg, err
}

// mayChange says whether by may replace or change a registered item: its
// owner may, and so may an administrator (by ""), and anyone an item with
// no owner.
func mayChange(si *storedItem, by string) error {
	if by == "" || si.Owner == "" || si.Owner == by {
		return nil
	}
	return fault.New(apitypes.Forbidden, "service %s was registered by another client: only it (or an administrator) may change it", si.Item.ServiceID)
}

func validateItem(it *Item) error {
	if len(it.Types) == 0 && len(it.Attributes) == 0 {
		// A Java item always has its class; one with neither a type nor
		// an attribute is matched only by its ServiceID: a mistake.
		return fault.New(apitypes.InvalidArgument, "an item needs a type or an attribute: nothing else finds it")
	}
	if err := validateTypes("type", it.Types); err != nil {
		return err
	}
	if err := validateAttrs("attribute", it.Attributes); err != nil {
		return err
	}
	it.Attributes = dedupe(it.Attributes)
	if it.Types == nil {
		it.Types = []string{}
	}
	if it.Attributes == nil {
		it.Attributes = []Attribute{}
	}
	return nil
}

// AttributeChange is one of the three ways to change a registration's
// attributes.
type AttributeChange struct {
	Add    []Attribute
	Modify *AttributeModify
	Set    []Attribute
}

// AttributeModify changes the attributes each template matches: a nil
// change deletes them, and the non-null fields of a change replace theirs.
type AttributeModify struct {
	Templates []Attribute
	Changes   []*Attribute
}

// ChangeAttributes adds, modifies or sets the attributes of a live
// registration.
func (r *Registrar) ChangeAttributes(serviceID string, c AttributeChange, by string) error {
	n := 0
	for _, set := range []bool{c.Add != nil, c.Modify != nil, c.Set != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fault.New(apitypes.InvalidArgument, "give exactly one of add, modify and set")
	}
	return r.cfg.Store.Shared(func(tx *store.Tx) error {
		if err := tx.Claim("item/" + serviceID); err != nil {
			return err
		}
		r.mu.RLock()
		old := r.items[serviceID]
		r.mu.RUnlock()
		if old == nil {
			return fault.New(apitypes.UnknownLease, "no live registration of service %q", serviceID)
		}
		if err := mayChange(old, by); err != nil {
			return err
		}
		if _, err := r.cfg.Grantor.Get(old.Lease); err != nil {
			return err
		}
		it := old.Item
		var err error
		switch {
		case c.Add != nil:
			if err = validateAttrs("attribute", c.Add); err == nil {
				it.Attributes = dedupe(append(slices.Clone(it.Attributes), c.Add...))
			}
		case c.Set != nil:
			if err = validateAttrs("attribute", c.Set); err == nil {
				it.Attributes = dedupe(c.Set)
			}
		default:
			if err = validateAttrs("template", c.Modify.Templates); err == nil {
				it.Attributes, err = modify(it.Attributes, c.Modify.Templates, c.Modify.Changes)
			}
		}
		if err != nil {
			return err
		}
		if it.Attributes == nil {
			it.Attributes = []Attribute{}
		}
		send, err := r.transitions(tx, &old.Item, &it)
		if err != nil {
			return err
		}
		si := &storedItem{Item: it, Lease: old.Lease, Owner: old.Owner}
		if err := r.checkSize(tx, si, old); err != nil {
			return err
		}
		if err := tx.Put(itemsBucket, serviceID, recordOf(si)); err != nil {
			return err
		}
		tx.OnCommit(func() {
			r.mu.Lock()
			r.putLocked(serviceID, si)
			r.mu.Unlock()
			send()
		})
		return nil
	})
}

// releaseItem ends a registration whose lease ended.
func (r *Registrar) releaseItem(tx *store.Tx, serviceID string) error {
	if err := tx.Claim("item/" + serviceID); err != nil {
		return err
	}
	r.mu.RLock()
	old := r.items[serviceID]
	r.mu.RUnlock()
	if old == nil {
		return nil
	}
	if err := tx.Delete(itemsBucket, serviceID); err != nil {
		return err
	}
	send, err := r.transitions(tx, &old.Item, nil)
	if err != nil {
		return err
	}
	tx.OnCommit(func() {
		r.mu.Lock()
		if r.items[serviceID] == old {
			r.putLocked(serviceID, nil)
		}
		r.mu.Unlock()
		send()
	})
	return nil
}

// transitions computes the events a change of one item causes, stores
// the notify registrations' new sequence numbers in tx, and returns what
// sends them once tx is on disk.
func (r *Registrar) transitions(tx *store.Tx, before, after *Item) (func(), error) {
	r.mu.RLock()
	ns := make([]storedNotify, 0, len(r.notifies))
	for _, n := range r.notifies {
		ns = append(ns, *n)
	}
	r.mu.RUnlock()
	updated, events := eventsFor(ns, before, after)
	for i := range updated {
		// Its sequence number is read from memory.
		if err := tx.Claim("notify/" + updated[i].ID); err != nil {
			return nil, err
		}
	}
	for i := range updated {
		if err := tx.Put(notifyBucket, updated[i].ID, notifyRecordOf(&updated[i])); err != nil {
			return nil, err
		}
	}
	return func() {
		r.mu.Lock()
		for i := range updated {
			if cur, ok := r.notifies[updated[i].ID]; ok {
				cur.Seq = updated[i].Seq
			}
		}
		r.mu.Unlock()
		for i, ev := range events {
			deliver(r.cfg.Dispatcher, r.cfg.Grantor, r.log, updated[i], ev, nativeOf(ev, after))
		}
	}, nil
}

// eventsFor are the events a change of one item (before and after; nil
// for none) causes to the notify registrations ns: the registrations
// with their sequence numbers advanced, and their events, in the order
// of their event IDs.
func eventsFor(ns []storedNotify, before, after *Item) ([]storedNotify, []apitypes.ServiceEvent) {
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(ns, func(i, j int) bool { return ns[i].EventID < ns[j].EventID })
	var updated []storedNotify
	var events []apitypes.ServiceEvent
	for _, n := range ns {
		pre, post := n.Template.Matches(before), n.Template.Matches(after)
		var tr string
		switch {
		case pre && post:
			tr = MatchMatch
		case pre:
			tr = MatchNoMatch
		case post:
			tr = NoMatchMatch
		default:
			continue
		}
		if !slices.Contains(n.Transitions, tr) {
			continue
		}
		n.Seq++
		id := ""
		if after != nil {
			id = after.ServiceID
		} else {
			id = before.ServiceID
		}
		var item *apitypes.Item
		if post {
			it := APIItem(*after)
			item = &it
		}
		updated = append(updated, n)
		events = append(events, apitypes.ServiceEvent{
			RemoteEvent: apitypes.RemoteEvent{Source: apitypes.EventSource{Service: "lookup", ID: n.ID}, EventID: n.EventID,
				SeqNum: n.Seq, Handback: n.Handback, Type: apitypes.ServiceEventType},
			ServiceID: id, Transition: tr, Item: item,
		})
	}
	return updated, events
}

// nativeOf is the item an event carries for listeners that are not
// HTTP: the item after the change, if the event has one.
func nativeOf(ev apitypes.ServiceEvent, after *Item) *Item {
	if ev.Item == nil {
		return nil
	}
	return after
}

// NativeEvent is what a lookup service event carries for listeners that
// are not HTTP (Java's): the item as registered, its Java form included,
// and the handback as given.
type NativeEvent struct {
	Item     *Item
	Handback []byte
}

// deliver sends one event of registration n through d; a listener that
// answers UnknownEvent or fails definitely has its registration
// cancelled (its lease, g's), as the event specification allows.
func deliver(d Sender, g *lease.Grantor, log *slog.Logger, n storedNotify, ev apitypes.ServiceEvent, item *Item) {
	d.Send(event.Delivery{Listener: n.Listener, Event: ev, Deadline: g.EndOf(n.Lease),
		Native: NativeEvent{Item: item, Handback: n.Handback}, HostLocal: n.HostLocal,
		Done: func(o event.Outcome, err error) {
			if o == event.UnknownEvent || o == event.Definite {
				log.Info("cancelling a notify registration its listener refused", "registration", n.ID, "outcome", o, "err", err)
				if err := g.Cancel(n.Lease); err != nil && !fault.Is(err, apitypes.UnknownLease) {
					log.Warn("cancelling a notify registration", "registration", n.ID, "err", err)
				}
			}
		}})
}

// NotifyRequest registers interest in transitions.
type NotifyRequest struct {
	Template    Template
	Transitions []string
	Listener    string
	Handback    []byte
	Duration    int64
	// Owner is who asks (for the quotas).
	Owner string
	// HostLocal: the host's administrator asks, who may name a listener
	// on this host (outbound.WithHostLocal).
	HostLocal bool
}

// NotifyRegistration is what Notify returns.
type NotifyRegistration struct {
	ID      string
	EventID int64
	SeqNum  int64
	Lease   lease.Record
}

// Notify registers a listener for the transitions of items matching a
// template.
func (r *Registrar) Notify(req NotifyRequest) (NotifyRegistration, error) {
	if err := checkNotify(req, r.cfg.Outbound); err != nil {
		return NotifyRegistration{}, err
	}
	var out NotifyRegistration
	err := r.cfg.Store.Shared(func(tx *store.Tx) error {
		// The next event ID is read from memory.
		if err := tx.Claim("meta"); err != nil {
			return err
		}
		m := r.Meta()
		n, rec, err := grantNotify(tx, r.cfg.Grantor, req, ids.New(), m.NextEventID)
		if err != nil {
			return err
		}
		m.NextEventID++
		if err := tx.Put(metaBucket, "meta", m); err != nil {
			return err
		}
		tx.OnCommit(func() {
			r.mu.Lock()
			r.notifies[n.ID] = n
			r.meta.NextEventID = m.NextEventID
			r.mu.Unlock()
		})
		out = NotifyRegistration{ID: n.ID, EventID: n.EventID, SeqNum: n.Seq, Lease: rec}
		return nil
	})
	return out, err
}

// grantNotify makes the registration req asks for, named id, with
// eventID, in tx: its lease granted by g, its record stored.
func grantNotify(tx *store.Tx, g *lease.Grantor, req NotifyRequest, id string, eventID int64) (*storedNotify, lease.Record, error) {
	n := &storedNotify{ID: id, EventID: eventID, Template: req.Template,
		Transitions: slices.Compact(slices.Sorted(slices.Values(req.Transitions))), Listener: req.Listener, Handback: req.Handback,
		HostLocal: req.HostLocal}
	rec, err := g.Grant(tx, NotifyLease, n.ID, req.Owner, req.Duration)
	if err != nil {
		return nil, rec, err
	}
	n.Lease = rec.ID
	return n, rec, tx.Put(notifyBucket, n.ID, notifyRecordOf(n))
}

// checkNotify checks a notify request: its transitions, its listener
// (against the outbound policy) and its template.
func checkNotify(req NotifyRequest, policy *outbound.Policy) error {
	if len(req.Transitions) == 0 {
		return fault.New(apitypes.InvalidArgument, "transitions: give at least one of %s, %s, %s", MatchNoMatch, NoMatchMatch, MatchMatch)
	}
	for _, t := range req.Transitions {
		if t != MatchNoMatch && t != NoMatchMatch && t != MatchMatch {
			return fault.New(apitypes.InvalidArgument, "transition %q: want %s, %s or %s", t, MatchNoMatch, NoMatchMatch, MatchMatch)
		}
	}
	if req.Listener == "" {
		return fault.New(apitypes.NullArgument, "listener is required")
	}
	if err := policy.CheckListener(outbound.HostLocalIf(context.Background(), req.HostLocal), "listener", req.Listener); err != nil {
		return err
	}
	return validateAttrs("template attribute", req.Template.Attributes)
}

func (r *Registrar) releaseNotify(tx *store.Tx, id string) error {
	if err := tx.Delete(notifyBucket, id); err != nil {
		return err
	}
	tx.OnCommit(func() {
		r.mu.Lock()
		delete(r.notifies, id)
		r.mu.Unlock()
	})
	return nil
}

// Query returns up to maxMatches items matching the template, ordered by
// ServiceID, and how many match in all. At most a page of items comes
// back (MaxPage of them, PageBytes of them): totalMatches tells a client
// that there are more.
func (r *Registrar) Query(t Template, maxMatches int) ([]Item, int, error) {
	items, total, _, err := r.Page(t, "", maxMatches)
	return items, total, err
}

// Page returns the items matching t after the ServiceID after (""
// from the first), in ServiceID order: up to limit of them (capped at
// MaxPage) and no more than PageBytes of them; how many match in all;
// and the cursor of the next page ("" when none is left).
func (r *Registrar) Page(t Template, after string, limit int) ([]Item, int, string, error) {
	p, err := r.page(t, after, limit)
	return p.items, p.total, p.next, err
}

// aPage is a page of items: how many match in all, the next page's
// cursor, and the bytes of its items as stored.
type aPage struct {
	items []Item
	// leases are the items' registration leases, in their order: the
	// HTTP answer says when each ends (Items.Expirations).
	leases []string
	total  int
	next   string
	bytes  int
	// hint, for a query that matched nothing, says why if the registry
	// can tell.
	hint string
}

func (r *Registrar) page(t Template, after string, limit int) (aPage, error) {
	if limit < 0 {
		return aPage{}, fault.New(apitypes.InvalidArgument, "maxMatches %d is negative", limit)
	}
	if err := validateAttrs("template attribute", t.Attributes); err != nil {
		return aPage{}, err
	}
	limit = min(limit, cmp.Or(r.cfg.MaxPage, DefaultMaxPage))
	budget := cmp.Or(r.cfg.PageBytes, DefaultPageBytes)
	r.mu.RLock()
	var matched []*storedItem
	// By ServiceID (what Java lookups by ID ask) the index is not asked.
	if t.ServiceID != "" {
		if si := r.items[t.ServiceID]; si != nil && t.Matches(&si.Item) {
			matched = append(matched, si)
		}
	} else if candidates, all := r.index.candidates(&t); all {
		for _, si := range r.items {
			if t.Matches(&si.Item) {
				matched = append(matched, si)
			}
		}
	} else if candidates != nil {
		if si := candidates.one; si != nil && t.Matches(&si.Item) {
			matched = append(matched, si)
		}
		for si := range candidates.many {
			if t.Matches(&si.Item) {
				matched = append(matched, si)
			}
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(matched, func(a, b *storedItem) int { return cmp.Compare(a.Item.ServiceID, b.Item.ServiceID) })
	rest := matched
	if after != "" {
		i, _ := slices.BinarySearchFunc(matched, after, func(si *storedItem, id string) int { return cmp.Compare(si.Item.ServiceID, id) })
		for i < len(matched) && matched[i].Item.ServiceID <= after {
			i++
		}
		rest = matched[i:]
	}
	var out []Item
	var leases []string
	size := 0
	for _, si := range rest {
		if len(out) == limit || len(out) > 0 && size+si.size > budget {
			break
		}
		size += si.size
		out = append(out, si.Item)
		leases = append(leases, si.Lease)
	}
	next := ""
	if len(out) < len(rest) && len(out) > 0 {
		next = out[len(out)-1].ServiceID
	}
	if out == nil {
		out = []Item{}
	}
	return aPage{items: out, leases: leases, total: len(matched), next: next, bytes: size}, nil
}

// Lease returns the lease of a live registration of serviceID.
func (r *Registrar) Lease(serviceID string) (lease.Record, error) {
	r.mu.RLock()
	si := r.items[serviceID]
	r.mu.RUnlock()
	if si == nil {
		return lease.Record{}, fault.New(apitypes.UnknownLease, "no live registration of service %q", serviceID)
	}
	return r.book.Get(si.Lease)
}

// NotifyLease returns the lease of the live notify registration with
// eventID (as Java clients name theirs).
func (r *Registrar) NotifyLease(eventID int64) (lease.Record, error) {
	r.mu.RLock()
	var leaseID string
	for _, n := range r.notifies {
		if n.EventID == eventID {
			leaseID = n.Lease
			break
		}
	}
	r.mu.RUnlock()
	if leaseID == "" {
		return lease.Record{}, fault.New(apitypes.UnknownLease, "No event registration recorded for ID: %d", eventID)
	}
	return r.cfg.Grantor.Get(leaseID)
}

// Count reports how many services and notify registrations there are.
func (r *Registrar) Count() (items, notifies int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.items), len(r.notifies)
}

package lookup

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// leaseBook tells when leases end: the grantor, or a follower's copy of
// its records.
type leaseBook interface {
	Get(id string) (lease.Record, error)
	Now() time.Time
}

// FollowedBuckets are the store buckets a follower's copy is made of
// (Follow): the items, the lookup service's own state, and the leases.
func FollowedBuckets() []string { return []string{itemsBucket, metaBucket, lease.Bucket} }

// NewFollower returns a registrar that keeps no state of its own: it
// answers reads from a copy of the one that does, fed by Follow with the
// changes of FollowedBuckets (a node of a cluster that does not hold the
// store). It serves the read routes alone, and sends no events; only
// cfg's logger and limits are used.
func NewFollower(cfg Config) *Registrar {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	fl := &followedLeases{leases: map[string]lease.Record{}}
	return &Registrar{cfg: cfg, log: cfg.Logger, items: map[string]*storedItem{}, index: index{}, notifies: map[string]*storedNotify{},
		ownerBytes: map[string]int{}, listings: make(chan struct{}, cmp.Or(cfg.Listings, DefaultListings)),
		book: fl, follower: fl}
}

// Follow applies a batch of changes of FollowedBuckets, in commit
// order, to a follower's copy (a reset: they are the whole content, what
// it held before is forgotten). A record that does not read is left out,
// and logged; nothing is refused.
func (r *Registrar) Follow(b store.Batch) error {
	if r.follower == nil {
		return nil
	}
	changes, reset := b.Changes, b.Reset
	r.follower.mu.Lock()
	if reset {
		clear(r.follower.leases)
	}
	for _, c := range changes {
		if c.Bucket != lease.Bucket {
			continue
		}
		var rec lease.Record
		switch {
		case c.Value == nil:
			delete(r.follower.leases, c.Key)
		case json.Unmarshal(c.Value, &rec) != nil:
			r.log.Warn("a lease in the store does not read: left out of the copy", "lease", fault.Short(c.Key))
		case rec.Kind == ItemLease || rec.Kind == StaticLease:
			// Only the items' leases are shown.
			r.follower.leases[c.Key] = rec
		}
	}
	r.follower.mu.Unlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	if reset {
		clear(r.items)
		clear(r.index)
		clear(r.ownerBytes)
		r.bytes = 0
	}
	for _, c := range changes {
		switch c.Bucket {
		case itemsBucket:
			if c.Value == nil {
				r.putLocked(c.Key, nil)
				continue
			}
			var rec itemRecord
			if err := json.Unmarshal(c.Value, &rec); err != nil {
				r.log.Warn("an item in the store does not read: left out of the copy", "service", fault.Short(c.Key), "err", err)
				continue
			}
			si := rec.stored()
			si.size = recordSize(&si)
			r.putLocked(c.Key, &si)
		case metaBucket:
			var m Meta
			if c.Key == "meta" && c.Value != nil && json.Unmarshal(c.Value, &m) == nil {
				r.meta = m
			}
		}
	}
	return nil
}

// FollowsLease says whether a follower's copy holds a live lease of an
// item by its ID: one of the deployment's leases, not a shard's (a node
// of a cluster places a lease's requests by it).
func (r *Registrar) FollowsLease(id string) bool {
	if r.follower == nil {
		return false
	}
	_, err := r.follower.Get(id)
	return err == nil
}

// followedLeases is a follower's copy of the items' leases.
type followedLeases struct {
	mu     sync.Mutex
	leases map[string]lease.Record
}

// Get returns a live lease of the copy, as the grantor would.
func (f *followedLeases) Get(id string) (lease.Record, error) {
	f.mu.Lock()
	rec, ok := f.leases[id]
	f.mu.Unlock()
	if !ok || rec.Expiration <= time.Now().UnixMilli() {
		return lease.Record{}, fault.New(apitypes.UnknownLease, "lease %q is unknown or has expired", fault.Short(id))
	}
	return rec, nil
}

func (f *followedLeases) Now() time.Time { return time.Now() }

// readsOnly registers a service's read routes alone.
type readsOnly struct{ httpjson.Mux }

func (m readsOnly) Handle(need httpjson.Need, pattern string, h http.HandlerFunc) {
	if need == httpjson.Read {
		m.Mux.Handle(need, pattern, h)
	}
}

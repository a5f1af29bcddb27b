// Package lease is the lease grantor every jinid service shares: it grants
// durations by per-kind policy, renews and cancels (one by one and in
// batches with per-lease results, the LeaseMap semantics), keeps every
// lease in the store with the resource it covers, and frees the resource
// promptly when a lease ends, from a heap of expirations. A volatile kind's
// leases are kept in memory only: they cover resources a restart ends
// anyway (a transaction's, under presumed abort), so granting, renewing
// and cancelling them costs no store write.
package lease

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/pqueue"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/store"
)

// The Jini duration constants, in milliseconds.
const (
	Any     int64 = -1
	Forever int64 = math.MaxInt64
)

// Never is the expiration of a lease granted FOREVER without limit.
const Never int64 = math.MaxInt64

// Bucket is the store bucket the leases are kept in (a node of a
// cluster that does not hold the store follows a copy of it).
const Bucket = "leases"

const bucket = Bucket

// Policy is how a kind of resource is leased, in milliseconds.
type Policy struct {
	// Default is granted for ANY.
	Default int64
	// Max caps every grant, FOREVER included; Forever here means no cap.
	Max int64
	// MaxKey names Max where it is configured (a key of the config
	// file's limits, "serviceLeaseMax"), for the holder told its lease is
	// shorter than it asked.
	MaxKey string
}

// cut says whether Max cuts a request for requested.
func (p Policy) cut(requested int64) bool {
	return p.Max != Forever && (requested == Forever || requested > p.Max)
}

// Grant computes the duration granted for a request.
func (p Policy) Grant(requested int64) (int64, error) {
	switch {
	case requested == Any:
		return min(p.Default, p.Max), nil
	case requested == Forever:
		return p.Max, nil
	case requested <= 0:
		return 0, fault.New(apitypes.InvalidArgument, "lease duration %d: must be positive, -1 (ANY) or %d (FOREVER)", requested, Forever)
	}
	return min(requested, p.Max), nil
}

// Record is a lease as stored and as its holder sees it.
type Record struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Expiration in milliseconds since the epoch; Never for an unlimited
	// FOREVER lease.
	Expiration int64 `json:"expiration"`
	// Owner is who was granted it (access.Principal.Owner), for the
	// quotas; "" is an administrator.
	Owner string `json:"owner,omitempty"`
	// CutBy, in the answer to a grant or a renewal only (not stored), is
	// the policy's MaxKey when its maximum cut the duration asked for.
	CutBy string `json:"-"`
}

// Quota bounds the leases of one kind: in all, and of one owner (an
// administrator's count in all only). A zero bound is none; the keys
// name the limits in errors (their config keys).
type Quota struct {
	Total, PerOwner       int
	TotalKey, PerOwnerKey string
}

// Release frees the resource a lease covered, in the transaction that
// deletes the lease, so the two go together.
type Release func(tx *store.Tx, resource string) error

type kind struct {
	policy   Policy
	release  Release
	volatile bool // in memory only: release gets a nil tx
	// shared: its release claims what it reads (store.Tx.Claim), so its
	// cancels and expiries may share commits with other changes.
	shared  bool
	renewed func(Record)
	quota   Quota
	count   int            // leases held
	owners  map[string]int // leases held by owner
}

type entry struct {
	rec  Record
	slot int // its place in the expiration queue (pqueue)
}

// Grantor grants and tracks leases.
type Grantor struct {
	clock clock.Clock
	store *store.Store
	log   *slog.Logger

	mu           sync.Mutex
	kinds        map[string]*kind
	leases       map[string]*entry
	heap         pqueue.Queue[*entry] // by expiration
	timer        clock.Timer
	at           int64 // when timer fires, ms; 0 if none
	closed       bool
	maxBatch     int
	expiryLogged time.Time
	// expiring serialises expiry runs with Close.
	expiring sync.WaitGroup
	// newID makes lease IDs (SetNewID).
	newID func() string
}

// New returns a grantor on st. Register every kind, then Start it.
func New(st *store.Store, clk clock.Clock, log *slog.Logger) *Grantor {
	return &Grantor{clock: clk, store: st, log: log, kinds: map[string]*kind{}, leases: map[string]*entry{}, newID: ids.New,
		heap: pqueue.New(func(a, b *entry) bool { return a.rec.Expiration < b.rec.Expiration }, func(e *entry) *int { return &e.slot })}
}

// SetNewID has the grantor make its lease IDs with f (ids.New's form)
// rather than ids.New: a grantor of one shard of a cluster's work makes
// IDs that say the shard. Call it before the first Grant.
func (g *Grantor) SetNewID(f func() string) { g.newID = f }

// Register declares a kind of leased resource.
func (g *Grantor) Register(k string, p Policy, release Release) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kinds[k] = &kind{policy: p, release: release, owners: map[string]int{}}
}

// Share says that kind k's release claims what it reads from memory
// (store.Tx.Claim): its cancels and expiries then share commits with
// other changes made at the same time (what they free counts for those
// only after the commit: a quota errs on the safe side). Register the
// kind first.
func (g *Grantor) Share(k string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kinds[k].shared = true
}

// RegisterVolatile declares a kind whose leases live in memory only, for
// resources that do not outlive the process: Grant takes a nil tx for
// them, and release is called with a nil tx. The leases are listed,
// renewed and cancelled like any other.
func (g *Grantor) RegisterVolatile(k string, p Policy, release Release) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kinds[k] = &kind{policy: p, release: release, volatile: true, owners: map[string]int{}}
}

// Start reads the stored leases and, in one transaction, releases those
// that expired while jinid was down, then expires the others as they end.
// Call it once, after the services have loaded their resources.
func (g *Grantor) Start(context.Context) error {
	var all []Record
	err := g.store.View(func(tx *store.Tx) error {
		return tx.ForEach(bucket, func(_ string, raw []byte) error {
			var r Record
			if err := decode(raw, &r); err != nil {
				return err
			}
			all = append(all, r)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("loading leases: %w", err)
	}
	now := g.now()
	var lapsed []Record
	g.mu.Lock()
	for _, r := range all {
		if r.Expiration <= now {
			lapsed = append(lapsed, r)
			continue
		}
		g.add(r)
	}
	g.mu.Unlock()
	if len(lapsed) > 0 {
		if err := g.expire(lapsed); err != nil {
			return err
		}
		g.log.Info("leases that lapsed while jinid was down released", "count", len(lapsed))
	}
	g.mu.Lock()
	g.schedule()
	g.mu.Unlock()
	return nil
}

// Shutdown stops expiring leases and waits for an expiry run in progress
// (one store transaction: it is not cut short).
func (g *Grantor) Shutdown(context.Context) error {
	g.mu.Lock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	g.expiring.Wait()
	return nil
}

var _ lifecycle.Service = (*Grantor)(nil)

func (g *Grantor) now() int64 { return g.clock.Now().UnixMilli() }

// Now is the grantor's clock: the time leases are granted and end by.
func (g *Grantor) Now() time.Time { return g.clock.Now() }

// expirationAfter adds a duration to now, saturating instead of
// overflowing.
func expirationAfter(now, d int64) int64 {
	if d >= Never-now {
		return Never
	}
	return now + d
}

func (g *Grantor) policy(k string) (kind, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	kd, ok := g.kinds[k]
	if !ok {
		return kind{}, fmt.Errorf("lease kind %q was never registered", k)
	}
	return *kd, nil
}

// Grant leases a new resource within the owner's transaction: the lease is
// stored with the resource and tracked once both are on disk. A volatile
// kind's lease is tracked at once, and tx may be nil.
func (g *Grantor) Grant(tx *store.Tx, k, resource, owner string, requested int64) (Record, error) {
	kd, err := g.policy(k)
	if err != nil {
		return Record{}, err
	}
	d, err := kd.policy.Grant(requested)
	if err != nil {
		return Record{}, err
	}
	// Grants of the same commit not yet in memory count too.
	held := tx.Pending("lease/"+k, 1)
	var ownerHeld int64
	if owner != "" {
		ownerHeld = tx.Pending("lease/"+k+"/"+owner, 1)
	}
	g.mu.Lock()
	err = g.checkQuota(g.kinds[k], owner, int(held), int(ownerHeld))
	g.mu.Unlock()
	if err != nil {
		return Record{}, err
	}
	r := Record{ID: g.newID(), Kind: k, Resource: resource, Expiration: expirationAfter(g.now(), d), Owner: owner}
	if kd.volatile {
		g.track(r)
	} else if err := g.put(tx, r); err != nil {
		return r, err
	}
	if kd.policy.cut(requested) {
		r.CutBy = cmp.Or(kd.policy.MaxKey, "policy")
	}
	return r, nil
}

// Replace renews a lease within the owner's transaction for a resource
// being registered again (as a lookup registration of an existing
// ServiceID is).
func (g *Grantor) Replace(tx *store.Tx, id string, requested int64) (Record, error) {
	if err := tx.Claim("lease/" + id); err != nil {
		return Record{}, err
	}
	r, err := g.current(id)
	if err != nil {
		return Record{}, err
	}
	kd, err := g.policy(r.Kind)
	if err != nil {
		return Record{}, err
	}
	d, err := kd.policy.Grant(requested)
	if err != nil {
		return Record{}, err
	}
	r.Expiration = expirationAfter(g.now(), d)
	if err := g.put(tx, r); err != nil {
		return r, err
	}
	if kd.policy.cut(requested) {
		r.CutBy = cmp.Or(kd.policy.MaxKey, "policy")
	}
	return r, nil
}

func (g *Grantor) put(tx *store.Tx, r Record) error {
	if err := tx.Put(bucket, r.ID, r); err != nil {
		return err
	}
	tx.OnCommit(func() { g.track(r) })
	return nil
}

// track adds r to the leases in memory, or updates it there.
func (g *Grantor) track(r Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.leases[r.ID]; ok {
		e.rec = r
		if g.heap.Contains(e) { // not while it is being expired
			g.heap.Update(e)
		}
	} else {
		g.add(r)
	}
	g.schedule()
}

// add tracks r; call with g.mu held.
func (g *Grantor) add(r Record) {
	e := &entry{rec: r}
	g.leases[r.ID] = e
	g.heap.Update(e)
	if k := g.kinds[r.Kind]; k != nil {
		k.count++
		if r.Owner != "" {
			k.owners[r.Owner]++
		}
	}
}

// SetQuota bounds the leases of a kind (registered before).
func (g *Grantor) SetQuota(k string, q Quota) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if kd := g.kinds[k]; kd != nil {
		kd.quota = q
	}
}

// checkQuota says whether owner may be granted one more lease of kd;
// the caller holds mu.
func (g *Grantor) checkQuota(kd *kind, owner string, pending, ownerPending int) error {
	q := kd.quota
	switch n, o := kd.count+pending, kd.owners[owner]+ownerPending; {
	case q.Total > 0 && n >= q.Total:
		return fault.Limit(apitypes.TooMany, q.TotalKey, 60, "%d of these are held, the most this daemon keeps (%s); try again once some have ended", n, q.TotalKey)
	case q.PerOwner > 0 && owner != "" && o >= q.PerOwner:
		return fault.Limit(apitypes.TooMany, q.PerOwnerKey, 60, "this client holds %d of these, the most one may (%s); cancel some first", o, q.PerOwnerKey)
	}
	return nil
}

// current returns a live lease, or UnknownLease for one that is unknown or
// has already expired (whether or not its expiry has run yet).
func (g *Grantor) current(id string) (Record, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.leases[id]
	if !ok || e.rec.Expiration <= g.now() {
		return Record{}, fault.New(apitypes.UnknownLease, "lease %q is unknown or has expired", fault.Short(id))
	}
	return e.rec, nil
}

// EndOf returns a func telling when lease id ends, as it stands at each
// call (the past once it is gone): how long an event covered by it may
// be retried.
func (g *Grantor) EndOf(id string) func() time.Time {
	return func() time.Time {
		r, err := g.current(id)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(min(r.Expiration, Never/2))
	}
}

// OwnerOf returns who was granted a live lease (access.Principal.Owner:
// "" for an administrator), and whether it is live.
func (g *Grantor) OwnerOf(id string) (string, bool) {
	r, err := g.current(id)
	return r.Owner, err == nil
}

// Live reports whether lease id still runs. A registration whose lease
// has ended is gone, though its kind's release may not have run yet: it
// takes no change and sends no event.
func (g *Grantor) Live(id string) bool {
	_, err := g.current(id)
	return err == nil
}

// MayAct says whether the caller of ctx may act on what lease id covers,
// or see the lease's ID: the client it was granted to, or an
// administrator (access.MayAct). A lease no longer live covers nothing:
// the service then says the registration is gone.
func (g *Grantor) MayAct(ctx context.Context, id, what string) error {
	owner, ok := g.OwnerOf(id)
	if !ok {
		return nil
	}
	return access.MayAct(ctx, owner, what)
}

// Get returns a live lease.
func (g *Grantor) Get(id string) (Record, error) { return g.current(id) }

// Renew renews one lease for a new duration from now.
func (g *Grantor) Renew(id string, requested int64) (Record, error) {
	res := g.RenewAll([]Renewal{{ID: id, Duration: requested}})
	return res[0].Lease, res[0].Err
}

// Renewal asks for one lease of a batch to be renewed.
type Renewal struct {
	ID       string
	Duration int64
}

// Result is one lease's outcome in a batch.
type Result struct {
	Lease Record
	Err   error
}

// RenewAll renews a batch: each lease that can be renewed is, in one
// transaction; each that cannot gets its own error, and none stops the
// others (LeaseMap.renewAll). Renewals made at the same time share a
// commit (store.Shared): each claims its leases, for it reads them from
// memory.
func (g *Grantor) RenewAll(rs []Renewal) []Result {
	out := make([]Result, len(rs))
	var stored []int
	for i, rn := range rs {
		r, kd, err := g.renewal(rn)
		if err == nil && !kd.volatile {
			stored = append(stored, i)
			continue
		}
		if err == nil {
			g.track(r)
			g.renewed(kd, r)
		}
		out[i] = Result{Lease: r, Err: err}
	}
	if len(stored) == 0 {
		return out
	}
	err := g.store.Shared(func(tx *store.Tx) error {
		for _, i := range stored {
			if err := tx.Claim("lease/" + rs[i].ID); err != nil {
				return err
			}
		}
		// Read again under the claims: a cancel or an expiry committed
		// since the first look is seen.
		for _, i := range stored {
			r, kd, err := g.renewal(rs[i])
			out[i] = Result{Lease: r, Err: err}
			if err != nil {
				continue
			}
			if err := g.put(tx, r); err != nil {
				return err
			}
			tx.OnCommit(func() { g.renewed(kd, r) })
		}
		return nil
	})
	if err != nil {
		for _, i := range stored {
			out[i] = Result{Err: fmt.Errorf("storing the renewal: %w", err)}
		}
	}
	return out
}

// renewal is lease rn.ID renewed as rn asks, not yet stored.
func (g *Grantor) renewal(rn Renewal) (Record, kind, error) {
	r, err := g.current(rn.ID)
	if err != nil {
		return r, kind{}, err
	}
	kd, err := g.policy(r.Kind)
	if err != nil {
		return r, kd, err
	}
	d, err := kd.policy.Grant(rn.Duration)
	if err != nil {
		return r, kd, err
	}
	r.Expiration = expirationAfter(g.now(), d)
	if kd.policy.cut(rn.Duration) {
		r.CutBy = cmp.Or(kd.policy.MaxKey, "policy")
	}
	return r, kd, nil
}

// renewed tells the kind's OnRenew hook, if any, of a stored renewal.
func (g *Grantor) renewed(kd kind, r Record) {
	if kd.renewed != nil {
		kd.renewed(r)
	}
}

// OnRenew has f told of every renewal of a lease of kind k, once it is
// stored (a renewal service re-arms its expiration warnings so). Register
// the kind first.
func (g *Grantor) OnRenew(k string, f func(Record)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kinds[k].renewed = f
}

// Cancel ends a lease now, freeing its resource as expiry would.
func (g *Grantor) Cancel(id string) error { return g.CancelAll([]string{id})[0] }

// CancelAll cancels a batch, each lease independently
// (LeaseMap.cancelAll): one error per lease, nil where it was cancelled.
func (g *Grantor) CancelAll(idList []string) []error {
	errs := make([]error, len(idList))
	var recs []Record
	var at []int
	for i, id := range idList {
		r, err := g.current(id)
		if err != nil {
			errs[i] = err
			continue
		}
		if slicesContainsID(recs, id) {
			continue // the same lease twice in one batch
		}
		recs = append(recs, r)
		at = append(at, i)
	}
	if len(recs) == 0 {
		return errs
	}
	if err := g.expire(recs); err != nil {
		for _, i := range at {
			errs[i] = err
		}
	}
	return errs
}

func slicesContainsID(rs []Record, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// Drop removes a lease within the owner's transaction, when the owner
// removes the resource itself (a lookup registration replaced by another
// of the same ServiceID, say). The owner frees the resource.
func (g *Grantor) Drop(tx *store.Tx, id string) error {
	if err := tx.Claim("lease/" + id); err != nil {
		return err
	}
	if err := tx.Delete(bucket, id); err != nil {
		return err
	}
	tx.OnCommit(func() { g.forget(id) })
	return nil
}

// forget stops tracking lease id; false if it was not tracked.
func (g *Grantor) forget(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.leases[id]
	if ok {
		g.heap.Remove(e)
		delete(g.leases, id)
		if k := g.kinds[e.rec.Kind]; k != nil {
			k.count--
			if o := e.rec.Owner; o != "" {
				if k.owners[o]--; k.owners[o] <= 0 {
					delete(k.owners, o)
				}
			}
		}
	}
	g.schedule()
	return ok
}

// expire deletes leases and releases their resources in one transaction;
// volatile ones are released without it.
func (g *Grantor) expire(recs []Record) error {
	stored := recs[:0:0]
	for _, r := range recs {
		kd, err := g.policy(r.Kind)
		if err != nil {
			return err
		}
		if !kd.volatile {
			stored = append(stored, r)
			continue
		}
		if !g.forget(r.ID) {
			continue // cancelled and expired at once: released once
		}
		if err := kd.release(nil, r.Resource); err != nil {
			g.log.Warn("releasing a volatile lease's resource failed", "kind", r.Kind, "resource", r.Resource, "err", err)
		}
	}
	// A store in etcd takes a bounded number of writes per transaction:
	// leases expiring together (thousands, after an outage) go in parts,
	// each lease independent of the others; a lease's release writes a
	// few keys (the lease, its resource, its owner's count).
	per := g.store.Chunk(len(stored), 4)
	for len(stored) > 0 {
		n := min(per, len(stored))
		if err := g.expireStored(stored[:n]); err != nil {
			return err
		}
		stored = stored[n:]
	}
	return nil
}

// expireStored deletes stored leases and releases their resources in one
// transaction.
func (g *Grantor) expireStored(stored []Record) error {
	update := g.store.Shared
	for _, r := range stored {
		if kd, err := g.policy(r.Kind); err != nil || !kd.shared {
			update = g.store.Update
		}
	}
	return update(func(tx *store.Tx) error {
		for _, r := range stored {
			if err := tx.Claim("lease/" + r.ID); err != nil {
				return err
			}
		}
		for _, r := range stored {
			kd, err := g.policy(r.Kind)
			if err != nil {
				return err
			}
			var cur Record
			if ok, err := tx.Get(bucket, r.ID, &cur); err != nil || !ok {
				// Dropped meanwhile (its resource registered again):
				// nothing of it to release.
				id := r.ID
				tx.OnCommit(func() { g.forget(id) })
				continue
			}
			// The release first: what it claims, before anything of
			// this lease is written.
			if err := kd.release(tx, r.Resource); err != nil {
				return fmt.Errorf("releasing %s %s: %w", r.Kind, r.Resource, err)
			}
			if err := tx.Delete(bucket, r.ID); err != nil {
				return err
			}
			id := r.ID
			tx.OnCommit(func() { g.forget(id) })
		}
		return nil
	})
}

// schedule sets the timer for the earliest expiration; call with g.mu held.
func (g *Grantor) schedule() {
	if g.closed {
		return
	}
	first, ok := g.heap.Min()
	if !ok {
		if g.timer != nil {
			g.timer.Stop()
			g.timer, g.at = nil, 0
		}
		return
	}
	next := first.rec.Expiration
	if g.timer != nil && g.at == next {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
		g.timer, g.at = nil, 0
	}
	wait, ok := clock.UntilMilli(g.now(), next)
	if !ok {
		return // nothing ends within a timer's reach (FOREVER leases)
	}
	g.at = next
	g.timer = g.clock.AfterFunc(wait, g.fire)
}

// fire expires every lease that is due.
func (g *Grantor) fire() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.expiring.Add(1)
	defer g.expiring.Done()
	g.timer, g.at = nil, 0
	now := g.now()
	var due []Record
	for e, ok := g.heap.Min(); ok && e.rec.Expiration <= now; e, ok = g.heap.Min() {
		due = append(due, g.heap.Pop().rec)
	}
	g.mu.Unlock()
	if len(due) > 0 {
		if err := g.expire(due); err != nil {
			// Put them back to try again shortly, rather than lose them.
			// (A full disk fails every second: say so once a minute.)
			g.mu.Lock()
			if time.Since(g.expiryLogged) >= time.Minute {
				g.expiryLogged = time.Now()
				g.log.Error("expiring leases failed; retrying every second", "count", len(due), "err", err)
			}
			for _, r := range due {
				if e, ok := g.leases[r.ID]; ok {
					g.heap.Update(e)
				}
			}
			g.mu.Unlock()
			g.clock.AfterFunc(time.Second, g.fire)
			return
		}
	}
	g.mu.Lock()
	g.schedule()
	g.mu.Unlock()
}

// CountByKind is how many leases of each kind are live, for metrics.
func (g *Grantor) CountByKind() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := make(map[string]int, len(g.kinds))
	for k := range g.kinds {
		n[k] = 0
	}
	for _, e := range g.leases {
		n[e.rec.Kind]++
	}
	return n
}

// OwnedBy lists the live leases of kind whose owner has prefix, at most
// max, ordered by resource.
func (g *Grantor) OwnedBy(kind, prefix string, max int) []Record {
	g.mu.Lock()
	var out []Record
	for _, e := range g.leases {
		if e.rec.Kind == kind && strings.HasPrefix(e.rec.Owner, prefix) {
			out = append(out, e.rec)
		}
	}
	g.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out[:min(len(out), max)]
}

// Count is how many leases are live, for status and tests.
func (g *Grantor) Count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.leases)
}

func decode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding a stored lease: %w", err)
	}
	return nil
}

// Shown is l, the API's view of rec, saying what cut rec (Lease.Cut).
func Shown(l apitypes.Lease, rec Record) apitypes.Lease {
	l.Cut = rec.CutBy
	return l
}

package lookup

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// notifierBucket keeps a notifier's own state (notifierMeta); its
// registrations are in notifyBucket, as the registrar's are, in its own
// store.
const notifierBucket = "lookup.notifier"

// notifierMeta is a notifier's state: the event IDs it gave, and the
// revision of the registry it has sent the events of.
type notifierMeta struct {
	NextEventID int64 `json:"nextEventID"`
	Revision    int64 `json:"revision"`
}

// NotifierConfig gives a Notifier its dependencies.
type NotifierConfig struct {
	// Store keeps the registrations (a shard's, in a cluster), apart
	// from the registry's.
	Store    *store.Store
	Grantor  *lease.Grantor
	Outbound *outbound.Policy
	// Dispatcher sends the events.
	Dispatcher Sender
	Logger     *slog.Logger
	Policy     lease.Policy
	// NewID makes the registrations' IDs (the shard's).
	NewID func() string
	// EventIDBase is added to the event IDs the notifier gives (1, 2,
	// ...), so that they are apart from the registrar's and every other
	// notifier's.
	EventIDBase int64
}

// Notifier keeps notify registrations of the lookup service apart from
// the registrar: in a store of their own (a shard of a cluster's), held
// by whichever node holds it. It sees the registry's changes as the
// store in etcd records them (Apply, fed by a follower of the items'
// bucket with their values before), not as they are made: what it has
// sent the events of is a revision, kept with the registrations'
// sequence numbers in one commit, and a node that takes the shard over
// goes on from there.
type Notifier struct {
	cfg NotifierConfig
	log *slog.Logger

	mu       sync.Mutex
	notifies map[string]*storedNotify
	meta     notifierMeta
	// committed is when the revision applied was last committed: a
	// batch that sends no event commits it only now and then.
	committed time.Time
}

// revisionEvery is how often a revision that sent no event is
// committed: a node taking the shard over goes through the registry's
// changes since the last one again (sending only what was not sent).
const revisionEvery = 10 * time.Second

// NewNotifier loads a notifier from its store and registers its lease
// kind (NotifyLease) with the grantor.
func NewNotifier(cfg NotifierConfig) (*Notifier, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == (lease.Policy{}) {
		cfg.Policy = DefaultNotifyPolicy
	}
	n := &Notifier{cfg: cfg, log: cfg.Logger, notifies: map[string]*storedNotify{}}
	err := cfg.Store.View(func(tx *store.Tx) error {
		if err := loadNotifies(tx, n.notifies); err != nil {
			return err
		}
		_, err := tx.Get(notifierBucket, "meta", &n.meta)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("loading the lookup service's notify registrations: %w", err)
	}
	cfg.Grantor.Register(NotifyLease, cfg.Policy, n.release)
	return n, nil
}

// NotifierFollows are the buckets whose changes a notifier is fed
// (Apply): the items'.
func NotifierFollows() []string { return []string{itemsBucket} }

// NotifyRoute is the route a notify registration is made on.
const NotifyRoute = "POST /v1/lookup/notify"

// Revision is the revision of the registry the notifier has sent the
// events of: a follower goes on from it (0: none yet, from now).
func (n *Notifier) Revision() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.meta.Revision
}

// Count is how many registrations the notifier keeps.
func (n *Notifier) Count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.notifies)
}

// Notify registers a listener for the transitions of items matching a
// template, from now on.
func (n *Notifier) Notify(req NotifyRequest) (NotifyRegistration, error) {
	if err := checkNotify(req, n.cfg.Outbound); err != nil {
		return NotifyRegistration{}, err
	}
	var out NotifyRegistration
	var made *storedNotify
	err := n.cfg.Store.Update(func(tx *store.Tx) error {
		n.mu.Lock()
		m := n.meta
		n.mu.Unlock()
		m.NextEventID = max(m.NextEventID, 1)
		s, rec, err := grantNotify(tx, n.cfg.Grantor, req, n.cfg.NewID(), n.cfg.EventIDBase+m.NextEventID)
		if err != nil {
			return err
		}
		m.NextEventID++
		if err := tx.Put(notifierBucket, "meta", m); err != nil {
			return err
		}
		tx.OnCommit(func() {
			// The store's writers wait for one another through their
			// hooks: its revision is this commit's.
			s.From = n.cfg.Store.Revision()
			n.mu.Lock()
			n.notifies[s.ID] = s
			n.meta.NextEventID = m.NextEventID
			n.mu.Unlock()
			made = s
		})
		out = NotifyRegistration{ID: s.ID, EventID: s.EventID, SeqNum: s.Seq, Lease: rec}
		return nil
	})
	if err != nil {
		return out, err
	}
	// Its revision kept with it, for a node that takes the shard over
	// and goes through the changes since the notifier's last commit
	// again. (Lost, were this node to die first: that node would send
	// it the events of those changes too, made just before it.)
	if err := n.cfg.Store.Update(func(tx *store.Tx) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.notifies[made.ID] != made {
			return nil // gone meanwhile
		}
		return tx.Put(notifyBucket, made.ID, notifyRecordOf(made))
	}); err != nil {
		n.log.Warn("keeping a notify registration's revision", "registration", made.ID, "err", err)
	}
	return out, nil
}

func (n *Notifier) release(tx *store.Tx, id string) error {
	if err := tx.Delete(notifyBucket, id); err != nil {
		return err
	}
	tx.OnCommit(func() {
		n.mu.Lock()
		delete(n.notifies, id)
		n.mu.Unlock()
	})
	return nil
}

// Apply sends the events of a batch of the registry's changes to its
// items (store.Batch, from a follower of the items' bucket with their
// values before): the registrations' sequence numbers and the batch's
// revision are committed first, then the events sent. A reset batch
// sends none: the registry changed in ways the notifier cannot know
// (etcd compacted its history past the notifier's revision).
func (n *Notifier) Apply(b store.Batch) error {
	if b.Reset {
		n.mu.Lock()
		from := n.meta.Revision
		n.mu.Unlock()
		if from != 0 {
			n.log.Warn("the registry's changes since the notify registrations' last event are lost to them (etcd compacted its history): no events for them",
				"from", from, "to", b.Revision)
		}
		return n.commit(nil, b.Revision, nil)
	}
	n.mu.Lock()
	ns := make([]storedNotify, 0, len(n.notifies))
	for _, s := range n.notifies {
		ns = append(ns, *s)
	}
	n.mu.Unlock()
	type send struct {
		s     storedNotify
		ev    apitypes.ServiceEvent
		after *Item
	}
	var sends []send
	seqs := map[string]int64{}
	for _, c := range b.Changes {
		if c.Bucket != itemsBucket {
			continue
		}
		before, after := n.item(c.Key, c.Prev), n.item(c.Key, c.Value)
		if before == nil && after == nil {
			continue
		}
		// The registrations made before this change, with their
		// sequence numbers as the batch's earlier changes left them.
		rev := cmp.Or(c.Revision, b.Revision)
		var these []storedNotify
		for _, s := range ns {
			if s.From < rev {
				if seq, ok := seqs[s.ID]; ok {
					s.Seq = seq
				}
				these = append(these, s)
			}
		}
		updated, events := eventsFor(these, before, after)
		for i := range updated {
			seqs[updated[i].ID] = updated[i].Seq
			sends = append(sends, send{updated[i], events[i], after})
		}
	}
	if len(sends) == 0 {
		// Nothing to number: the revision is committed now and then,
		// not for every change to the registry (each shard's notifier
		// hears them all).
		n.mu.Lock()
		n.meta.Revision = max(n.meta.Revision, b.Revision)
		due := time.Since(n.committed) >= revisionEvery
		n.mu.Unlock()
		if !due {
			return nil
		}
	}
	return n.commit(seqs, b.Revision, func() {
		for _, s := range sends {
			deliver(n.cfg.Dispatcher, n.cfg.Grantor, n.log, s.s, s.ev, nativeOf(s.ev, s.after))
		}
	})
}

// commit stores the registrations' new sequence numbers and the
// revision applied, then calls sent (if set).
func (n *Notifier) commit(seqs map[string]int64, rev int64, sent func()) error {
	return n.cfg.Store.Update(func(tx *store.Tx) error {
		n.mu.Lock()
		var recs []storedNotify
		for id, seq := range seqs {
			if s, ok := n.notifies[id]; ok {
				c := *s
				c.Seq = seq
				recs = append(recs, c)
			}
		}
		m := n.meta
		n.mu.Unlock()
		for i := range recs {
			if err := tx.Put(notifyBucket, recs[i].ID, notifyRecordOf(&recs[i])); err != nil {
				return err
			}
		}
		m.Revision = max(m.Revision, rev)
		if err := tx.Put(notifierBucket, "meta", m); err != nil {
			return err
		}
		tx.OnCommit(func() {
			n.mu.Lock()
			for id, seq := range seqs {
				if s, ok := n.notifies[id]; ok {
					s.Seq = seq
				}
			}
			n.meta.Revision = max(n.meta.Revision, m.Revision)
			n.committed = time.Now()
			n.mu.Unlock()
			if sent != nil {
				sent()
			}
		})
		return nil
	})
}

// item reads an item's record (nil: none, or one that does not read,
// which is logged).
func (n *Notifier) item(key string, raw []byte) *Item {
	if raw == nil {
		return nil
	}
	var rec itemRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		n.log.Warn("an item in the store does not read: no events for its change", "service", fault.Short(key), "err", err)
		return nil
	}
	it := rec.stored().Item
	return &it
}

// Name, Prefix and Routes make the notifier a part of the API: the
// lookup service's notify route, as the registrar serves it.
func (n *Notifier) Name() string   { return "lookup service's notify registrations" }
func (n *Notifier) Prefix() string { return "/v1/lookup/notify" }

// Place and Holds place a new notify registration with its owner's
// (httpjson.Placer), as the registrar does.
func (n *Notifier) Place(*http.Request) httpjson.Place { return httpjson.Place{Owner: true} }
func (n *Notifier) Holds(string) bool                  { return false }

func (n *Notifier) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, NotifyRoute, func(w http.ResponseWriter, req *http.Request) {
		serveNotify(w, req, n.Notify, httpjson.Leases{Now: n.cfg.Grantor.Now})
	})
}

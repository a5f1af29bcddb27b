// Package mailbox is the event mailbox service (the EM specification,
// version 2: push and pull; shared/specs 000 and 003). A registration has
// a mailbox listener — a URL jinid serves, which any event generator can
// be given — and jinid stores what is sent there until the client takes
// it: pushed to a target listener (enableDelivery) or pulled through an
// iterator (getRemoteEvents, next).
//
// An event is acknowledged to its generator only once it is on disk.
// Arrivals are group-committed: concurrent events share one transaction
// and one fsync. Push delivery keeps the order of receipt per registration
// (one delivery at a time) and deletes an event once the target took it;
// a pulled event is deleted when the iterator's next call (or its close)
// acknowledges it, so each iterator returns an event at most once and a
// crash cannot lose one a client did not get.
package mailbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// LeaseKind is the grantor's kind for mailbox registrations.
const LeaseKind = "mailbox.registration"

const (
	regBucket   = "mailbox.registrations"
	eventPrefix = "mailbox.events."
	metaBucket  = "mailbox.meta"
	// endedBucket holds the iterators that were valid when their
	// registration ended, so that closing one still succeeds once.
	endedBucket = "mailbox.ended-iterators"
)

// maxEndedIterators bounds the iterators remembered after their
// registration ended; the oldest are forgotten first (their close then
// answers InvalidIterator).
const maxEndedIterators = 10_000

// ListenerPath is where a registration's mailbox listener is served:
// ListenerPath + registration ID.
const ListenerPath = "/v1/mailbox/listeners/"

// DefaultPolicy: registrations are leased for an hour unless asked
// otherwise, a day at most.
var DefaultPolicy = lease.Policy{Default: 60 * 60_000, Max: 24 * 60 * 60_000}

// Default quotas.
const (
	DefaultMaxPerRegistration = 100_000
	DefaultMaxEvents          = 1_000_000
	// DefaultMaxBytesPerRegistration and DefaultMaxBytes bound the bytes
	// of stored events: a store on a router's flash is not large.
	DefaultMaxBytesPerRegistration = 16 << 20
	DefaultMaxBytes                = 256 << 20
	// MaxEventSize bounds one stored event.
	MaxEventSize = 64 << 10
)

// ErrFull is the indefinite refusal of an event: a quota reached, or a
// mailbox shutting down; the generator retries later. Errors that are it
// are *Full.
var ErrFull = errors.New("mailbox full")

// Full says which quota refused an event (its config key), or "" when
// shutting down.
type Full struct{ Limit, Why string }

func (f *Full) Error() string        { return "mailbox full: " + f.Why }
func (f *Full) Is(target error) bool { return target == ErrFull }

// Config gives the service its dependencies.
type Config struct {
	Store   *store.Store
	Grantor *lease.Grantor
	// Outbound is where requests made on clients' behalf may go: each URL
	// handed in is checked against it. Nil means its fixed rules alone.
	Outbound *outbound.Policy
	Policy   lease.Policy
	// MaxBytesPerRegistration and MaxBytes bound the events' bytes, as
	// MaxPerRegistration and MaxEvents their count; 0 means the defaults.
	MaxBytesPerRegistration, MaxBytes int64
	// MaxPerRegistration and MaxEvents are the quotas (events stored for
	// one registration, and for the daemon); 0 means the defaults.
	MaxPerRegistration, MaxEvents int
	// Client posts events to targets: the daemon's outbound client (nil:
	// one of outbound's defaults).
	Client http1.Doer
	// Backoff after an indefinite delivery failure, doubling up to
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	Clock               clock.Clock
	Logger              *slog.Logger
	// NewID, if set, makes the IDs of new registrations and listeners
	// (ids.New's form) in place of ids.New: a shard of a cluster's work
	// makes IDs that say the shard.
	NewID func() string
	// ListenerTag, if set, begins every listener ID in place of the tag
	// the service keeps in its store: the shards of a cluster share
	// one, so that any node knows the cluster's listeners.
	ListenerTag string
	// ShardTag, in a cluster, begins the listeners of the shards'
	// mailboxes (their ListenerTag): an event for one goes to the shard
	// the rest of its ID says (Place).
	ShardTag string
}

// Key names a kind of event: its source and event ID (the unknown-event
// list holds these).
type Key struct {
	Source  json.RawMessage `json:"source"`
	EventID int64           `json:"eventID"`
}

// id is the key's identity: its source in canonical JSON (members in
// sorted order, no insignificant space), so one source compares equal
// however a generator orders its members (EM.7.1 compares sources, and
// JSON objects are unordered), then its event ID.
func (k Key) id() string {
	return canonicalJSON(k.Source) + "#" + strconv.FormatInt(k.EventID, 10)
}

// canonicalJSON re-encodes a JSON value with object members sorted by
// name; numbers keep their text. Text that is not JSON is kept as it is.
func canonicalJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

type reg struct {
	ID    string `json:"id"`
	Lease string `json:"lease"`
	// Listener names the mailbox listener: ListenerPath + Listener. It
	// differs from ID (holding the listener is no capability over the
	// registration) and begins with the service's listener tag.
	// Registrations stored before it existed use their ID.
	Listener string `json:"listener,omitempty"`
	Pull     bool   `json:"pull"`
	Target   string `json:"target,omitempty"`
	// TargetHostLocal: the host's administrator named the target (it
	// may be on this host: outbound.WithHostLocal).
	TargetHostLocal bool   `json:"targetHostLocal,omitempty"`
	Unknown         []Key  `json:"unknown,omitempty"`
	Iterator        string `json:"iterator,omitempty"`
	// Returned is the event the current iterator returned last and is
	// not yet acknowledged: stored before the event is, so an iterator
	// never returns an event twice, across restarts too (EM.7.1).
	Returned uint64   `json:"returned,omitempty"`
	NextSeq  uint64   `json:"nextSeq"`
	pending  []queued // stored events, in order
	bytes    int64    // their bodies' size
	unknown  map[string]bool
	changed  chan struct{} // closed and replaced when an event arrives or state changes
	pushing  bool
}

// endedIterator is an iterator that was valid when its registration
// ended.
type endedIterator struct {
	Reg string `json:"reg"`
	At  int64  `json:"at"` // when the registration ended, ms
}

type queued struct {
	seq  uint64
	key  string
	size int
	hops int
}

type storedEvent struct {
	Seq  uint64          `json:"seq"`
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body"`
	// Hops is how many times the event had been forwarded when it came
	// (event.HopsHeader).
	Hops int `json:"hops,omitempty"`
}

// Service is the event mailbox.
type Service struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	commit chan *arrival

	// tag begins every listener ID this service makes (EM.4.1: it must
	// know the listeners it generated, those of ended registrations too).
	tag string

	mu         sync.Mutex
	regs       map[string]*reg
	byListener map[string]*reg
	ended      map[string]endedIterator // by iterator ID
	endedOrder []string                 // oldest first
	total      int
	totalBytes int64
	closed     bool
	deliver    Deliverer // to targets that are not http or https
}

type arrival struct {
	reg  string
	key  Key
	body []byte
	hops int
	done chan error
}

// New loads the service and registers its lease kind; call the grantor's
// Load afterwards, then Start.
func New(cfg Config) (*Service, error) {
	if cfg.Policy == (lease.Policy{}) {
		cfg.Policy = DefaultPolicy
	}
	if cfg.MaxPerRegistration == 0 {
		cfg.MaxPerRegistration = DefaultMaxPerRegistration
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.MaxBytesPerRegistration <= 0 {
		cfg.MaxBytesPerRegistration = DefaultMaxBytesPerRegistration
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxPerRegistration < 0 || cfg.MaxEvents < 0 {
		return nil, errors.New("mailbox: negative quota")
	}
	if cfg.Client == nil {
		cfg.Client = outbound.New(outbound.Config{})
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.New
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, ctx: ctx, cancel: cancel,
		commit: make(chan *arrival, 4096), regs: map[string]*reg{}, byListener: map[string]*reg{},
		ended: map[string]endedIterator{}}
	if err := s.loadTag(); err != nil {
		cancel()
		return nil, err
	}
	if err := s.load(); err != nil {
		cancel()
		return nil, err
	}
	cfg.Grantor.Register(LeaseKind, cfg.Policy, s.release)
	return s, nil
}

// loadTag reads the service's listener tag, making it on first start.
func (s *Service) loadTag() error {
	if s.cfg.ListenerTag != "" {
		s.tag = s.cfg.ListenerTag
		return nil
	}
	return s.cfg.Store.Update(func(tx *store.Tx) error {
		ok, err := tx.Get(metaBucket, "listenerTag", &s.tag)
		if err != nil || ok {
			return err
		}
		s.tag = ids.New()[:16]
		return tx.Put(metaBucket, "listenerTag", s.tag)
	})
}

func (s *Service) load() error {
	return s.cfg.Store.View(func(tx *store.Tx) error {
		if err := tx.ForEach(regBucket, func(k string, raw []byte) error {
			var r reg
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("mailbox registration %s: %w", k, err)
			}
			if r.Listener == "" {
				r.Listener = r.ID
			}
			r.unknown = map[string]bool{}
			for _, u := range r.Unknown {
				r.unknown[u.id()] = true
			}
			r.changed = make(chan struct{})
			s.regs[r.ID] = &r
			s.byListener[r.Listener] = &r
			return nil
		}); err != nil {
			return err
		}
		// Keys of stored events are made canonical again: an event stored
		// by an earlier version may have its source's members in another
		// order. Most events share a few sources, hence the memo.
		canon := map[string]string{}
		for _, r := range s.regs {
			if err := tx.ForEach(eventPrefix+r.ID, func(k string, raw []byte) error {
				var e storedEvent
				if err := json.Unmarshal(raw, &e); err != nil {
					return fmt.Errorf("mailbox event %s/%s: %w", r.ID, k, err)
				}
				key, ok := canon[e.Key]
				if !ok {
					src, eid := splitKey(e.Key)
					key = Key{Source: src, EventID: eid}.id()
					canon[e.Key] = key
				}
				r.pending = append(r.pending, queued{seq: e.Seq, key: key, size: len(e.Body), hops: e.Hops})
				r.bytes += int64(len(e.Body))
				s.total++
				s.totalBytes += int64(len(e.Body))
				return nil
			}); err != nil {
				return err
			}
		}
		if err := tx.ForEach(endedBucket, func(k string, raw []byte) error {
			var e endedIterator
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("ended iterator %s: %w", k, err)
			}
			s.ended[k] = e
			s.endedOrder = append(s.endedOrder, k)
			return nil
		}); err != nil {
			return err
		}
		slices.SortFunc(s.endedOrder, func(a, b string) int { return cmp.Compare(s.ended[a].At, s.ended[b].At) })
		return nil
	})
}

// Start begins group commits and push deliveries.
func (s *Service) Start(context.Context) error {
	s.wg.Add(1)
	go s.committer()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.regs {
		s.kick(r)
	}
	return nil
}

// Shutdown stops delivery and waits for it; events not yet acknowledged to
// generators are refused.
func (s *Service) Shutdown(context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, r := range s.regs {
		s.wake(r)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

var _ lifecycle.Service = (*Service)(nil)

// --- registrations --------------------------------------------------------

// Registered is a new registration.
type Registered struct {
	ID string
	// Listener names its mailbox listener: ListenerPath + Listener.
	Listener string
	Lease    lease.Record
}

// Register creates a registration; pull makes it a pull registration
// (pullRegister), whose events can also be taken by iterator.
func (s *Service) Register(duration int64, pull bool, owner string) (Registered, error) {
	var out Registered
	// Registrations made at the same time share a commit: each is new,
	// and its lease counts against the quota with the others' (Grant).
	err := s.cfg.Store.Shared(func(tx *store.Tx) error {
		r := &reg{ID: s.cfg.NewID(), Listener: s.tag + s.cfg.NewID(), Pull: pull, NextSeq: 1}
		rec, err := s.cfg.Grantor.Grant(tx, LeaseKind, r.ID, owner, duration)
		if err != nil {
			return err
		}
		r.Lease = rec.ID
		if err := tx.Put(regBucket, r.ID, r); err != nil {
			return err
		}
		r.unknown, r.changed = map[string]bool{}, make(chan struct{})
		tx.OnCommit(func() {
			s.mu.Lock()
			s.regs[r.ID] = r
			s.byListener[r.Listener] = r
			s.mu.Unlock()
		})
		out = Registered{ID: r.ID, Listener: r.Listener, Lease: rec}
		return nil
	})
	return out, err
}

// Info describes a registration.
type Info struct {
	ID       string
	Listener string // ListenerPath + Listener is its mailbox listener
	Lease    string
	Pull     bool
	Target   string
	Iterator bool
	Pending  int
	Unknown  []Key
}

// Get describes a registration.
func (s *Service) Get(id string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.regs[id]
	if r == nil {
		return Info{}, noSuch(id)
	}
	return Info{ID: r.ID, Listener: r.Listener, Lease: r.Lease, Pull: r.Pull, Target: r.Target, Iterator: r.Iterator != "",
		Pending: len(r.pending), Unknown: slices.Clone(r.Unknown)}, nil
}

func noSuch(id string) error {
	return fault.Gone("mailbox registration", id)
}

// release ends a registration: its events go with it. It runs in the
// grantor's transaction.
func (s *Service) release(tx *store.Tx, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := tx.Delete(regBucket, id); err != nil {
		return err
	}
	r := s.regs[id]
	if r == nil {
		return nil
	}
	for _, q := range r.pending {
		if err := tx.Delete(eventPrefix+id, seqKey(q.seq)); err != nil {
			return err
		}
	}
	s.total -= len(r.pending)
	s.totalBytes -= r.bytes
	r.pending, r.bytes = nil, 0
	delete(s.regs, id)
	delete(s.byListener, r.Listener)
	s.wake(r)
	if r.Iterator != "" {
		return s.rememberEnded(tx, r)
	}
	return nil
}

// rememberEnded keeps the valid iterator of an ending registration, so
// its first close succeeds (RemoteEventIterator.close throws nothing but
// InvalidIteratorException); the caller holds mu, in tx.
func (s *Service) rememberEnded(tx *store.Tx, r *reg) error {
	e := endedIterator{Reg: r.ID, At: s.clock.Now().UnixMilli()}
	if err := tx.Put(endedBucket, r.Iterator, e); err != nil {
		return err
	}
	for len(s.endedOrder) >= maxEndedIterators {
		oldest := s.endedOrder[0]
		if err := tx.Delete(endedBucket, oldest); err != nil {
			return err
		}
		s.endedOrder = s.endedOrder[1:]
		delete(s.ended, oldest)
	}
	s.ended[r.Iterator] = e
	s.endedOrder = append(s.endedOrder, r.Iterator)
	return nil
}

// --- receiving ---------------------------------------------------------------

// Notify stores an event sent to the mailbox listener named listener; it
// returns once the event is on disk. The errors are those a generator
// acts on: NoSuchObject (the registration ended: stop sending),
// UnknownEvent (the client wants no more of these), ErrFull (retry
// later), InvalidArgument (not an event, or one forwarded too often:
// hops is how many times mailboxes had forwarded it).
func (s *Service) Notify(listener string, body []byte, hops int) error {
	if len(body) > MaxEventSize {
		return fault.New(apitypes.InvalidArgument, "event of %d bytes is larger than %d", len(body), MaxEventSize)
	}
	if hops < 0 || hops > event.MaxHops {
		return fault.New(apitypes.InvalidArgument, "event forwarded %d times, more than %d: mailboxes may be pushing to each other", hops, event.MaxHops)
	}
	var ev struct {
		Source  json.RawMessage `json:"source"`
		EventID *int64          `json:"eventID"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return httpjson.JSONError("event", err)
	}
	if len(ev.Source) == 0 || string(ev.Source) == "null" || ev.EventID == nil {
		return fault.New(apitypes.InvalidArgument, "event: source and eventID are required")
	}
	k := Key{Source: ev.Source, EventID: *ev.EventID}
	s.mu.Lock()
	r := s.byListener[listener]
	switch {
	case r == nil:
		s.mu.Unlock()
		return fault.New(apitypes.NoSuchObject, "no mailbox listener %q (its registration ended, or it never existed)", listener)
	case r.unknown[k.id()]:
		s.mu.Unlock()
		return fault.New(apitypes.UnknownEvent, "the client of this mailbox does not want events %s", k.id())
	case len(r.pending) >= s.cfg.MaxPerRegistration || s.total >= s.cfg.MaxEvents:
		s.mu.Unlock()
		limit := "mailboxEventsPerRegistration"
		if s.total >= s.cfg.MaxEvents {
			limit = "mailboxEvents"
		}
		return &Full{limit, fmt.Sprintf("%d events stored for this registration, %d in all", len(r.pending), s.total)}
	case r.bytes+int64(len(body)) > s.cfg.MaxBytesPerRegistration || s.totalBytes+int64(len(body)) > s.cfg.MaxBytes:
		s.mu.Unlock()
		limit := "mailboxBytesPerRegistration"
		if s.totalBytes+int64(len(body)) > s.cfg.MaxBytes {
			limit = "mailboxBytes"
		}
		return &Full{limit, fmt.Sprintf("%d bytes of events stored for this registration, %d in all", r.bytes, s.totalBytes)}
	case s.closed:
		s.mu.Unlock()
		return &Full{Why: "shutting down"}
	}
	s.mu.Unlock()
	a := &arrival{reg: r.ID, key: k, body: body, hops: hops, done: make(chan error, 1)}
	select {
	case s.commit <- a:
	case <-s.ctx.Done():
		return &Full{Why: "shutting down"}
	}
	return <-a.done
}

// committer group-commits arrivals: whatever is waiting when a
// transaction starts goes in it, up to 2,000.
func (s *Service) committer() {
	defer s.wg.Done()
	for {
		var batch []*arrival
		select {
		case a := <-s.commit:
			batch = append(batch, a)
		case <-s.ctx.Done():
			for {
				select {
				case a := <-s.commit:
					a.done <- &Full{Why: "shutting down"}
				default:
					return
				}
			}
		}
	drain:
		// An event writes its own key and its registration's record; a
		// store in etcd bounds the writes of one transaction.
		for most := s.cfg.Store.Chunk(2000, 2); len(batch) < most; {
			select {
			case a := <-s.commit:
				batch = append(batch, a)
			default:
				break drain
			}
		}
		s.store(batch)
	}
}

func (s *Service) store(batch []*arrival) {
	results := make([]error, len(batch))
	var woken []*reg
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		var added []func()
		touched := map[*reg]bool{}
		for i, a := range batch {
			r := s.regs[a.reg]
			if r == nil {
				results[i] = noSuch(a.reg)
				continue
			}
			seq := r.NextSeq
			r.NextSeq++
			touched[r] = true
			key := a.key.id()
			if err := tx.Put(eventPrefix+r.ID, seqKey(seq), storedEvent{Seq: seq, Key: key, Body: a.body, Hops: a.hops}); err != nil {
				return err
			}
			size, hops := len(a.body), a.hops
			added = append(added, func() {
				r.pending = append(r.pending, queued{seq: seq, key: key, size: size, hops: hops})
				r.bytes += int64(size)
				s.total++
				s.totalBytes += int64(size)
			})
		}
		for r := range touched {
			if err := tx.Put(regBucket, r.ID, r); err != nil {
				return err
			}
			woken = append(woken, r)
		}
		tx.OnCommit(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, f := range added {
				f()
			}
			for _, r := range woken {
				s.wake(r)
				s.kick(r)
			}
		})
		return nil
	})
	for i, a := range batch {
		if err != nil && results[i] == nil {
			results[i] = fmt.Errorf("storing the event: %w", err)
		}
		a.done <- results[i]
	}
}

func seqKey(seq uint64) string { return fmt.Sprintf("%016x", seq) }

// wake tells waiting pulls and the pusher that something changed; the
// caller holds mu.
func (s *Service) wake(r *reg) {
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
}

// --- push ----------------------------------------------------------------------

// EnableDelivery sets the target events are pushed to (replacing any; an
// empty target disables delivery). It invalidates iterators and clears
// the unknown-event list. A mailbox listener of this service is refused.
func (s *Service) EnableDelivery(ctx context.Context, id, target string) error {
	if target != "" {
		if err := s.cfg.Outbound.CheckListener(ctx, "target", target); err != nil {
			return err
		}
		if !strings.HasPrefix(target, "http") && s.deliver == nil {
			return fault.New(apitypes.InvalidArgument, "target %q: this jinid delivers events to http and https URLs only", target)
		}
		if u, _ := url.Parse(target); s.IsOwnListener(u) {
			return fault.New(apitypes.InvalidArgument, "target %q is a mailbox listener of this service: events would loop", target)
		}
	}
	return s.change(id, func(r *reg) {
		r.Target, r.TargetHostLocal = target, target != "" && outbound.IsHostLocal(ctx)
		if target != "" {
			r.Iterator, r.Returned = "", 0
			r.Unknown, r.unknown = nil, map[string]bool{}
		}
	})
}

// Deliverer pushes an event to a target that is not an http or https
// URL (a Java listener's jeri: URL): one attempt, with the EV rules'
// outcome.
type Deliverer func(ctx context.Context, target string, body []byte, hops int) (event.Outcome, error)

// SetDeliverer has the service push to targets other than http and
// https with d (the Java side's); set before the service starts.
func (s *Service) SetDeliverer(d Deliverer) { s.deliver = d }

// IsOwnListener reports whether u is a mailbox listener this service
// handed out, whether or not its registration still exists (EM.4.1),
// under any host name: the service may be reached by several.
func (s *Service) IsOwnListener(u *url.URL) bool {
	// The path as the server routes it: decoded and cleaned.
	id, ok := strings.CutPrefix(path.Clean(u.Path), ListenerPath)
	if !ok {
		return false
	}
	if strings.HasPrefix(id, s.tag) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byListener[id] != nil // one made before listener tags
}

// change applies a change to a registration's stored state.
func (s *Service) change(id string, f func(*reg)) error {
	return s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.regs[id]
		if r == nil {
			return noSuch(id)
		}
		f(r)
		if err := tx.Put(regBucket, r.ID, r); err != nil {
			return err
		}
		tx.OnCommit(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.wake(r)
			s.kick(r)
		})
		return nil
	})
}

// kick starts the registration's pusher if it should run; the caller
// holds mu.
func (s *Service) kick(r *reg) {
	if r.pushing || r.Target == "" || len(r.pending) == 0 || s.closed {
		return
	}
	r.pushing = true
	s.wg.Add(1)
	go s.push(r)
}

// push delivers a registration's events to its target in order, one at a
// time, until there are none, delivery is disabled, or the service stops.
func (s *Service) push(r *reg) {
	defer s.wg.Done()
	var backoff time.Duration
	// Delivered events leave memory at once and the store in batches: one
	// transaction per 256, or whenever the pusher would wait. (A crash in
	// between delivers those again: push is at least once across crashes,
	// as an HTTP push cannot be otherwise.)
	var delivered []uint64
	flush := func() {
		if len(delivered) > 0 {
			s.deleteStored(r, delivered)
			delivered = nil
		}
	}
	defer flush()
	for {
		if len(delivered) >= s.cfg.Store.Chunk(256, 1) {
			flush()
		}
		s.mu.Lock()
		if s.closed || s.regs[r.ID] != r || r.Target == "" || len(r.pending) == 0 {
			r.pushing = false
			s.mu.Unlock()
			return
		}
		q, target, hostLocal, changed := r.pending[0], r.Target, r.TargetHostLocal, r.changed
		skip := r.unknown[q.key]
		s.mu.Unlock()
		if skip {
			s.remove(r, q.seq)
			continue
		}
		body, err := s.body(r.ID, q.seq)
		if err != nil {
			s.log.Error("reading a stored event", "registration", r.ID, "seq", q.seq, "err", err)
			s.remove(r, q.seq)
			continue
		}
		// The delivery rules are every listener's (event.Attempt); the
		// order, retries and what a failure does are the mailbox's. An
		// event forwarded as often as events may be is not forwarded
		// again: the target is treated as having refused it.
		out, err := event.Definite, fmt.Errorf("event %d already forwarded %d times", q.seq, q.hops)
		switch {
		case q.hops >= event.MaxHops:
		case s.deliver != nil && !strings.HasPrefix(target, "http"):
			out, err = s.deliver(s.ctx, target, body, q.hops+1)
		default:
			out, err = event.Attempt(outbound.HostLocalIf(s.ctx, hostLocal), s.cfg.Client, target, body, q.hops+1)
		}
		switch out {
		case event.Delivered:
			s.forget(r, q.seq)
			delivered = append(delivered, q.seq)
			backoff = 0
		case event.UnknownEvent:
			flush()
			s.addUnknown(r.ID, []string{q.key}, nil)
		case event.Definite:
			flush()
			s.log.Info("mailbox delivery disabled: the target refused an event", "registration", r.ID, "target", target, "err", err)
			s.change(r.ID, func(r *reg) {
				if r.Target == target {
					r.Target = ""
				}
			})
		default:
			flush()
			backoff = min(max(2*backoff, s.cfg.Backoff), s.cfg.MaxBackoff)
			s.log.Debug("mailbox delivery failed; retrying", "registration", r.ID, "in", backoff, "err", err)
			if !s.cfg.Grantor.Live(r.Lease) {
				// The lease has ended: wait for its release (which wakes
				// this) instead of retrying.
				select {
				case <-changed:
				case <-s.ctx.Done():
				}
				continue
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-changed: // retarget, disable, or a new event: look again
			case <-s.ctx.Done():
			}
			t.Stop()
		}
	}
}

func (s *Service) body(id string, seq uint64) ([]byte, error) {
	var e storedEvent
	err := s.cfg.Store.View(func(tx *store.Tx) error {
		ok, err := tx.Get(eventPrefix+id, seqKey(seq), &e)
		if err == nil && !ok {
			err = errors.New("gone")
		}
		return err
	})
	return e.Body, err
}

// remove deletes events (skipped, or acknowledged by a pull) from the
// store, then from memory.
func (s *Service) remove(r *reg, seqs ...uint64) {
	if s.deleteStored(r, seqs) == nil {
		s.forget(r, seqs...)
	}
}

// forget drops events from the registration's queue in memory.
func (s *Service) forget(r *reg, seqs ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(r.pending)
	r.pending = slices.DeleteFunc(r.pending, func(q queued) bool {
		if slices.Contains(seqs, q.seq) {
			r.bytes -= int64(q.size)
			s.totalBytes -= int64(q.size)
			return true
		}
		return false
	})
	s.total -= n - len(r.pending)
}

func (s *Service) deleteStored(r *reg, seqs []uint64) error {
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		for _, seq := range seqs {
			if err := tx.Delete(eventPrefix+r.ID, seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("deleting delivered events", "registration", r.ID, "err", err)
	}
	return err
}

// --- unknown events -----------------------------------------------------------

// AddUnknownEvents adds kinds of event the client wants no more of
// (addUnknownEvents); stored ones of those kinds are dropped.
func (s *Service) AddUnknownEvents(id string, keys []Key) error {
	ks := make([]string, len(keys))
	for i, k := range keys {
		if len(k.Source) == 0 {
			return fault.New(apitypes.NullArgument, "unknown event %d: source is required", i)
		}
		ks[i] = k.id()
	}
	return s.addUnknown(id, ks, keys)
}

func (s *Service) addUnknown(id string, ks []string, keys []Key) error {
	var drop []uint64
	var r *reg
	err := s.change(id, func(x *reg) {
		r = x
		for i, k := range ks {
			if x.unknown[k] {
				continue
			}
			x.unknown[k] = true
			if keys != nil {
				x.Unknown = append(x.Unknown, keys[i])
			} else {
				src, eid := splitKey(k)
				x.Unknown = append(x.Unknown, Key{Source: src, EventID: eid})
			}
		}
		for _, q := range x.pending {
			if x.unknown[q.key] && q.seq != x.Returned {
				drop = append(drop, q.seq)
			}
		}
	})
	if err == nil && len(drop) > 0 {
		s.remove(r, drop...)
	}
	return err
}

func splitKey(k string) (json.RawMessage, int64) {
	i := strings.LastIndexByte(k, '#')
	var eid int64
	fmt.Sscanf(k[i+1:], "%d", &eid)
	return json.RawMessage(k[:i]), eid
}

// --- pull ------------------------------------------------------------------------

// Iterator starts a new iterator (getRemoteEvents): earlier ones become
// invalid, push delivery is disabled, and the unknown-event list cleared.
func (s *Service) Iterator(id string) (string, error) {
	s.mu.Lock()
	r := s.regs[id]
	s.mu.Unlock()
	if r == nil {
		return "", noSuch(id)
	}
	if !r.Pull {
		return "", fault.New(apitypes.UnsupportedOperation, "registration %s was not made for pull (register with pull: true)", id)
	}
	it := ids.New()
	err := s.change(id, func(r *reg) {
		r.Iterator, r.Returned, r.Target = it, 0, ""
		r.Unknown, r.unknown = nil, map[string]bool{}
	})
	return it, err
}

// Next returns the registration's next event through iterator it,
// waiting up to timeout for one (nil if none came). Calling it
// acknowledges the event the iterator returned before, which is deleted;
// the event it returns is recorded as returned, in the same transaction,
// before it is: an iterator never returns an event twice.
func (s *Service) Next(ctx context.Context, id, it string, timeout time.Duration) (json.RawMessage, error) {
	if timeout < 0 {
		return nil, fault.New(apitypes.InvalidArgument, "timeout %s is negative", timeout)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		r := s.regs[id]
		if err := s.checkIterator(r, id, it); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		prev, next := r.Returned, uint64(0)
		for _, q := range r.pending {
			if q.seq != prev && !r.unknown[q.key] {
				next = q.seq
				break
			}
		}
		changed := r.changed
		s.mu.Unlock()
		if prev != 0 || next != 0 {
			moved, err := s.advance(r, it, prev, next)
			if err != nil {
				return nil, err
			}
			if !moved {
				continue // another call on this iterator came first: look again
			}
			if next != 0 {
				body, err := s.body(id, next)
				if err != nil && s.gone(r) {
					return nil, noSuch(id)
				}
				return body, err
			}
			continue // acknowledged the last one; wait for a new one
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, nil
		}
	}
}

// checkIterator says why it is not r's valid iterator, if it is not; the
// caller holds mu.
func (s *Service) checkIterator(r *reg, id, it string) error {
	switch {
	case r == nil:
		return noSuch(id)
	case r.Iterator == "" || r.Iterator != it:
		return fault.New(apitypes.InvalidIterator, "iterator %s is no longer valid (closed, replaced, or delivery enabled)", it)
	}
	return nil
}

// advance moves iterator it from having returned prev (0: nothing) to
// having returned next (0: nothing), deleting prev, in one transaction.
// moved is false, and nothing changed, if prev is no longer what it
// returned last.
func (s *Service) advance(r *reg, it string, prev, next uint64) (moved bool, err error) {
	err = s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.checkIterator(s.regs[r.ID], r.ID, it); err != nil {
			return err
		}
		if r.Returned != prev {
			return nil
		}
		if prev != 0 {
			if err := tx.Delete(eventPrefix+r.ID, seqKey(prev)); err != nil {
				return err
			}
		}
		// Stored as it will be; in memory once it is on disk.
		r.Returned = next
		err := tx.Put(regBucket, r.ID, r)
		r.Returned = prev
		if err != nil {
			return err
		}
		moved = true
		tx.OnCommit(func() {
			s.mu.Lock()
			r.Returned = next
			s.mu.Unlock()
			if prev != 0 {
				s.forget(r, prev)
			}
		})
		return nil
	})
	return moved, err
}

// gone reports whether a registration has ended.
func (s *Service) gone(r *reg) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regs[r.ID] != r
}

// CloseIterator ends an iterator, acknowledging what it returned last.
// Closing one that is no longer valid is InvalidIterator (the only error
// RemoteEventIterator.close has); closing the valid iterator of a
// registration that has ended since succeeds, once.
func (s *Service) CloseIterator(id, it string) error {
	var prev uint64
	var r *reg
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		r = s.regs[id]
		if r == nil {
			if e, ok := s.ended[it]; ok && e.Reg == id {
				if err := tx.Delete(endedBucket, it); err != nil {
					return err
				}
				tx.OnCommit(func() { s.forgetEnded(it) })
				return nil
			}
			return fault.New(apitypes.InvalidIterator, "iterator %s is not valid (its registration %s has ended, or it never existed)", it, id)
		}
		if err := s.checkIterator(r, id, it); err != nil {
			return err
		}
		prev = r.Returned
		if prev != 0 {
			if err := tx.Delete(eventPrefix+r.ID, seqKey(prev)); err != nil {
				return err
			}
		}
		r.Iterator, r.Returned = "", 0
		err := tx.Put(regBucket, r.ID, r)
		r.Iterator, r.Returned = it, prev // in memory once it is on disk
		if err != nil {
			return err
		}
		tx.OnCommit(func() {
			s.mu.Lock()
			if r.Iterator == it {
				r.Iterator, r.Returned = "", 0
			}
			s.wake(r)
			s.mu.Unlock()
			if prev != 0 {
				s.forget(r, prev)
			}
		})
		return nil
	})
	return err
}

func (s *Service) forgetEnded(it string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ended, it)
	s.endedOrder = slices.DeleteFunc(s.endedOrder, func(x string) bool { return x == it })
}

// Count reports the registrations and the events stored for them, for
// metrics and the status page.
func (s *Service) Count() (registrations, events int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.regs), s.total
}

// SetQuotas changes the events stored per registration and in all (0:
// the defaults); events stored beyond a lowered quota stay, and new ones
// wait until there is room.
func (s *Service) SetQuotas(perRegistration, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.MaxPerRegistration = cmp.Or(perRegistration, DefaultMaxPerRegistration)
	s.cfg.MaxEvents = cmp.Or(total, DefaultMaxEvents)
}

// Inside is the receiver of a listener URL that is one of this service's
// mailbox listeners: the dispatcher hands their events over in the
// process (event.Dispatcher.SetInside), for any client that names one,
// rather than POST them to this daemon's own API.
func (s *Service) Inside(listener string) (event.Receiver, bool) {
	u, err := url.Parse(listener)
	if err != nil || !s.IsOwnListener(u) {
		return nil, false
	}
	id := strings.TrimPrefix(path.Clean(u.Path), ListenerPath)
	return func(body []byte, hops int) (event.Outcome, error) {
		err := s.Notify(id, body, hops)
		var full *Full
		switch {
		case err == nil:
			return event.Delivered, nil
		case errors.As(err, &full):
			return event.Indefinite, err // as its 503 over HTTP: retried
		}
		return event.Definite, err
	}, true
}

// Package renewal is the lease renewal service (the LR specification,
// shared/specs 000 and 003): clients put their leases, from any grantor
// that speaks API.md's lease endpoints, in leased renewal sets, and jinid
// renews them until their desired expiration.
//
// Each client lease is renewed, for min(renew duration, what is left of
// its desired duration), one round trip of its grantor (as measured) plus
// a safety margin before its actual expiration, so that the answer is
// back with the margin to spare; for a lease too short for the whole
// margin, the safety part is half the lease's current period, and a
// lease shorter still is renewed as soon as its last renewal is answered.
// LR.2: a lease in a set is renewed as long as it is in the set, so one
// whose renewal is under way when its recorded expiration comes stays
// until the answer (a round trip of its grantor, and a second, at most):
// the grantor, which had the request before the lease ended, says
// whether it renewed it. Leases of one grantor due within a batch window
// of each other go in one renewAll call. Indefinite failures are retried
// until the actual expiration (then a renewal failure event carries the
// last error); definite ones (UnknownLease, LeaseDenied, 404, 400) end
// the lease at once with a renewal failure event. An event carries what
// the grantor answered, code and message, when it answered as the API
// does (LR.2: the exception the last attempt ended with); for any other
// answer, only a category (BadAnswer, Timeout, ...): no other host's
// bytes go out through jinid.
//
// Every set, client lease (desired and last recorded expiration),
// listener registration and sequence number is in the store; a renewal's
// result is stored before it counts. After a restart renewals resume
// where they were: a lease whose renewal fell due while jinid was down is
// renewed at once.
package renewal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/pqueue"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// SetLease is the grantor's kind for renewal sets.
const SetLease = "renewal.set"

// Event IDs of the LR specification.
const (
	FailureEventID = 0 // RENEWAL_FAILURE_EVENT_ID
	WarningEventID = 1 // EXPIRATION_WARNING_EVENT_ID
)

// Event types.
const (
	FailureEvent = apitypes.RenewalFailureEventType
	WarningEvent = apitypes.ExpirationWarningEventType
)

const (
	setsBucket   = "renewal.sets"
	leasesBucket = "renewal.leases"
)

// DefaultPolicy leases sets for an hour unless asked otherwise, a day at
// most: the service is for clients that sleep.
var DefaultPolicy = lease.Policy{Default: 60 * 60_000, Max: 24 * 60 * 60_000}

// Defaults of the renewal engine.
const (
	DefaultSafetyMargin = 30 * time.Second
	DefaultRetry        = time.Second
	DefaultMaxRetry     = time.Minute
)

// Sender delivers events; *event.Dispatcher is one.
type Sender interface {
	Send(event.Delivery)
}

// Result is one lease's outcome of a renewAll call: its new expiration,
// or the error its grantor answered.
type Result struct {
	Expiration int64
	Err        *fault.Error
	// Retry: the grantor refused for now (503, 429, ...), whatever the
	// code it gave: an indefinite failure.
	Retry bool
}

// Renewer renews leases at their grantor: one renewAll call. An error
// means the call as a whole failed (unreachable grantor, 5xx): an
// indefinite failure for every lease in it.
type Renewer interface {
	RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error)
}

// Config gives the service its dependencies.
// DefaultMaxLeasesPerSet bounds the client leases of one renewal set.
const DefaultMaxLeasesPerSet = 10_000

type Config struct {
	Store   *store.Store
	Grantor *lease.Grantor
	// Outbound is where requests made on clients' behalf may go: each URL
	// handed in is checked against it. Nil means its fixed rules alone.
	Outbound   *outbound.Policy
	Dispatcher Sender
	Renewer    Renewer
	Policy     lease.Policy
	// SafetyMargin: leases are renewed this long (plus twice the
	// grantor's round trip) before they expire; 0 means 30 s.
	SafetyMargin time.Duration
	// BatchWindow: leases of one grantor due within this of the first are
	// renewed with it; 0 means a quarter of the safety margin.
	BatchWindow time.Duration
	// Retry is the first wait after an indefinite failure, doubling up to
	// MaxRetry.
	Retry, MaxRetry time.Duration
	Clock           clock.Clock
	Logger          *slog.Logger
	// MaxLeasesPerSet bounds the client leases of one set; 0 means
	// DefaultMaxLeasesPerSet.
	MaxLeasesPerSet int
	// Metrics, if set, counts renewal calls and failures by grantor.
	Metrics *metrics.Registry
	// NewID, if set, makes the IDs of new sets (ids.New's form) in place
	// of ids.New: a shard of a cluster's work makes IDs that say the
	// shard.
	NewID func() string
	// OnFailure, if set, hears of each renewal call that failed, whole
	// or for some of its leases, as a category (Unreachable, Timeout,
	// UnknownLease, ...) fit to show: never the grantor's own words (for
	// the status page's notable events).
	OnFailure func(grantor string, why fault.Code)
}

// ClientLease is a lease held in a set, as the API shows it.
type ClientLease struct {
	Grantor    string `json:"grantor"`
	ID         string `json:"id"`
	Expiration int64  `json:"expiration"`
	// HostLocal: the host's administrator handed it in, whose grantor
	// may be on this host (outbound.WithHostLocal).
	HostLocal bool `json:"hostLocal,omitempty"`
	// Java is the lease as a Java client handed it in (its object
	// stream), for one whose grantor Java names (a jeri: grantor): what
	// getLeases, remove and its failure event give back to Java.
	Java []byte `json:"java,omitempty"`
}

func (l ClientLease) key() string { return normalizeGrantor(l.Grantor) + "|" + l.ID }

// normalizeGrantor makes equal grantor URLs compare equal.
func normalizeGrantor(g string) string {
	u, err := url.Parse(g)
	if err != nil {
		return g
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimSuffix(u.Path, "/")
}

// member is a client lease in a set.
type member struct {
	ClientLease
	Set           string       `json:"set"`
	Desired       int64        `json:"desired"`
	RenewDuration int64        `json:"renewDuration"`
	LastErr       *fault.Error `json:"lastError,omitempty"`

	due      int64 // next renewal call, ms, while in its grantor's queue
	end      int64 // when it leaves the set: min(Expiration, Desired)
	failures int   // indefinite failures in a row
	period   int64 // length of the current lease period, ms
	graced   bool  // its end was put off for the answer of a call in flight
	dueSlot  int   // its place in its grantor's queue (pqueue)
	endSlot  int   // its place in the service's end queue (pqueue)
	busy     bool  // in a renewal call now
}

// listenerReg is a set's registration for one kind of event.
type listenerReg struct {
	// ID tells this registration from the one that replaces it, so that
	// a refusal by a replaced listener clears only its own (LR.2.1).
	ID         string `json:"id,omitempty"`
	URL        string `json:"url"`
	Handback   []byte `json:"handback"`
	MinWarning int64  `json:"minWarning,omitempty"`
	// HostLocal: the host's administrator named the listener.
	HostLocal bool `json:"hostLocal,omitempty"`
}

type set struct {
	ID        string       `json:"id"`
	Lease     string       `json:"lease"`
	Warning   *listenerReg `json:"warning,omitempty"`
	Failure   *listenerReg `json:"failure,omitempty"`
	WarnSeq   int64        `json:"warnSeq"`
	FailSeq   int64        `json:"failSeq"`
	WarnedFor int64        `json:"warnedFor"` // the set expiration the last warning was for

	members   map[string]*member
	warnTimer clock.Timer
}

// grantorQueue holds one grantor's client leases by due time.
type grantorQueue struct {
	url   string
	queue pqueue.Queue[*member] // by due time
	busy  bool                  // a renewal call is in flight
	rtt   time.Duration         // round trip, a moving average
	last  time.Duration         // the last round trip
	timer clock.Timer
	at    int64 // when timer fires; 0 if none
}

// Service is the lease renewal service.
type Service struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	run   *clock.Runner
	ctx   context.Context
	stop  context.CancelFunc

	// inflight counts renewal calls started and not yet recorded (tests
	// wait for it).
	inflight atomic.Int64

	mu       sync.Mutex
	sets     map[string]*set
	members  map[string]*member // by key
	grantors map[string]*grantorQueue
	ends     pqueue.Queue[*member] // by end
	endTimer clock.Timer
	endAt    int64 // when endTimer fires; 0 if none
	closed   bool

	calls, failures *metrics.Counter
}

// New loads the service and registers its lease kind; call the grantor's
// Load afterwards, then Start.
func New(cfg Config) (*Service, error) {
	if cfg.Renewer == nil {
		return nil, errors.New("renewal: Config.Renewer is required")
	}
	if cfg.Policy == (lease.Policy{}) {
		cfg.Policy = DefaultPolicy
	}
	if cfg.SafetyMargin == 0 {
		cfg.SafetyMargin = DefaultSafetyMargin
	}
	if cfg.BatchWindow == 0 {
		cfg.BatchWindow = cfg.SafetyMargin / 4
	}
	if cfg.Retry == 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.MaxRetry == 0 {
		cfg.MaxRetry = DefaultMaxRetry
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
	s := &Service{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, run: clock.NewRunner(cfg.Clock), ctx: ctx, stop: cancel,
		sets: map[string]*set{}, members: map[string]*member{}, grantors: map[string]*grantorQueue{},
		ends: pqueue.New(func(a, b *member) bool { return a.end < b.end }, func(m *member) *int { return &m.endSlot }),
		calls: cfg.Metrics.Counter("jinid_renewal_calls_total",
			"Renewal calls the lease renewal service made (each renews a batch of leases), by grantor.", "grantor"),
		failures: cfg.Metrics.Counter("jinid_renewal_failures_total",
			"Renewal calls that failed, whole or for some of their leases, by grantor.", "grantor")}
	if err := s.load(); err != nil {
		cancel()
		return nil, err
	}
	cfg.Grantor.Register(SetLease, cfg.Policy, s.release)
	cfg.Grantor.OnRenew(SetLease, func(r lease.Record) { s.setRenewed(r.Resource) })
	return s, nil
}

func (s *Service) load() error {
	return s.cfg.Store.View(func(tx *store.Tx) error {
		if err := tx.ForEach(setsBucket, func(k string, raw []byte) error {
			var st set
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("renewal set %s: %w", k, err)
			}
			st.members = map[string]*member{}
			s.sets[st.ID] = &st
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEach(leasesBucket, func(k string, raw []byte) error {
			var m member
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("client lease %s: %w", k, err)
			}
			if st := s.sets[m.Set]; st != nil {
				m.end = min(m.Expiration, m.Desired)
				st.members[m.key()] = &m
				s.members[m.key()] = &m
			}
			return nil
		})
	})
}

// Start schedules every client lease (those due while jinid was down at
// once) and every expiration warning.
func (s *Service) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, m := range s.members {
		s.schedule(m, now)
	}
	for _, st := range s.sets {
		s.armWarning(st)
	}
	return nil
}

// Shutdown stops renewing; leases in flight are abandoned (their state on
// disk is as before the call).
func (s *Service) Shutdown(context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, g := range s.grantors {
		if g.timer != nil {
			g.timer.Stop()
		}
	}
	for _, st := range s.sets {
		if st.warnTimer != nil {
			st.warnTimer.Stop()
		}
	}
	if s.endTimer != nil {
		s.endTimer.Stop()
	}
	s.mu.Unlock()
	s.stop()
	s.run.Stop()
	return nil
}

var _ lifecycle.Service = (*Service)(nil)

func (s *Service) now() int64 { return s.clock.Now().UnixMilli() }

// --- sets ----------------------------------------------------------------

// Created is a new set.
type Created struct {
	ID    string
	Lease lease.Record
}

// Create makes a renewal set leased for duration (createLeaseRenewalSet).
func (s *Service) Create(duration int64, owner string) (Created, error) {
	var out Created
	// Sets made at the same time share a commit: each is new, and its
	// lease counts against the quota with the others' (Grant).
	err := s.cfg.Store.Shared(func(tx *store.Tx) error {
		st := &set{ID: s.cfg.NewID(), members: map[string]*member{}}
		rec, err := s.cfg.Grantor.Grant(tx, SetLease, st.ID, owner, duration)
		if err != nil {
			return err
		}
		st.Lease = rec.ID
		if err := tx.Put(setsBucket, st.ID, st); err != nil {
			return err
		}
		tx.OnCommit(func() {
			s.mu.Lock()
			s.sets[st.ID] = st
			s.mu.Unlock()
		})
		out = Created{ID: st.ID, Lease: rec}
		return nil
	})
	return out, err
}

// SetInfo describes a set.
type SetInfo struct {
	ID      string
	Lease   string
	Warning *listenerReg
	Failure *listenerReg
	Leases  int
}

// Get describes a set.
func (s *Service) Get(id string) (SetInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sets[id]
	if st == nil {
		return SetInfo{}, noSuchSet(id)
	}
	return SetInfo{ID: st.ID, Lease: st.Lease, Warning: st.Warning, Failure: st.Failure, Leases: len(st.members)}, nil
}

func noSuchSet(id string) error {
	return fault.Gone("renewal set", id)
}

// release destroys a set whose lease ended: its client leases are let go
// (not cancelled). It runs inside the grantor's transaction.
func (s *Service) release(tx *store.Tx, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := tx.Delete(setsBucket, id); err != nil {
		return err
	}
	st := s.sets[id]
	if st == nil {
		return nil
	}
	for k, m := range st.members {
		if err := tx.Delete(leasesBucket, k); err != nil {
			return err
		}
		s.unschedule(m)
		delete(s.members, k)
	}
	if st.warnTimer != nil {
		st.warnTimer.Stop()
	}
	delete(s.sets, id)
	return nil
}

// --- renewFor, remove, getLeases -------------------------------------------

// RenewFor puts a client lease in a set (both forms of renewFor: the
// two-argument one is renewDuration FOREVER). The rules are LR.2's.
func (s *Service) RenewFor(setID string, l ClientLease, desiredDuration, renewDuration int64) error {
	if l.Grantor == "" || l.ID == "" {
		return fault.New(apitypes.NullArgument, "lease: grantor and id are required")
	}
	if l.Java == nil {
		if err := s.cfg.Outbound.CheckURL(outbound.HostLocalIf(context.Background(), l.HostLocal), "lease grantor", l.Grantor); err != nil {
			return err
		}
	}
	// A Java lease's grantor was read from the lease itself by the Java
	// side, which checked it; its calls go through the outbound dialer.
	if renewDuration <= 0 && !(renewDuration == lease.Any && desiredDuration == lease.Forever) {
		return fault.New(apitypes.InvalidArgument, "renewDuration %d: must be positive (or -1, ANY, when desiredDuration is FOREVER)", renewDuration)
	}
	now := s.now()
	if rec, err := s.cfg.Grantor.Get(l.ID); err == nil && rec.Kind == SetLease && l.Expiration > now {
		return fault.New(apitypes.InvalidArgument, "lease %s is a renewal set's lease granted by this renewal service; it cannot be renewed by it", l.ID)
	}
	desired := saturatingAdd(now, desiredDuration)
	var evs []event.Delivery
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.sets[setID]
		if st == nil || !s.cfg.Grantor.Live(st.Lease) {
			return noSuchSet(setID)
		}
		key := l.key()
		if m := s.members[key]; m != nil && m.Set != setID {
			return fault.New(apitypes.InvalidArgument, "lease %s is in another renewal set of this service", l.ID)
		}
		if m := st.members[key]; m != nil {
			// Already in the set: new durations, the lease itself kept.
			m.Desired, m.RenewDuration = desired, renewDuration
			if desired <= now || m.Expiration <= now {
				evs = append(evs, s.drop(tx, st, m, nil, now)...)
				return nil
			}
			if err := tx.Put(leasesBucket, key, m); err != nil {
				return err
			}
			tx.OnCommit(func() {
				s.mu.Lock()
				s.schedule(m, s.now())
				s.mu.Unlock()
			})
			return nil
		}
		m := &member{ClientLease: l, Set: setID, Desired: desired, RenewDuration: renewDuration, period: l.Expiration - now}
		if desired <= now || l.Expiration <= now {
			// Dropped at once; an event only if it ended before its
			// desired expiration.
			if l.Expiration < desired && l.Expiration <= now {
				evs = append(evs, s.failed(tx, st, m, nil, now)...)
			}
			return nil
		}
		if max := cmp.Or(s.cfg.MaxLeasesPerSet, DefaultMaxLeasesPerSet); len(st.members) >= max {
			return fault.Limit(apitypes.TooMany, "leasesPerSet", 60, "the set holds %d leases, the most one may", len(st.members))
		}
		if err := tx.Put(leasesBucket, key, m); err != nil {
			return err
		}
		tx.OnCommit(func() {
			s.mu.Lock()
			st.members[key] = m
			s.members[key] = m
			s.schedule(m, s.now())
			s.mu.Unlock()
		})
		return nil
	})
	s.send(evs)
	return err
}

// send delivers events that have a listener.
func (s *Service) send(evs []event.Delivery) {
	for _, e := range evs {
		if e.Listener != "" {
			s.cfg.Dispatcher.Send(e)
		}
	}
}

// Remove takes a client lease out of a set without cancelling it and
// returns it (nil if it was not there). key is "grantor|id", or the
// lease ID alone.
func (s *Service) Remove(setID, key string) (*ClientLease, error) {
	var out *ClientLease
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.sets[setID]
		if st == nil || !s.cfg.Grantor.Live(st.Lease) {
			return noSuchSet(setID)
		}
		m := st.find(key)
		if m == nil {
			return nil
		}
		if err := tx.Delete(leasesBucket, m.key()); err != nil {
			return err
		}
		s.forget(st, m)
		l := m.ClientLease
		out = &l
		return nil
	})
	return out, err
}

func (st *set) find(key string) *member {
	if m := st.members[key]; m != nil {
		return m
	}
	if g, id, ok := strings.Cut(key, "|"); ok {
		return st.members[ClientLease{Grantor: g, ID: id}.key()]
	}
	for _, m := range st.members {
		if m.ID == key {
			return m
		}
	}
	return nil
}

// Member is a client lease as getLeases shows it.
type Member struct {
	ClientLease
	Desired       int64
	RenewDuration int64
}

// Leases lists a set's client leases with their last recorded
// expirations (getLeases).
func (s *Service) Leases(setID string) ([]Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sets[setID]
	if st == nil {
		return nil, noSuchSet(setID)
	}
	out := make([]Member, 0, len(st.members))
	now := s.now()
	for _, m := range st.members {
		if m.end <= now && !s.awaited(m, now) {
			// Ended: on its way out of the set. (One whose renewal's
			// answer is awaited stays, as the end timer will find it:
			// the answer of a slow grantor comes about when the last
			// renewal expires.)
			continue
		}
		out = append(out, Member{ClientLease: m.ClientLease, Desired: m.Desired, RenewDuration: m.RenewDuration})
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// --- listeners -------------------------------------------------------------

// Registration is an event registration on a set.
type Registration struct {
	EventID int64
	SeqNum  int64
	Lease   string
}

// SetWarningListener registers (or replaces) the expiration warning
// listener: one event minWarning before the set's lease ends, at once if
// that is already past.
func (s *Service) SetWarningListener(ctx context.Context, setID, listener string, minWarning int64, handback []byte) (Registration, error) {
	if listener == "" {
		return Registration{}, fault.New(apitypes.NullArgument, "listener is required")
	}
	if err := s.cfg.Outbound.CheckListener(ctx, "listener", listener); err != nil {
		return Registration{}, err
	}
	if minWarning < 0 {
		return Registration{}, fault.New(apitypes.InvalidArgument, "minWarning %d: must be zero or positive", minWarning)
	}
	return s.setListener(setID, func(st *set) (*listenerReg, int64, int64) {
		st.Warning = &listenerReg{ID: ids.New(), URL: listener, Handback: handback, MinWarning: minWarning, HostLocal: outbound.IsHostLocal(ctx)}
		st.WarnedFor = 0
		return st.Warning, WarningEventID, st.WarnSeq
	})
}

// SetFailureListener registers (or replaces) the renewal failure
// listener.
func (s *Service) SetFailureListener(ctx context.Context, setID, listener string, handback []byte) (Registration, error) {
	if listener == "" {
		return Registration{}, fault.New(apitypes.NullArgument, "listener is required")
	}
	if err := s.cfg.Outbound.CheckListener(ctx, "listener", listener); err != nil {
		return Registration{}, err
	}
	return s.setListener(setID, func(st *set) (*listenerReg, int64, int64) {
		st.Failure = &listenerReg{ID: ids.New(), URL: listener, Handback: handback}
		return st.Failure, FailureEventID, st.FailSeq
	})
}

// ClearWarningListener and ClearFailureListener remove a registration;
// clearing none is fine.
func (s *Service) ClearWarningListener(setID string) error {
	_, err := s.setListener(setID, func(st *set) (*listenerReg, int64, int64) { st.Warning = nil; return nil, 0, 0 })
	return err
}

// ClearFailureListener: see ClearWarningListener.
func (s *Service) ClearFailureListener(setID string) error {
	_, err := s.setListener(setID, func(st *set) (*listenerReg, int64, int64) { st.Failure = nil; return nil, 0, 0 })
	return err
}

func (s *Service) setListener(setID string, change func(*set) (*listenerReg, int64, int64)) (Registration, error) {
	var out Registration
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.sets[setID]
		if st == nil || !s.cfg.Grantor.Live(st.Lease) {
			return noSuchSet(setID)
		}
		before := *st
		_, id, seq := change(st)
		if err := tx.Put(setsBucket, st.ID, st); err != nil {
			st.Warning, st.Failure, st.WarnedFor = before.Warning, before.Failure, before.WarnedFor
			return err
		}
		out = Registration{EventID: id, SeqNum: seq, Lease: st.Lease}
		tx.OnCommit(func() {
			s.mu.Lock()
			s.armWarning(st)
			s.mu.Unlock()
		})
		return nil
	})
	return out, err
}

// setRenewed re-arms the warning of a set whose lease was renewed.
func (s *Service) setRenewed(setID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.sets[setID]; st != nil {
		s.armWarning(st)
	}
}

// armWarning schedules the set's expiration warning; the caller holds mu.
func (s *Service) armWarning(st *set) {
	if st.warnTimer != nil {
		st.warnTimer.Stop()
		st.warnTimer = nil
	}
	if st.Warning == nil || s.closed {
		return
	}
	rec, err := s.cfg.Grantor.Get(st.Lease)
	if err != nil || rec.Expiration == lease.Never || st.WarnedFor == rec.Expiration {
		return
	}
	wait, ok := clock.UntilMilli(s.now(), rec.Expiration-st.Warning.MinWarning)
	if !ok {
		return
	}
	st.warnTimer = s.run.AfterFunc(wait, func() { s.warn(st.ID) })
}

func (s *Service) warn(setID string) {
	var ev *event.Delivery
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.sets[setID]
		if st == nil || st.Warning == nil {
			return nil
		}
		rec, err := s.cfg.Grantor.Get(st.Lease)
		if err != nil || st.WarnedFor == rec.Expiration {
			return nil
		}
		if s.now() < rec.Expiration-st.Warning.MinWarning {
			s.armWarning(st) // renewed meanwhile
			return nil
		}
		st.WarnSeq++
		st.WarnedFor = rec.Expiration
		if err := tx.Put(setsBucket, st.ID, st); err != nil {
			return err
		}
		d := s.delivery(st, st.Warning, WarningEventID, apitypes.ExpirationWarningEvent{
			RemoteEvent: s.remote(st, st.Warning, WarningEventID, st.WarnSeq, WarningEvent), Lease: rec.ID, Expiration: rec.Expiration})
		ev = &d
		return nil
	})
	if err != nil {
		s.log.Error("sending an expiration warning", "set", setID, "err", err)
	}
	if ev != nil {
		s.send([]event.Delivery{*ev})
	}
}

// failureEvent builds a renewal failure event (its sequence number taken
// now, and stored with the set by the caller). Without a listener there
// is nothing to send, but the number is used all the same. The lease in
// it carries the last expiration recorded: that of its last successful
// renewal, else the one it was added with (LR.2).
func (s *Service) failureEvent(st *set, m *member, cause *fault.Error, now int64) event.Delivery {
	st.FailSeq++
	ev := apitypes.RenewalFailureEvent{RemoteEvent: s.remote(st, st.Failure, FailureEventID, st.FailSeq, FailureEvent),
		Lease: apitypes.Lease{Grantor: m.Grantor, ID: m.ID, Expiration: m.Expiration, Remaining: apitypes.Remaining(m.Expiration, now)},
		Error: cause}
	d := s.delivery(st, st.Failure, FailureEventID, ev)
	if m.Java != nil {
		d.Native = JavaLease(m.Java)
	}
	return d
}

// JavaLease is what a failure event's delivery carries of a lease a
// Java client handed in: its object stream.
type JavaLease []byte

// remote is the common part of a set's events.
func (s *Service) remote(st *set, reg *listenerReg, eventID, seq int64, typ string) apitypes.RemoteEvent {
	ev := apitypes.RemoteEvent{Source: apitypes.EventSource{Service: "renewal", ID: st.ID}, EventID: eventID, SeqNum: seq, Type: typ}
	if reg != nil {
		ev.Handback = reg.Handback
	}
	return ev
}

func (s *Service) delivery(st *set, reg *listenerReg, eventID int64, ev event.Event) event.Delivery {
	if reg == nil {
		return event.Delivery{}
	}
	setID, regID := st.ID, reg.ID
	return event.Delivery{Listener: reg.URL, Deadline: s.cfg.Grantor.EndOf(st.Lease), Event: ev, HostLocal: reg.HostLocal,
		Done: func(o event.Outcome, err error) {
			if o == event.UnknownEvent || o == event.Definite {
				s.clearRefused(setID, eventID, regID, o, err)
			}
		}}
}

// clearRefused clears the registration whose listener refused an event:
// that registration only (LR.2.1), not one that has replaced it since.
func (s *Service) clearRefused(setID string, eventID int64, regID string, o event.Outcome, cause error) {
	cleared := false
	_, err := s.setListener(setID, func(st *set) (*listenerReg, int64, int64) {
		reg := &st.Failure
		if eventID == WarningEventID {
			reg = &st.Warning
		}
		if *reg != nil && (*reg).ID == regID {
			*reg, cleared = nil, true
		}
		return nil, 0, 0
	})
	switch {
	case err != nil && fault.CodeOf(err) != apitypes.NoSuchObject:
		s.log.Error("clearing a renewal set listener that refused an event", "set", setID, "eventID", eventID, "err", err)
	case cleared:
		s.log.Info("cleared a renewal set listener that refused an event", "set", setID, "eventID", eventID, "outcome", o, "err", cause)
	default:
		s.log.Debug("a replaced renewal set listener refused an event; its replacement stays", "set", setID, "eventID", eventID, "outcome", o)
	}
}

// --- the renewal engine -------------------------------------------------------
//
// A client lease is in up to two queues. Its grantor's renewal queue
// holds it, by due time, while a renewal is wanted and no call for it is
// in flight; one renewal call at a time per grantor takes every lease due
// within the batch window. The service's end queue holds every client
// lease by the time it leaves the set, min(actual, desired expiration),
// so a lease leaves on time whatever its grantor does (LR.2): one whose
// call hangs is dropped at its actual expiration, with its event. A
// queue whose earliest time is out of a timer's reach (FOREVER) has no
// timer at all.

// schedule files a client lease in the queues for what it needs next;
// the caller holds mu.
func (s *Service) schedule(m *member, now int64) {
	m.end, m.graced = min(m.Expiration, m.Desired), false
	s.ends.Update(m)
	s.armEnd()
	if m.busy {
		return // the call in flight schedules it when it returns
	}
	g := s.grantor(m.Grantor)
	due, ok := s.nextRenewal(g, m, now)
	if !ok {
		g.queue.Remove(m)
		return
	}
	m.due = due
	g.queue.Update(m)
	s.arm(g)
}

// nextRenewal is when a client lease should next be renewed; ok is false
// when it needs no renewal: its lease already reaches its desired
// expiration, or the next retry would come after its actual expiration.
func (s *Service) nextRenewal(g *grantorQueue, m *member, now int64) (int64, bool) {
	if m.Desired <= m.Expiration {
		return 0, false
	}
	if m.failures > 0 {
		backoff := min(s.cfg.Retry<<min(m.failures-1, 20), s.cfg.MaxRetry)
		at := now + backoff.Milliseconds()
		return at, at < m.Expiration
	}
	safety := s.cfg.SafetyMargin.Milliseconds()
	if m.period > 0 {
		safety = min(safety, m.period/2)
	}
	return max(m.Expiration-g.roundTrip().Milliseconds()-safety, now), true
}

// roundTrip is what a call to the grantor is expected to take: the
// larger of its moving average and its last one, so that a grantor
// slowing down is allowed for at once.
func (g *grantorQueue) roundTrip() time.Duration { return max(g.rtt, g.last) }

// measured takes a call's round trip.
func (g *grantorQueue) measured(rtt time.Duration) {
	g.last = rtt
	if g.rtt == 0 {
		g.rtt = rtt
		return
	}
	g.rtt = (3*g.rtt + rtt) / 4
}

// awaited reports whether a client lease at its end stays for the answer
// of a renewal: one under way, or due and about to start (a busy machine
// runs timers late), its end not yet put off once. The caller holds mu.
func (s *Service) awaited(m *member, now int64) bool {
	return (m.busy || s.renewalDue(m, now)) && !m.graced && m.end == m.Expiration && m.Expiration < m.Desired
}

// renewalDue reports whether a client lease's renewal is due by now and
// would start at once, its grantor not busy with another call (one that
// waits behind a hung call leaves on time); the caller holds mu.
func (s *Service) renewalDue(m *member, now int64) bool {
	g := s.grantors[normalizeGrantor(m.Grantor)]
	return g != nil && !g.busy && g.queue.Contains(m) && m.due <= now
}

// grace is how long past its end a lease whose renewal is under way
// stays, for the answer: a round trip of its grantor, and a second.
func (s *Service) grace(m *member) int64 {
	rtt := time.Duration(0)
	if g := s.grantors[normalizeGrantor(m.Grantor)]; g != nil {
		rtt = g.roundTrip()
	}
	return (rtt + time.Second).Milliseconds()
}

func (s *Service) grantor(url string) *grantorQueue {
	key := normalizeGrantor(url)
	g := s.grantors[key]
	if g == nil {
		g = &grantorQueue{url: key, queue: pqueue.New(func(a, b *member) bool { return a.due < b.due }, func(m *member) *int { return &m.dueSlot })}
		s.grantors[key] = g
	}
	return g
}

// unschedule takes a client lease out of both queues; the caller holds
// mu. The timers stay: one that finds nothing due re-arms for what is.
func (s *Service) unschedule(m *member) {
	if g := s.grantors[normalizeGrantor(m.Grantor)]; g != nil && g.queue.Contains(m) {
		g.queue.Remove(m)
		s.dropIdle(g)
	}
	s.ends.Remove(m)
}

// dropIdle forgets a grantor with nothing queued and no call in flight,
// so grantors come and go with their leases; the caller holds mu.
func (s *Service) dropIdle(g *grantorQueue) {
	if g.queue.Len() > 0 || g.busy {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
		g.timer, g.at = nil, 0
	}
	delete(s.grantors, g.url)
}

// arm sets the grantor's timer for its earliest due lease; the caller
// holds mu.
func (s *Service) arm(g *grantorQueue) {
	first, ok := g.queue.Min()
	if s.closed || g.busy || !ok {
		return
	}
	g.timer, g.at = s.rearm(g.timer, g.at, first.due, func() { s.fire(g) })
}

// armEnd sets the end timer for the earliest end; the caller holds mu.
func (s *Service) armEnd() {
	first, ok := s.ends.Min()
	if s.closed || !ok {
		return
	}
	s.endTimer, s.endAt = s.rearm(s.endTimer, s.endAt, first.end, s.fireEnds)
}

// rearm moves a timer armed for when (nil: none) to at; no timer at all
// when at is out of a timer's reach.
func (s *Service) rearm(t clock.Timer, when, at int64, f func()) (clock.Timer, int64) {
	if t != nil && when == at {
		return t, when
	}
	if t != nil {
		t.Stop()
	}
	wait, ok := clock.UntilMilli(s.now(), at)
	if !ok {
		return nil, 0
	}
	return s.run.AfterFunc(wait, f), at
}

// fire starts a renewal call for the grantor's due leases: the earliest,
// and every other due within the batch window.
func (s *Service) fire(g *grantorQueue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.timer, g.at = nil, 0
	if s.closed || g.busy {
		return
	}
	now := s.now()
	if first, ok := g.queue.Min(); !ok || first.due > now {
		s.arm(g) // fired early, or what it was set for has gone
		return
	}
	// One call's results are recorded in one transaction: a store in
	// etcd bounds its writes (a lease's record, and a failure event's),
	// so a call renews at most that many; the rest are due at once and
	// go in the next call.
	most := s.cfg.Store.Chunk(g.queue.Len(), 2)
	var batch []*member
	for m, ok := g.queue.Min(); ok && len(batch) < most && m.due <= now+s.cfg.BatchWindow.Milliseconds(); m, ok = g.queue.Min() {
		g.queue.Pop()
		m.busy = true
		batch = append(batch, m)
	}
	g.busy = true
	s.renew(g, batch, now)
}

// fireEnds takes the client leases whose end has come out of their sets:
// with a renewal failure event when the lease expired before its desired
// expiration, silently when it reached it.
func (s *Service) fireEnds() {
	s.mu.Lock()
	s.endTimer, s.endAt = nil, 0
	first, ok := s.ends.Min()
	due := !s.closed && ok && first.end <= s.now()
	if !due {
		s.armEnd()
	}
	s.mu.Unlock()
	if !due {
		return // no transaction for nothing
	}
	var evs []event.Delivery
	// The store's lock first, then mu, as everywhere.
	err := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		now := s.now()
		for m, ok := s.ends.Min(); ok && m.end <= now; m, ok = s.ends.Min() {
			if s.awaited(m, now) {
				// The call, when it returns, schedules it again.
				m.end, m.graced = m.end+s.grace(m), true
				s.ends.Update(m)
				continue
			}
			evs = append(evs, s.drop(tx, s.sets[m.Set], m, m.LastErr, now)...)
		}
		return nil
	})
	if err != nil {
		s.log.Error("taking ended client leases out of their sets", "err", err)
	}
	s.mu.Lock()
	s.armEnd()
	s.mu.Unlock()
	s.send(evs)
}

// drop takes a client lease out of its set; if it ended before its desired
// expiration, with a renewal failure event carrying cause (the last
// recorded failure, if any). The caller holds mu, in tx.
func (s *Service) drop(tx *store.Tx, st *set, m *member, cause *fault.Error, now int64) []event.Delivery {
	if err := tx.Delete(leasesBucket, m.key()); err != nil {
		s.log.Error("dropping a client lease", "lease", m.ID, "err", err)
	}
	s.forget(st, m)
	if m.Expiration <= now && m.Expiration < m.Desired {
		return s.failed(tx, st, m, cause, now)
	}
	return nil
}

// failed builds a client lease's renewal failure event and stores the
// set's sequence number it took.
func (s *Service) failed(tx *store.Tx, st *set, m *member, cause *fault.Error, now int64) []event.Delivery {
	ev := s.failureEvent(st, m, cause, now)
	if err := tx.Put(setsBucket, st.ID, st); err != nil {
		s.log.Error("storing a set's sequence number", "set", st.ID, "err", err)
	}
	return []event.Delivery{ev}
}

func (s *Service) forget(st *set, m *member) {
	s.unschedule(m)
	delete(st.members, m.key())
	delete(s.members, m.key())
}

// renew makes one renewAll call, in its own goroutine so that a hung
// grantor holds up nothing else, and records what it answered. The
// caller holds mu.
func (s *Service) renew(g *grantorQueue, batch []*member, now int64) {
	rs := make([]lease.Renewal, len(batch))
	for i, m := range batch {
		d := m.RenewDuration
		if m.Desired != math.MaxInt64 && d != lease.Any {
			d = min(d, m.Desired-now)
		}
		rs[i] = lease.Renewal{ID: m.ID, Duration: d}
	}
	grantorURL := batch[0].Grantor
	// The call may go to this host only if every lease of it was the
	// host's administrator's to hand in.
	hostLocal := !slices.ContainsFunc(batch, func(m *member) bool { return !m.HostLocal })
	s.inflight.Add(1)
	if !s.run.Go(func() {
		defer s.inflight.Add(-1)
		s.call(g, grantorURL, hostLocal, batch, rs)
	}) {
		s.inflight.Add(-1) // closed: nothing more to do
	}
}

func (s *Service) call(g *grantorQueue, grantorURL string, hostLocal bool, batch []*member, rs []lease.Renewal) {
	start := s.clock.Now()
	ctx, cancel := context.WithTimeout(outbound.HostLocalIf(s.ctx, hostLocal), 30*time.Second)
	results, err := s.cfg.Renewer.RenewAll(ctx, grantorURL, rs)
	cancel()
	rtt := s.clock.Now().Sub(start)
	s.countCall(g.url, results, err)
	var evs []event.Delivery
	uerr := s.cfg.Store.Update(func(tx *store.Tx) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			g.measured(rtt)
		}
		done := s.now()
		for i, m := range batch {
			m.busy = false
			st := s.sets[m.Set]
			if st == nil || st.members[m.key()] != m {
				continue // removed, or ended, meanwhile
			}
			switch {
			case err != nil || i >= len(results):
				m.failures++
				why := err
				if why == nil {
					why = errors.New("no result for this lease")
				}
				// The client hears a category; the log, what happened.
				m.LastErr = outbound.Fault(why)
				s.log.Debug("renewing a lease failed", "grantor", g.url, "lease", m.ID, "err", why)
			case results[i].Err == nil:
				m.period = results[i].Expiration - done
				m.Expiration, m.LastErr, m.failures = results[i].Expiration, nil, 0
			case definite(results[i].Err.Code) && !results[i].Retry:
				// It will not be renewed: out of the set now, its
				// expiration the last one recorded (LR.2).
				if err := tx.Delete(leasesBucket, m.key()); err != nil {
					return err
				}
				s.forget(st, m)
				evs = append(evs, s.failed(tx, st, m, results[i].Err, done)...)
				continue
			default:
				m.failures++
				m.LastErr = results[i].Err
			}
			if err := tx.Put(leasesBucket, m.key(), m); err != nil {
				return err
			}
			s.schedule(m, done)
		}
		// The grantor's next call may start while this record is being
		// written: what is due next depends on memory alone, and a crash
		// before the write only makes jinid renew at once after it. (A
		// slow disk must not eat the time a slow grantor leaves.)
		g.busy = false
		s.arm(g)
		return nil
	})
	if uerr != nil {
		s.log.Error("recording renewals", "grantor", g.url, "err", uerr)
	}
	s.mu.Lock()
	if !g.busy {
		s.arm(g)
	}
	s.dropIdle(g)
	s.mu.Unlock()
	s.send(evs)
}

// definite tells failures that retrying cannot mend.
func definite(c fault.Code) bool {
	switch c {
	case apitypes.UnknownLease, apitypes.LeaseDenied, apitypes.NoSuchObject, apitypes.InvalidArgument, apitypes.NullArgument:
		return true
	}
	return false
}

func saturatingAdd(now, d int64) int64 {
	if d > 0 && now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

// countCall counts a renewal call, and a failure if it failed whole or
// for any lease.
func (s *Service) countCall(grantor string, results []Result, err error) {
	s.calls.Inc(grantor)
	var why fault.Code
	if err != nil {
		why = outbound.Fault(err).Code
	} else {
		for _, r := range results {
			if r.Err != nil {
				why = r.Err.Code
				break
			}
		}
	}
	if why == "" {
		return
	}
	s.failures.Inc(grantor)
	if s.cfg.OnFailure != nil {
		s.cfg.OnFailure(grantor, why)
	}
}

// Count reports the renewal sets and the client leases in them, for
// metrics and the status page.
func (s *Service) Count() (sets, leases int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sets), len(s.members)
}

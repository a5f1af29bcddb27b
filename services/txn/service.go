package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// LeaseKind is the grantor's kind of a transaction's lease.
const LeaseKind = "transaction"

// DefaultPolicy bounds transaction leases: an hour at most, ten minutes
// when the client lets the grantor choose.
var DefaultPolicy = lease.Policy{Default: 10 * 60_000, Max: 60 * 60_000}

// ServiceConfig configures the transaction manager service.
type ServiceConfig struct {
	Store   *store.Store
	Grantor *lease.Grantor
	// Outbound checks every participant URL when it joins; Client calls
	// the participants (the daemon's outbound client, its own: a
	// participant's prepare may take long).
	Outbound *outbound.Policy
	Client   http1.Doer
	// Manager is the manager's URL as participants call it back (the
	// daemon's advertised API base URL).
	Manager string
	// Self, if set, says a URL names this manager too (a node of this
	// manager's cluster, which clients reach it through): a parent
	// transaction there is looked for here, not called as another
	// manager's.
	Self   func(url string) bool
	Policy lease.Policy
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics, if set, gets the manager's families (Config.Metrics).
	Metrics *metrics.Registry
	// Engine settings; zero means the engine's defaults.
	PrepareFor, Backoff, MaxBackoff       time.Duration
	MaxParticipants, MaxTotalParticipants int
	// NewID, Held and NoGauges are the engine's (Config).
	NewID    func() string
	Held     func() Counts
	NoGauges bool
}

// Service is the transaction manager as one of the daemon's services.
type Service struct {
	cfg     ServiceConfig
	eng     *Engine
	journal *StoreJournal

	callers  callers
	mu       sync.Mutex
	leaseIDs map[string]string // transaction ID → its lease ID
	closing  map[string]bool   // commit or abort received: its lease ends quietly
}

var _ lifecycle.Service = (*Service)(nil)

// NewService builds the service and resumes the roll-forward of the
// transactions committed before a restart: it is called before the API
// answers anything, so no participant hears "unknown transaction" for
// one the manager committed.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Policy == (lease.Policy{}) {
		cfg.Policy = DefaultPolicy
	}
	if cfg.Client == nil {
		cfg.Client = outbound.New(outbound.Config{Timeout: time.Minute, Policy: cfg.Outbound})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j := NewStoreJournal(cfg.Store)
	recs, err := j.Load()
	if err != nil {
		return nil, fmt.Errorf("transaction manager: %w", err)
	}
	s := &Service{cfg: cfg, journal: j, leaseIDs: map[string]string{}, closing: map[string]bool{}}
	s.callers.http = HTTPCaller{Client: cfg.Client, Manager: cfg.Manager}
	s.eng = New(Config{Caller: &s.callers, Journal: j, Clock: cfg.Clock,
		Logger: cfg.Logger, Metrics: cfg.Metrics, PrepareFor: cfg.PrepareFor, Backoff: cfg.Backoff, MaxBackoff: cfg.MaxBackoff,
		MaxParticipants: cfg.MaxParticipants, MaxTotalParticipants: cfg.MaxTotalParticipants, Parents: HTTPParents{Client: cfg.Client},
		NewID: cfg.NewID, Held: cfg.Held, NoGauges: cfg.NoGauges,
		LinkURL: func(id, token string) string {
			return strings.TrimSuffix(cfg.Manager, "/") + "/v1/transactions/" + id + "/links/" + token
		}})
	s.eng.Recover(recs)
	// Presumed abort: a transaction not yet committed ends with the
	// process, so its lease needs no disk either. The commit point is
	// the only write a transaction costs.
	cfg.Grantor.RegisterVolatile(LeaseKind, cfg.Policy, s.release)
	return s, nil
}

// Counts are the transactions the service holds, by state.
func (s *Service) Counts() Counts { return s.eng.Counts() }

// Count is how many transactions are open (ACTIVE or VOTING), and how
// many committed ones are still rolling forward.
func (s *Service) Count() (open, rollingForward int) {
	c := s.eng.Counts()
	return c.ByState[Active] + c.ByState[Voting], c.RollingForward
}

// Start implements lifecycle.Service.
func (s *Service) Start(context.Context) error { return nil }

// Shutdown stops the roll-forwards (the journal keeps them) and writes
// what the journal holds back.
func (s *Service) Shutdown(ctx context.Context) error {
	err := s.eng.Shutdown(ctx)
	s.journal.Flush()
	return err
}

// release is the grantor's: the lease expired or was cancelled. An ACTIVE
// transaction aborts; one whose commit or abort was received ends its
// lease quietly.
func (s *Service) release(_ *store.Tx, id string) error {
	s.mu.Lock()
	quiet := s.closing[id]
	delete(s.closing, id)
	delete(s.leaseIDs, id)
	s.mu.Unlock()
	if !quiet {
		s.eng.LeaseEnded(id)
	}
	return nil
}

// lapse ends, as the grantor's expiry would, the transactions among id
// and its ancestors on this manager whose leases have expired: at the
// moment of each call, whenever the grantor's timer runs. TX.2.5: letting
// the lease expire is equivalent to an abort, so a transaction whose
// lease has expired is not joined, committed or nested into, and reads
// ABORTED. (The expiry that follows finds it aborted and does nothing.)
func (s *Service) lapse(id string) {
	for seen := 0; id != "" && seen < maxNesting; seen++ {
		s.mu.Lock()
		lid, ok := s.leaseIDs[id]
		quiet := s.closing[id]
		s.mu.Unlock()
		if ok && !quiet {
			if _, err := s.cfg.Grantor.Get(lid); err != nil {
				s.eng.LeaseEnded(id)
			}
		}
		p, ok := s.eng.Parent(id)
		if !ok || p.Manager != "" {
			return // top-level, or the parent is another manager's
		}
		id = p.ID
	}
}

// maxNesting bounds the ancestors lapse looks at.
const maxNesting = 64

// Create starts a transaction with a lease of the requested duration:
// a top-level one if parent.ID is "", else one nested in parent, on this
// manager (parent.Manager "" or this one's) or on another.
func (s *Service) Create(ctx context.Context, requested int64, parent Ref, owner string) (string, lease.Record, error) {
	var id string
	var err error
	switch {
	case parent.ID == "":
		id = s.eng.Create()
	case s.mine(ctx, parent.Manager):
		s.lapse(parent.ID)
		id, err = s.eng.CreateNested(parent.ID)
	default:
		if err = s.cfg.Outbound.CheckURL(ctx, "parent.manager", parent.Manager); err != nil {
			return "", lease.Record{}, err
		}
		id, err = s.eng.CreateRemote(ctx, parent)
	}
	if err != nil {
		return "", lease.Record{}, codeOf(err)
	}
	rec, err := s.cfg.Grantor.Grant(nil, LeaseKind, id, owner, requested)
	if err != nil {
		s.eng.LeaseEnded(id) // never seen: aborts at once
		return "", lease.Record{}, err
	}
	s.mu.Lock()
	s.leaseIDs[id] = rec.ID
	s.mu.Unlock()
	return id, rec, nil
}

// mine says a parent's manager URL names this manager: none, its own,
// the one the client reached it at (answers show that one), or any
// other Self knows.
func (s *Service) mine(ctx context.Context, manager string) bool {
	if manager == "" || manager == s.cfg.Manager {
		return true
	}
	if b, ok := httpjson.BaseFrom(ctx); ok && b.URL != "" && strings.TrimSuffix(manager, "/") == b.URL {
		return true
	}
	return s.cfg.Self != nil && s.cfg.Self(manager)
}

// callers calls each participant with the caller of its URL: HTTP, or
// Java's for a jeri participant (none in a build without Java, which
// joins none).
type callers struct {
	http, java Caller
	_          [0]func() // not comparable: no equality code for it
}

func (c *callers) Call(ctx context.Context, p Participant, op apitypes.ParticipantOp, id string, attempt int) (apitypes.Vote, error) {
	if c.java != nil && strings.HasPrefix(p.URL, "jeri:") {
		return c.java.Call(ctx, p, op, id, attempt)
	}
	return c.http.Call(ctx, p, op, id, attempt)
}

// SetJavaCaller has Java participants (jeri://host:port/uuid) called by
// c; set before the service starts.
func (s *Service) SetJavaCaller(c Caller) { s.callers.java = c }

// Join adds a participant; its URL must be one the outbound policy
// lets jinid call, of a scheme the manager has a caller for.
func (s *Service) Join(id string, p Participant) error {
	ctx := outbound.HostLocalIf(context.Background(), p.HostLocal)
	var err error
	switch {
	case !strings.HasPrefix(p.URL, "jeri:"):
		err = s.cfg.Outbound.CheckURL(ctx, "participant", p.URL)
	case s.callers.java == nil:
		err = fault.New(apitypes.InvalidArgument, "participant %q: this manager calls http and https participants only", p.URL)
	default:
		err = s.cfg.Outbound.CheckListener(ctx, "participant", p.URL) // a Java participant
	}
	if err != nil {
		return err
	}
	s.lapse(id)
	return codeOf(s.eng.Join(id, p))
}

// State is the transaction's state, and a nested one's parent (its
// Manager this manager's URL when it is here).
func (s *Service) State(id string) (State, *Ref, error) {
	s.lapse(id)
	st, err := s.eng.State(id)
	if err != nil {
		return 0, nil, codeOf(err)
	}
	p, ok := s.eng.Parent(id)
	if !ok {
		return st, nil, nil
	}
	if p.Manager == "" {
		p.Manager = s.cfg.Manager
	}
	return st, &p, nil
}

// Promote takes participants promoted from a nested transaction on
// another manager, and drops that manager's link (TX.2.7).
func (s *Service) Promote(id string, parts []Participant, drop string) error {
	for _, p := range parts {
		if err := s.cfg.Outbound.CheckURL(outbound.HostLocalIf(context.Background(), p.HostLocal), "participant", p.URL); err != nil {
			return err
		}
	}
	s.lapse(id)
	return codeOf(s.eng.Promote(id, parts, drop))
}

// Commit commits; waitFor < 0 is the one-parameter form.
func (s *Service) Commit(ctx context.Context, id string, waitFor time.Duration) (State, error) {
	s.lapse(id)
	s.endLease(id)
	err := s.eng.Commit(ctx, id, waitFor)
	st, _ := s.eng.State(id)
	return st, codeOf(err)
}

// Abort aborts; waitFor < 0 is the one-parameter form.
func (s *Service) Abort(ctx context.Context, id string, waitFor time.Duration) (State, error) {
	s.lapse(id)
	s.endLease(id)
	err := s.eng.Abort(ctx, id, waitFor)
	st, _ := s.eng.State(id)
	return st, codeOf(err)
}

// endLease ends the transaction's lease once commit or abort is
// received: renewing or cancelling it then answers UnknownLease.
func (s *Service) endLease(id string) {
	s.mu.Lock()
	lid, ok := s.leaseIDs[id]
	if ok {
		s.closing[id] = true
	}
	s.mu.Unlock()
	if ok {
		s.cfg.Grantor.Cancel(lid)
	}
}

// codeOf turns the engine's errors into the API's coded ones.
func codeOf(err error) error {
	var te *TimeoutExpired
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		committed := te.Committed
		return &fault.Error{Code: apitypes.TimeoutExpired, Message: te.Error(), Committed: &committed}
	case errors.Is(err, ErrUnknownTransaction):
		return fault.New(apitypes.UnknownTransaction, "no such transaction")
	case errors.Is(err, ErrCannotJoin):
		return fault.New(apitypes.CannotJoin, "%s", err)
	case errors.Is(err, ErrCannotCommit):
		return fault.New(apitypes.CannotCommit, "%s", err)
	case errors.Is(err, ErrCannotAbort):
		return fault.New(apitypes.CannotAbort, "%s", err)
	case errors.Is(err, ErrCrashCount):
		return fault.New(apitypes.CrashCount, "%s", err)
	case errors.Is(err, ErrOutcomeUnknown):
		return fault.New(apitypes.OutcomeUnknown, "%s", err)
	case errors.Is(err, ErrTooManyParticipants):
		return fault.Limit(apitypes.TooMany, "participants", 0, "%s", err)
	case errors.Is(err, ErrParentRefused):
		return fault.New(apitypes.Forbidden, "%s", err)
	case errors.Is(err, ErrIndefinite):
		return outbound.Fault(err) // the parent's manager: a category, never its answer
	}
	return err
}

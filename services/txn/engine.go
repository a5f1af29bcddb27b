// Package txn is the transaction manager (the Jini Transaction
// specification, TX): transactions that participants join, and the
// two-phase commit the manager runs when a client commits, with its
// decision kept through crashes (TX.2.8).
//
// This file is the engine: states, joins, voting, the commit point and
// the roll-forward, on an injected clock and with the participants behind
// a Caller, so that every rule can be tested without a network. Where
// the specification's 1.x text and its later version differ, the later
// one is followed: prepare's votes are NOTCHANGED, ABORTED or PREPARED
// (the 1.x "COMMITTED" in TX.2.7 is an erratum), and an outcome that
// prepareAndCommit leaves unknowable is told as such (ErrOutcomeUnknown),
// never as success or CannotCommit.
//
// Three rules the text leaves to the reader, as the reference manager
// (Mahalo) reads them:
//   - TX.2.5: a commit of a transaction that aborts fails with
//     CannotCommit, whatever its waitFor, as soon as the abort is
//     decided; TimeoutExpired is for a transaction that committed (or,
//     from abort, aborted) but whose participants were not all told
//     within waitFor.
//   - TX.2.5: a transaction whose lease expired is aborted at the moment
//     of the next call on it, whenever the grantor's expiry runs
//     (Service.lapse).
//   - TX.2.7: every participant is asked to prepare at once, so voting
//     takes one round (the slowest voter) whatever their number;
//     prepareAndCommit goes to a transaction's one participant only.
package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
)

// State is a transaction's state as the manager sees it (TX.2.7).
type State int

// The states getState reports. PREPARED is a participant's state only.
const (
	Active State = iota + 1
	Voting
	Committed
	Aborted
)

func (s State) String() string {
	switch s {
	case Active:
		return "ACTIVE"
	case Voting:
		return "VOTING"
	case Committed:
		return "COMMITTED"
	case Aborted:
		return "ABORTED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Errors of the client's and the joiners' operations (TX.2.5, TX.2.7),
// and the participants' definite answers.
var (
	ErrUnknownTransaction  = errors.New("unknown transaction")
	ErrCannotJoin          = errors.New("the transaction is no longer active: it cannot be joined")
	ErrCannotCommit        = errors.New("the transaction aborted: it cannot commit")
	ErrCannotAbort         = errors.New("the transaction committed: it cannot abort")
	ErrCrashCount          = errors.New("the participant joined before with another crash count: the transaction is aborted")
	ErrOutcomeUnknown      = errors.New("the outcome of the transaction cannot be known: its one participant was asked to prepare and commit and then forgot the transaction")
	ErrNoSuchObject        = errors.New("no such object")
	ErrTooManyParticipants = errors.New("too many participants")
)

// TimeoutExpired is commit's or abort's error when waitFor passed before
// every participant was told the outcome, which was decided
// (Committed says which).
type TimeoutExpired struct{ Committed bool }

func (e *TimeoutExpired) Error() string {
	if e.Committed {
		return "the transaction committed, but not every participant was told within waitFor"
	}
	return "the transaction aborted, but not every participant was told within waitFor"
}

// Participant is a joiner: where the manager calls it, and the crash
// count it joined with.
type Participant struct {
	URL        string `json:"url"`
	CrashCount int64  `json:"crashCount"`
	// HostLocal: the host's administrator joined it, and it may be on
	// this host (outbound.WithHostLocal). Set from the request's
	// caller, never from what a request says.
	HostLocal bool `json:"hostLocal,omitempty"`
}

// Caller makes a participant call. An error wrapping ErrUnknownTransaction
// or ErrNoSuchObject is the participant's definite answer; any other error
// is indefinite (the call may be tried again).
type Caller interface {
	Call(ctx context.Context, p Participant, op apitypes.ParticipantOp, id string, attempt int) (apitypes.Vote, error)
}

// Journal keeps the commit points (TX.2.8): the PREPARED participants of
// a committed transaction, until every one has rolled forward. Nothing
// else is written (presumed abort).
type Journal interface {
	// Committed makes the decision durable; the transaction commits only
	// once it returns nil.
	Committed(id string, prepared []Participant) error
	// Finished forgets a committed transaction every participant of
	// which rolled forward.
	Finished(id string) error
}

// boundedCaller lets at most cap(slots) calls run at once, and counts
// them.
type boundedCaller struct {
	Caller
	slots chan struct{}
	calls *metrics.Counter
}

func (c *boundedCaller) Call(ctx context.Context, p Participant, op apitypes.ParticipantOp, id string, attempt int) (apitypes.Vote, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: waiting to call: %w", ErrIndefinite, ctx.Err())
	}
	defer func() { <-c.slots }()
	v, err := c.Caller.Call(ctx, p, op, id, attempt)
	outcome := "answered"
	switch {
	case errors.Is(err, ErrUnknownTransaction), errors.Is(err, ErrNoSuchObject):
		outcome = "unknown"
	case err != nil:
		outcome = "failed"
	}
	c.calls.Inc(string(op), outcome)
	return v, err
}

// Record is a committed transaction still rolling forward, as the
// journal gives it back after a restart.
type Record struct {
	ID       string
	Prepared []Participant
}

// Config configures an Engine. Zero durations take the defaults.
type Config struct {
	Caller  Caller
	Journal Journal
	Clock   clock.Clock
	Logger  *slog.Logger
	// Metrics, if set, counts outcomes and participant calls, and
	// reads the transactions held (see registerMetrics).
	Metrics *metrics.Registry
	// PrepareFor bounds how long a participant's indefinite prepare
	// failures are retried before the transaction aborts (default 2 min).
	PrepareFor time.Duration
	// Backoff after an indefinite failure, doubling up to MaxBackoff
	// (defaults 100 ms and 30 s); commits are retried for ever.
	Backoff, MaxBackoff time.Duration
	// MaxParticipants bounds a transaction's joiners (default 1024), and
	// MaxTotalParticipants the joiners of all transactions held (default
	// 8192): each costs memory, and a goroutine while it is called.
	MaxParticipants, MaxTotalParticipants int
	// Retain is how long a completed transaction's state is still
	// answered, once every participant heard the outcome (default 1 min),
	// for MaxRetained transactions at most (default 4096; the oldest go
	// first).
	Retain      time.Duration
	MaxRetained int
	// MaxCalls bounds the participant calls in flight, over all
	// transactions (default 512): each is a goroutine and a connection.
	// Calls beyond it wait for one to end; each transaction's calls run
	// side by side, so a slow participant holds only its own.
	MaxCalls int
	// Parents reaches parents on other managers; LinkURL is where a
	// nested transaction's link is served (see CreateRemote). Without
	// them, parents are on this manager only.
	Parents Parents
	LinkURL func(id, token string) string
	// NewID, if set, makes the IDs of new transactions (ids.New's form)
	// in place of ids.New: a shard of a cluster's work makes IDs that
	// say the shard.
	NewID func() string
	// Held, if set, is what the gauges of the transactions held read in
	// place of this engine's Counts (a daemon's sum over the engines of
	// its shards and its own); an engine whose transactions another's
	// Held counts says NoGauges, and registers its counters alone.
	Held     func() Counts
	NoGauges bool
}

// Engine runs transactions.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// incarnation is this engine's crash count as a participant of
	// other managers' transactions (the links): every start is a new
	// one, since nested transactions do not outlive the process.
	incarnation int64

	outcomes *metrics.Counter
	// logs lets through a line about a participant's failures now and
	// then: participants are remote hosts, and may fail in floods.
	logs rate.Sometimes

	mu       sync.Mutex
	txs      map[string]*txn
	joined   int         // participants of the transactions held
	retained []retention // completed, oldest first
	sweep    clock.Timer // forgets the oldest retained when due
}

// txn is one transaction.
type txn struct {
	id    string
	state State
	parts []Participant
	// deciding is set while the commit decision is being made durable:
	// an abort then waits for the outcome.
	deciding bool
	unknown  bool          // the outcome cannot be known
	decided  chan struct{} // closed once COMMITTED or ABORTED
	notified chan struct{} // closed once every participant was told
	prepared []Participant
	votes    map[string]apitypes.Vote // by participant URL, once answered
	stop     context.CancelFunc
	// A nested transaction's parent (on this manager), and a
	// transaction's nested ones (TX.3).
	parent   *txn
	children []*txn
	// A nested transaction's parent on another manager, the token of
	// its link there, and the link as that parent's participant.
	remote *Ref
	token  string
	link   Participant
}

// New returns an engine; Recover loads what a restart left rolling
// forward, Shutdown stops it.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PrepareFor == 0 {
		cfg.PrepareFor = 2 * time.Minute
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.MaxParticipants == 0 {
		cfg.MaxParticipants = 1024
	}
	if cfg.MaxTotalParticipants == 0 {
		cfg.MaxTotalParticipants = 8192
	}
	if cfg.Retain == 0 {
		cfg.Retain = time.Minute
	}
	if cfg.MaxRetained == 0 {
		cfg.MaxRetained = 4096
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = 512
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.New
	}
	calls := cfg.Metrics.Counter("jinid_transaction_participant_calls_total",
		"Calls the transaction manager made of participants (and of parents' links), by operation and outcome (answered, unknown: UnknownTransaction or NoSuchObject, failed: no definite answer).", "op", "outcome")
	cfg.Caller = &boundedCaller{Caller: cfg.Caller, slots: make(chan struct{}, cfg.MaxCalls), calls: calls}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, log: cfg.Logger.With("component", "txn"), ctx: ctx, cancel: cancel, txs: map[string]*txn{},
		incarnation: rand.Int64(), logs: rate.Sometimes{First: 3, Interval: 10 * time.Second}}
	e.registerMetrics(cfg.Metrics)
	return e
}

// registerMetrics adds the engine's families to m (nil: none).
func (e *Engine) registerMetrics(m *metrics.Registry) {
	e.outcomes = m.Counter("jinid_transactions_completed_total",
		"Transactions decided, by outcome (committed, aborted, unknown: prepareAndCommit left it unknowable); a nested one's commit is its promotion into the parent.", "outcome")
	if e.cfg.NoGauges {
		return
	}
	held := e.Counts
	if e.cfg.Held != nil {
		held = e.cfg.Held
	}
	m.GaugeFunc("jinid_transactions", "Transactions the manager holds, by state (active, voting, committed, aborted); completed ones are held for a minute after every participant was told.",
		[]string{"state"}, func(emit func(float64, ...string)) {
			c := held()
			for s := Active; s <= Aborted; s++ {
				emit(float64(c.ByState[s]), strings.ToLower(s.String()))
			}
		})
	m.GaugeFunc("jinid_transactions_rolling_forward", "Committed transactions with participants still to be told commit (retried until each answers; kept on disk).",
		nil, func(emit func(float64, ...string)) { emit(float64(held().RollingForward)) })
}

// Counts are the transactions an engine holds.
type Counts struct {
	ByState [Aborted + 1]int // indexed by State
	// RollingForward is how many committed ones have participants
	// still to be told.
	RollingForward int
}

// Counts counts the transactions held, for metrics and the status page.
func (e *Engine) Counts() Counts {
	var c Counts
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.txs {
		c.ByState[t.state]++
		if t.state == Committed && len(t.prepared) > 0 && !isClosed(t.notified) {
			c.RollingForward++
		}
	}
	return c
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// decidedLocked closes t.decided once t is COMMITTED or ABORTED, and
// counts the outcome.
func (e *Engine) decidedLocked(t *txn) {
	outcome := "aborted"
	switch {
	case t.unknown:
		outcome = "unknown"
	case t.state == Committed:
		outcome = "committed"
	}
	e.outcomes.Inc(outcome)
	close(t.decided)
}

// Shutdown stops every roll-forward and abort notification and waits for
// them; committed transactions stay in the journal for the next start.
func (e *Engine) Shutdown(context.Context) error {
	e.cancel()
	e.wg.Wait()
	e.mu.Lock()
	if e.sweep != nil {
		e.sweep.Stop()
		e.sweep = nil
	}
	e.mu.Unlock()
	return nil
}

// Recover resumes the roll-forward of committed transactions. It is
// called before the API answers anything, so that no participant hears
// "unknown transaction" for a committed one.
func (e *Engine) Recover(recs []Record) {
	for _, r := range recs {
		t := &txn{id: r.ID, state: Committed, prepared: r.Prepared, decided: make(chan struct{}), notified: make(chan struct{})}
		close(t.decided)
		e.mu.Lock()
		e.txs[r.ID] = t
		e.mu.Unlock()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.rollForward(t)
		}()
	}
}

// Create starts a transaction and returns its ID.
func (e *Engine) Create() string {
	t := &txn{id: e.cfg.NewID(), state: Active, decided: make(chan struct{}), notified: make(chan struct{}), votes: map[string]apitypes.Vote{}}
	e.mu.Lock()
	e.txs[t.id] = t
	e.mu.Unlock()
	return t.id
}

// CreateNested starts a transaction nested in parent (TX.3): while
// parent is ACTIVE, else ErrCannotJoin.
func (e *Engine) CreateNested(parent string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.txs[parent]
	switch {
	case p == nil:
		return "", ErrUnknownTransaction
	case p.state != Active:
		return "", ErrCannotJoin
	}
	t := &txn{id: e.cfg.NewID(), state: Active, decided: make(chan struct{}), notified: make(chan struct{}), votes: map[string]apitypes.Vote{}, parent: p}
	p.children = append(p.children, t)
	e.txs[t.id] = t
	return t.id, nil
}

// EnclosedBy reports whether id is nested, at any depth, in ancestor.
func (e *Engine) EnclosedBy(id, ancestor string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, a := e.txs[id], e.txs[ancestor]
	if t == nil || a == nil {
		return false, ErrUnknownTransaction
	}
	for p := t.parent; p != nil; p = p.parent {
		if p == a {
			return true, nil
		}
	}
	return false, nil
}

// LeaseEnded is the grantor's word that the transaction's lease expired
// or was cancelled: an ACTIVE transaction aborts (TX.2.5); one being
// voted on or decided goes on.
func (e *Engine) LeaseEnded(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.txs[id]; t != nil && t.state == Active {
		e.abortLocked(t)
	}
}

// State is the transaction's state.
func (e *Engine) State(id string) (State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.txs[id]
	if t == nil {
		return 0, ErrUnknownTransaction
	}
	return t.state, nil
}

// Join adds a participant (TX.2.7): only while ACTIVE; the same URL with
// the same crash count again is a no-op, with another it is
// ErrCrashCount and the transaction aborts.
func (e *Engine) Join(id string, p Participant) error {
	e.mu.Lock()
	t := e.txs[id]
	if t == nil {
		e.mu.Unlock()
		return ErrUnknownTransaction
	}
	if t.state != Active {
		e.mu.Unlock()
		return ErrCannotJoin
	}
	for _, q := range t.parts {
		if q.URL != p.URL {
			continue
		}
		if q.CrashCount == p.CrashCount {
			e.mu.Unlock()
			return nil
		}
		e.abortLocked(t)
		e.mu.Unlock()
		return ErrCrashCount
	}
	if err := e.roomLocked(t, 1); err != nil {
		e.mu.Unlock()
		return err
	}
	t.parts = append(t.parts, p)
	e.joined++
	e.mu.Unlock()
	return nil
}

// Commit commits the transaction (TX.2.5). waitFor < 0 is the
// one-parameter form: it returns once the outcome is decided; otherwise,
// when the transaction committed, it also waits, up to waitFor, for
// every participant to be told, else it returns *TimeoutExpired with
// Committed true (never before the outcome is decided). A transaction
// that aborted fails commit with ErrCannotCommit whatever waitFor, as
// soon as that is decided (TX.2.5: "If the transaction reaches the
// ABORTED state ... commit throws CannotCommitException"; a
// TimeoutExpired with committed false is abort's, as in the reference
// manager).
func (e *Engine) Commit(ctx context.Context, id string, waitFor time.Duration) error {
	start := e.cfg.Clock.Now()
	t, err := e.begin(id, e.beginVotingLocked)
	if err != nil {
		return err
	}
	if err := e.waitDecided(ctx, t); err != nil {
		return err
	}
	e.mu.Lock()
	unknown, aborted := t.unknown, t.state == Aborted
	e.mu.Unlock()
	switch {
	case unknown:
		return ErrOutcomeUnknown
	case aborted:
		return ErrCannotCommit
	}
	return e.waitNotified(ctx, t, start, waitFor)
}

// Abort aborts the transaction (TX.2.5): at once while ACTIVE or VOTING;
// ErrCannotAbort once COMMITTED is durable. waitFor is as for Commit.
func (e *Engine) Abort(ctx context.Context, id string, waitFor time.Duration) error {
	t, err := e.complete(ctx, id, waitFor, func(t *txn) {
		if !t.deciding && (t.state == Active || t.state == Voting) {
			e.abortLocked(t)
		}
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.state == Committed {
		return ErrCannotAbort
	}
	return nil
}

// complete runs begin on the transaction under the lock, then waits as
// waitFor says (see wait).
func (e *Engine) complete(ctx context.Context, id string, waitFor time.Duration, begin func(*txn)) (*txn, error) {
	start := e.cfg.Clock.Now()
	t, err := e.begin(id, begin)
	if err != nil {
		return nil, err
	}
	return t, e.wait(ctx, t, start, waitFor)
}

// begin runs f on the transaction under the lock.
func (e *Engine) begin(id string, f func(*txn)) (*txn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.txs[id]
	if t == nil {
		return nil, ErrUnknownTransaction
	}
	f(t)
	return t, nil
}

// beginVotingLocked starts the voting of an ACTIVE transaction.
func (e *Engine) beginVotingLocked(t *txn) {
	if t.state != Active {
		return
	}
	t.state = Voting
	// A nested transaction still ACTIVE can no longer commit into this
	// one.
	for _, c := range t.children {
		if c.state == Active {
			e.abortLocked(c)
		}
	}
	vctx, stop := context.WithCancel(e.ctx)
	t.stop = stop
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.vote(vctx, t)
	}()
}

// wait waits for the decision, and with waitFor ≥ 0 for the
// notifications up to start+waitFor.
func (e *Engine) wait(ctx context.Context, t *txn, start time.Time, waitFor time.Duration) error {
	if err := e.waitDecided(ctx, t); err != nil {
		return err
	}
	return e.waitNotified(ctx, t, start, waitFor)
}

// waitDecided waits for the decision.
func (e *Engine) waitDecided(ctx context.Context, t *txn) error {
	select {
	case <-t.decided:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitNotified waits, with waitFor ≥ 0, for the notifications of a
// decided transaction up to start+waitFor.
func (e *Engine) waitNotified(ctx context.Context, t *txn, start time.Time, waitFor time.Duration) error {
	if waitFor < 0 {
		return nil
	}
	left := waitFor - e.cfg.Clock.Now().Sub(start)
	if left > 0 {
		expired := make(chan struct{})
		timer := e.cfg.Clock.AfterFunc(left, func() { close(expired) })
		defer timer.Stop()
		select {
		case <-t.notified:
			return nil
		case <-expired:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-t.notified:
		return nil
	default:
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return &TimeoutExpired{Committed: t.state == Committed}
}

// abortLocked moves t to ABORTED and tells its participants (best
// effort): those that voted PREPARED, those whose vote is still coming,
// and those not yet asked; not those that voted NOTCHANGED (dropped: no
// further communication, TX.2.7) or ABORTED, nor one whose
// prepareAndCommit may have committed.
func (e *Engine) abortLocked(t *txn) {
	if t.state == Aborted || t.state == Committed {
		return
	}
	t.state = Aborted
	t.deciding = false
	if t.stop != nil {
		t.stop()
	}
	// Aborting a transaction aborts the nested ones not yet committed
	// (TX.2.7); the committed ones' results are dropped with it (their
	// participants are this one's now, told below).
	e.dropLocked(t.children)
	var tell []Participant
	for _, p := range t.parts {
		if v := t.votes[p.URL]; v != apitypes.VoteNotChanged && v != apitypes.VoteAborted && v != apitypes.VoteCommitted {
			tell = append(tell, p)
		}
	}
	if len(tell) == 0 {
		e.toldLocked(t) // nobody to tell: told as it is decided
		e.decidedLocked(t)
		return
	}
	e.decidedLocked(t)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.tellAbort(t, tell)
	}()
}

// tellAbort calls abort on each participant, a few times at most.
func (e *Engine) tellAbort(t *txn, ps []Participant) {
	defer e.told(t)
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			backoff := e.cfg.Backoff
			for attempt := 1; attempt <= 3; attempt++ {
				_, err := e.cfg.Caller.Call(e.ctx, p, apitypes.OpAbort, t.id, attempt)
				if err == nil || errors.Is(err, ErrUnknownTransaction) || errors.Is(err, ErrNoSuchObject) || !e.sleep(e.ctx, backoff) {
					return
				}
				backoff = min(2*backoff, e.cfg.MaxBackoff)
			}
		})
	}
	wg.Wait()
}

// sleep waits d on the engine's clock; false if ctx ended first.
func (e *Engine) sleep(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	t := e.cfg.Clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// vote runs the voting (TX.2.7): every participant is asked to prepare
// at once, so that voting takes as long as the slowest voter, whatever
// the number of participants; the outcome is decided once all have
// voted. A transaction with one participant asks it to prepare and
// commit in one call instead, as the reference manager does. Not a
// nested transaction: a participant that committed there would have
// rolled its changes into the parent without being promoted, and so
// would never hear whether the parent commits. (The 1.x text also
// allows prepareAndCommit for the last participant once every other one
// voted NOTCHANGED; holding that one back until the others answer costs
// a whole prepare time in the common case to save a round trip in a
// rare one, so jinid does not.)
func (e *Engine) vote(ctx context.Context, t *txn) {
	e.mu.Lock()
	parts := append([]Participant(nil), t.parts...)
	e.mu.Unlock()
	switch {
	case len(parts) == 0:
		e.decide(t, nil)
		return
	case len(parts) == 1 && t.parent == nil && t.remote == nil:
		e.prepareAndCommit(ctx, t, parts[0])
		return
	}
	votes := make([]apitypes.Vote, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { votes[i] = e.prepare(ctx, t, p, apitypes.OpPrepare) })
	}
	wg.Wait()
	var prepared []Participant
	for i, v := range votes {
		switch v {
		case apitypes.VoteAborted:
			e.abort(t)
			return
		case apitypes.VotePrepared:
			prepared = append(prepared, parts[i])
		}
	}
	e.decide(t, prepared)
}

// prepareAndCommit asks a transaction's one participant to prepare and
// commit in one call. From then on the decision is the participant's: an
// abort waits for its answer, as for a decision being written.
func (e *Engine) prepareAndCommit(ctx context.Context, t *txn, p Participant) {
	e.mu.Lock()
	if t.state != Voting {
		e.mu.Unlock()
		return
	}
	t.deciding = true
	e.mu.Unlock()
	v := e.prepare(ctx, t, p, apitypes.OpPrepareAndCommit)
	switch v { // each way ends deciding
	case apitypes.VoteAborted:
		e.abort(t)
	case apitypes.VotePrepared: // tolerated: a commit follows
		e.decide(t, []Participant{p})
	case 0: // unknowable: it may have committed, then forgotten
		e.mu.Lock()
		t.unknown = true
		// Never told abort: it may have committed.
		t.votes[p.URL] = apitypes.VoteCommitted
		e.abortLocked(t)
		e.mu.Unlock()
	default: // COMMITTED or NOTCHANGED: nothing left to tell
		e.decide(t, nil)
	}
}

// abort aborts t unless it was decided meanwhile.
func (e *Engine) abort(t *txn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.abortLocked(t)
}

// prepare asks p to vote, retrying indefinite failures for PrepareFor.
// UnknownTransaction or NoSuchObject is a vote to abort; for
// prepareAndCommit, after an indefinite failure, it means the outcome
// cannot be known (0), as does the engine stopping once it was sent.
func (e *Engine) prepare(ctx context.Context, t *txn, p Participant, op apitypes.ParticipantOp) apitypes.Vote {
	deadline := e.cfg.Clock.Now().Add(e.cfg.PrepareFor)
	backoff := e.cfg.Backoff
	failed := false
	stopped := apitypes.VoteAborted
	if op == apitypes.OpPrepareAndCommit {
		stopped = 0
	}
	for attempt := 1; ; attempt++ {
		v, err := e.cfg.Caller.Call(ctx, p, op, t.id, attempt)
		switch {
		case err == nil && (v == apitypes.VoteCommitted && op == apitypes.OpPrepareAndCommit || v >= apitypes.VoteNotChanged && v <= apitypes.VoteAborted):
			e.mu.Lock()
			if t.state == Voting {
				t.votes[p.URL] = v
			}
			e.mu.Unlock()
			return v
		case errors.Is(err, ErrUnknownTransaction), errors.Is(err, ErrNoSuchObject):
			if op == apitypes.OpPrepareAndCommit && failed {
				return 0
			}
			return apitypes.VoteAborted
		}
		if ctx.Err() != nil {
			// Shutting down (or, for prepare, aborted meanwhile): a
			// prepareAndCommit sent may have committed.
			return stopped
		}
		failed = true
		if err == nil {
			e.log.Warn("participant answered an impossible vote", "participant", p.URL, "op", op, "vote", v)
		}
		if !e.cfg.Clock.Now().Add(backoff).Before(deadline) {
			e.logs.Do(func() {
				e.log.Warn("a participant gave no vote within the prepare time: the transaction aborts",
					"participant", p.URL, "id", t.id, "op", op, "attempts", attempt, "err", err)
			})
			if op == apitypes.OpPrepareAndCommit {
				return 0 // it may have committed: nobody can say
			}
			return apitypes.VoteAborted
		}
		if !e.sleep(ctx, backoff) {
			return stopped
		}
		backoff = min(2*backoff, e.cfg.MaxBackoff)
	}
}

// decide commits t: the PREPARED participants are made durable first
// (the commit point), then the transaction is COMMITTED and rolls
// forward. An abort that came meanwhile wins only before the commit
// point.
func (e *Engine) decide(t *txn, prepared []Participant) {
	e.mu.Lock()
	if t.state != Voting {
		e.mu.Unlock()
		return
	}
	if t.parent != nil {
		e.promoteLocked(t, prepared)
		e.mu.Unlock()
		return
	}
	t.deciding = true
	e.mu.Unlock()
	if t.remote != nil {
		e.promoteRemote(t, prepared)
		return
	}
	if len(prepared) > 0 {
		if err := e.cfg.Journal.Committed(t.id, prepared); err != nil {
			e.log.Error("cannot make a commit decision durable: the transaction aborts", "id", t.id, "err", err)
			e.mu.Lock()
			t.deciding = false
			e.abortLocked(t)
			e.mu.Unlock()
			return
		}
	}
	e.mu.Lock()
	t.deciding = false
	t.state = Committed
	t.prepared = prepared
	if len(prepared) == 0 {
		e.toldLocked(t) // nobody to tell: told as it is decided
	}
	e.decidedLocked(t)
	e.mu.Unlock()
	if len(prepared) > 0 {
		e.rollForward(t)
	}
}

// dropLocked marks committed nested transactions aborted, at any depth,
// and aborts the others.
func (e *Engine) dropLocked(ts []*txn) {
	for _, c := range ts {
		if c.state == Committed {
			c.state = Aborted
			e.dropLocked(c.children)
		} else {
			e.abortLocked(c)
		}
	}
}

// promoteLocked commits a nested transaction (TX.2.7): its PREPARED
// participants become the parent's, all or none; they hear commit or
// abort when the parent completes. A participant the parent knows with
// another crash count aborts the parent (and so this transaction); a
// parent no longer ACTIVE cannot take them, and this one aborts.
func (e *Engine) promoteLocked(t *txn, prepared []Participant) {
	p := t.parent
	if p.state != Active {
		e.abortLocked(t)
		return
	}
	if err := e.promoteIntoLocked(p, prepared, ""); err != nil {
		e.abortLocked(t) // a crash-count conflict aborted p, and so t, already
		return
	}
	t.state = Committed
	t.prepared = prepared
	close(t.notified) // handed to the parent: it tells them
	e.decidedLocked(t)
}

// rollForward calls commit on every PREPARED participant until each has
// answered (UnknownTransaction means it rolled forward already), then
// forgets the decision.
func (e *Engine) rollForward(t *txn) {
	var wg sync.WaitGroup
	for _, p := range t.prepared {
		wg.Go(func() {
			backoff := e.cfg.Backoff
			for attempt := 1; ; attempt++ {
				_, err := e.cfg.Caller.Call(e.ctx, p, apitypes.OpCommit, t.id, attempt)
				if err == nil || errors.Is(err, ErrUnknownTransaction) || errors.Is(err, ErrNoSuchObject) {
					return
				}
				if e.ctx.Err() == nil {
					e.logs.Do(func() {
						e.log.Warn("a participant of a committed transaction did not answer commit: asking again until it does",
							"participant", p.URL, "id", t.id, "attempt", attempt, "err", err)
					})
				}
				if !e.sleep(e.ctx, backoff) {
					return
				}
				backoff = min(2*backoff, e.cfg.MaxBackoff)
			}
		})
	}
	wg.Wait()
	if e.ctx.Err() != nil {
		return // stopping: the journal keeps it for the next start
	}
	if err := e.cfg.Journal.Finished(t.id); err != nil {
		e.log.Warn("cannot forget a rolled-forward transaction; it is rolled forward again at the next start", "id", t.id, "err", err)
	}
	e.told(t)
}

// told records that every participant of t heard its outcome.
func (e *Engine) told(t *txn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.toldLocked(t)
}

// toldLocked is told with e.mu held. A top-level transaction is then
// retained for Retain (getState answers until then), at most MaxRetained
// of them, and forgotten with its nested ones: under presumed abort a
// participant that asks about a forgotten transaction rolls back, which
// is right, since every PREPARED participant of a committed one has
// answered commit by now.
func (e *Engine) toldLocked(t *txn) {
	close(t.notified)
	if t.parent != nil {
		return // forgotten with its top-level transaction
	}
	// What is retained is the outcome alone: the participants, all told,
	// are dropped, and count no more against the manager's total (a busy
	// manager would otherwise be held to MaxTotalParticipants a Retain).
	e.releaseLocked(t)
	e.retained = append(e.retained, retention{t, e.cfg.Clock.Now().Add(e.cfg.Retain)})
	for len(e.retained) > e.cfg.MaxRetained {
		e.forgetLocked(e.retained[0].t)
		e.retained = e.retained[1:]
	}
	if e.sweep == nil {
		e.sweep = e.cfg.Clock.AfterFunc(e.cfg.Retain, e.sweepRetained)
	}
}

// releaseLocked drops the participants of t and its nested ones, every
// one told: t's outcome is all that is kept.
func (e *Engine) releaseLocked(t *txn) {
	e.joined -= len(t.parts)
	t.parts, t.prepared, t.votes = nil, nil, nil
	for _, c := range t.children {
		e.releaseLocked(c)
	}
}

// retention is a completed transaction kept until a time.
type retention struct {
	t     *txn
	until time.Time
}

// sweepRetained forgets the completed transactions whose Retain passed
// (they are in order: Retain is the same for all).
func (e *Engine) sweepRetained() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.Clock.Now()
	for len(e.retained) > 0 && !e.retained[0].until.After(now) {
		e.forgetLocked(e.retained[0].t)
		e.retained = e.retained[1:]
	}
	e.sweep = nil
	if len(e.retained) > 0 && e.ctx.Err() == nil {
		e.sweep = e.cfg.Clock.AfterFunc(e.retained[0].until.Sub(now), e.sweepRetained)
	}
}

// roomLocked says whether t may take n more participants.
func (e *Engine) roomLocked(t *txn, n int) error {
	switch {
	case len(t.parts)+n > e.cfg.MaxParticipants:
		return fmt.Errorf("%w: a transaction has %d at most", ErrTooManyParticipants, e.cfg.MaxParticipants)
	case e.joined+n > e.cfg.MaxTotalParticipants:
		return fmt.Errorf("%w: the manager holds %d at most over all its transactions", ErrTooManyParticipants, e.cfg.MaxTotalParticipants)
	}
	return nil
}

// forgetLocked drops t and its nested transactions.
func (e *Engine) forgetLocked(t *txn) {
	e.joined -= len(t.parts)
	delete(e.txs, t.id)
	for _, c := range t.children {
		e.forgetLocked(c)
	}
}

// Open is how many transactions the engine holds (open, or completed
// within Retain), for metrics and tests.
func (e *Engine) Open() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.txs)
}

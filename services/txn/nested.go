package txn

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"

	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/services/apitypes"
)

// Nested transactions whose parent is on another manager (TX.2.2,
// TX.2.7). The nested transaction's manager joins the parent as a
// participant of its own, through a link: a capability URL on this
// manager that the parent's manager calls like any participant's. When
// the nested transaction commits, its PREPARED participants are promoted
// into the parent, and the link dropped from it, in one call. Until then,
// the parent's abort reaches the nested transaction through the link,
// and the parent's prepare ends it (it can no longer be promoted): the
// link votes NOTCHANGED, since nothing of a nested transaction is in its
// parent before the promotion.

// Ref names a transaction on a manager.
type Ref struct {
	Manager string
	ID      string
	// Token is a bearer token for the manager's API, if it wants one
	// (kept in memory only, for the joins and the promotion).
	Token string
}

// Parents reaches the managers of parents on other managers. An error
// wrapping ErrIndefinite may be retried; ErrUnknownTransaction,
// ErrCannotJoin, ErrCrashCount and any other are definite.
type Parents interface {
	// Join joins the parent as a participant.
	Join(ctx context.Context, parent Ref, as Participant) error
	// Promote makes parts the parent's participants and drops drop
	// from them, all at once.
	Promote(ctx context.Context, parent Ref, parts []Participant, drop Participant) error
}

// ErrNoParents is CreateRemote's error when the engine has no Parents.
var ErrNoParents = errors.New("nested transactions of a parent on another manager are not available")

// CreateRemote starts a transaction nested in parent, a transaction on
// another manager: it joins parent through a link first, so the create
// fails, with nothing held, when the parent cannot be joined.
func (e *Engine) CreateRemote(ctx context.Context, parent Ref) (string, error) {
	if e.cfg.Parents == nil || e.cfg.LinkURL == nil {
		return "", ErrNoParents
	}
	t := &txn{id: e.cfg.NewID(), state: Active, decided: make(chan struct{}), notified: make(chan struct{}),
		votes: map[string]apitypes.Vote{}, remote: &parent, token: ids.New()}
	t.link = Participant{URL: e.cfg.LinkURL(t.id, t.token), CrashCount: e.incarnation}
	e.mu.Lock()
	e.txs[t.id] = t // the parent may call the link before Join returns
	e.mu.Unlock()
	if err := e.cfg.Parents.Join(ctx, parent, t.link); err != nil {
		// If the join took effect after all, the link answers the
		// parent as for a nested transaction that changed nothing.
		e.mu.Lock()
		delete(e.txs, t.id)
		e.mu.Unlock()
		return "", err
	}
	return t.id, nil
}

// Link answers a call from the parent's manager on the link of nested
// transaction id. An unknown transaction or a wrong token gets the answer
// of a nested transaction that changed nothing, and changes nothing.
func (e *Engine) Link(ctx context.Context, id, token string, op apitypes.ParticipantOp) (apitypes.Vote, error) {
	e.mu.Lock()
	t := e.txs[id]
	if t == nil || t.remote == nil || subtle.ConstantTimeCompare([]byte(t.token), []byte(token)) != 1 {
		e.mu.Unlock()
		return apitypes.VoteNotChanged, nil
	}
	switch op {
	case apitypes.OpAbort:
		// Aborting the parent aborts the nested transaction, and drops
		// its results if it committed (TX.2.7).
		e.dropLocked([]*txn{t})
		e.mu.Unlock()
		return 0, nil
	case apitypes.OpCommit:
		e.mu.Unlock()
		return 0, nil
	}
	// The parent is voting: a nested transaction still ACTIVE can no
	// longer be promoted into it; one being promoted is waited for (its
	// promotion is refused now, and it aborts).
	if t.state == Active {
		e.abortLocked(t)
	}
	e.mu.Unlock()
	select {
	case <-t.decided:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return apitypes.VoteNotChanged, nil
}

// Parent is a nested transaction's parent: Manager "" when it is on this
// manager; false for a top-level transaction. The token is not given.
func (e *Engine) Parent(id string) (Ref, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch t := e.txs[id]; {
	case t == nil:
		return Ref{}, false
	case t.parent != nil:
		return Ref{ID: t.parent.id}, true
	case t.remote != nil:
		return Ref{Manager: t.remote.Manager, ID: t.remote.ID}, true
	}
	return Ref{}, false
}

// Promote adds participants promoted from a nested transaction on another
// manager to transaction id (TX.2.7), all or none, and drops the nested
// transaction's link from it. Only while ACTIVE (else ErrCannotJoin); a
// participant known with another crash count aborts the transaction
// (ErrCrashCount). Promoting the same participants again is a no-op.
func (e *Engine) Promote(id string, parts []Participant, drop string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.txs[id]
	switch {
	case t == nil:
		return ErrUnknownTransaction
	case t.state != Active:
		return ErrCannotJoin
	}
	return e.promoteIntoLocked(t, parts, drop)
}

// promoteIntoLocked adds parts to t's participants, all or none, and
// drops the participant at URL drop (if any).
func (e *Engine) promoteIntoLocked(t *txn, parts []Participant, drop string) error {
	added := 0
	for _, q := range parts {
		i := slices.IndexFunc(t.parts, func(h Participant) bool { return h.URL == q.URL })
		switch {
		case i < 0:
			added++
		case t.parts[i].CrashCount != q.CrashCount:
			e.abortLocked(t)
			return ErrCrashCount
		}
	}
	dropped := 0
	if drop != "" && slices.ContainsFunc(t.parts, func(h Participant) bool { return h.URL == drop }) {
		dropped = 1
	}
	if added > dropped {
		if err := e.roomLocked(t, added-dropped); err != nil {
			return err
		}
	}
	before := len(t.parts)
	defer func() { e.joined += len(t.parts) - before }()
	if dropped > 0 {
		t.parts = slices.DeleteFunc(t.parts, func(h Participant) bool { return h.URL == drop })
	}
	for _, q := range parts {
		if !slices.ContainsFunc(t.parts, func(h Participant) bool { return h.URL == q.URL }) {
			t.parts = append(t.parts, q)
		}
	}
	return nil
}

// promoteRemote commits a nested transaction whose parent is on another
// manager: its PREPARED participants are promoted there, indefinite
// failures retried for PrepareFor. A definite refusal aborts it; no
// answer at all leaves its outcome unknown (its participants are told to
// abort: one promoted nonetheless then answers the parent's prepare with
// "unknown transaction", and the parent aborts).
func (e *Engine) promoteRemote(t *txn, prepared []Participant) {
	var err error
	if len(prepared) > 0 {
		err = e.retry(e.ctx, func(ctx context.Context) error {
			return e.cfg.Parents.Promote(ctx, *t.remote, prepared, t.link)
		})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.deciding = false
	if t.state != Voting {
		return // the parent aborted meanwhile, through the link
	}
	if err != nil {
		if errors.Is(err, ErrIndefinite) || errors.Is(err, context.Canceled) {
			t.unknown = true
		}
		e.log.Info("a nested transaction could not be promoted into its parent: it aborts", "id", t.id, "parent", t.remote.Manager, "err", err)
		e.abortLocked(t)
		return
	}
	t.state = Committed
	t.prepared = prepared
	e.toldLocked(t) // handed to the parent: it tells them
	e.decidedLocked(t)
}

// retry calls f until it succeeds or fails definitely, retrying errors
// that wrap ErrIndefinite with backoff for PrepareFor.
func (e *Engine) retry(ctx context.Context, f func(context.Context) error) error {
	deadline := e.cfg.Clock.Now().Add(e.cfg.PrepareFor)
	backoff := e.cfg.Backoff
	for {
		err := f(ctx)
		if err == nil || !errors.Is(err, ErrIndefinite) {
			return err
		}
		if !e.cfg.Clock.Now().Add(backoff).Before(deadline) || !e.sleep(ctx, backoff) {
			return err
		}
		backoff = min(2*backoff, e.cfg.MaxBackoff)
	}
}

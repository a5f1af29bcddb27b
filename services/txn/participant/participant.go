// Package participant helps write a transaction participant in Go: an
// http.Handler that answers the manager's callbacks (API.md, "Transaction
// manager") the way TX.2.6 asks. It keeps each transaction's vote, so a
// repeated prepare gets the same answer (the manager calls at least
// once), runs the application's prepare, roll-forward and roll-back once
// each, and answers "unknown transaction" for one it never voted on.
//
// The application keeps its PREPARED records durable (Prepare returns
// only once they are). After a crash it gives them back to a new Handler
// with Restore before serving, so that a commit or abort the manager
// sends is carried out, never answered "unknown transaction" (which the
// manager takes as "rolled forward already"); then it settles, with
// Settle, those the manager does not call about (TX.2.8.1): the manager
// repeats commit until answered, but abort only a few times.
package participant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/jinid/jinid/services/apitypes"
)

// maxRemembered bounds the finished transactions a Handler remembers (to
// answer a repeated call the same way); the oldest go first.
const maxRemembered = 4096

// Handler is a participant's callback endpoint. Set its functions before
// serving.
type Handler struct {
	// Prepare votes on transaction id: apitypes.VotePrepared once its record
	// is durable, apitypes.VoteNotChanged if it changed nothing, or
	// apitypes.VoteAborted. An error is no vote (the manager retries).
	Prepare func(ctx context.Context, id string) (apitypes.Vote, error)
	// Commit rolls a PREPARED transaction forward; Abort rolls one back.
	// An error makes the manager call again.
	Commit func(ctx context.Context, id string) error
	Abort  func(ctx context.Context, id string) error

	mu    sync.Mutex
	votes map[string]*entry
	order []string // finished, oldest first
}

type entry struct {
	vote     apitypes.Vote // 0 while the first prepare runs
	finished bool
	// busy is set while the application's prepare, roll-forward or
	// roll-back runs for the transaction: a repeated call waits for it.
	busy chan struct{}
}

// ServeHTTP answers one callback.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var cb apitypes.ParticipantCall
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&cb); err != nil || cb.ID == "" {
		writeError(w, http.StatusBadRequest, apitypes.InvalidArgument, "a callback: {op, manager, id, attempt}")
		return
	}
	ctx := r.Context()
	switch cb.Op {
	case apitypes.OpPrepare:
		v, err := h.prepare(ctx, cb.ID)
		h.answer(w, v, err)
	case apitypes.OpPrepareAndCommit:
		v, err := h.prepare(ctx, cb.ID)
		if err == nil && v == apitypes.VotePrepared {
			if err = h.finish(ctx, cb.ID, true); err == nil {
				v = apitypes.VoteCommitted
			}
		}
		h.answer(w, v, err)
	case apitypes.OpCommit, apitypes.OpAbort:
		if err := h.finish(ctx, cb.ID, cb.Op == apitypes.OpCommit); err != nil {
			h.answer(w, 0, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusBadRequest, apitypes.InvalidArgument, "unknown op")
	}
}

// errUnknown is a transaction this participant never voted on.
var errUnknown = errors.New("unknown transaction")

// claim returns id's entry once nothing runs for it, marked busy, or nil
// if there is none; a new entry (vote 0) is made, busy, when create.
func (h *Handler) claim(ctx context.Context, id string, create bool) (*entry, error) {
	for {
		h.mu.Lock()
		if h.votes == nil {
			h.votes = map[string]*entry{}
		}
		e := h.votes[id]
		switch {
		case e == nil && !create:
			h.mu.Unlock()
			return nil, nil
		case e == nil:
			e = &entry{}
			h.votes[id] = e
		case e.busy != nil:
			busy := e.busy
			h.mu.Unlock()
			select {
			case <-busy:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e.busy = make(chan struct{})
		h.mu.Unlock()
		return e, nil
	}
}

// release ends what claim began.
func (h *Handler) release(e *entry) {
	h.mu.Lock()
	close(e.busy)
	e.busy = nil
	h.mu.Unlock()
}

// prepare votes once per transaction; a repeat gets the same vote.
func (h *Handler) prepare(ctx context.Context, id string) (apitypes.Vote, error) {
	e, err := h.claim(ctx, id, true)
	if err != nil {
		return 0, err
	}
	defer h.release(e)
	if e.vote != 0 {
		return e.vote, nil
	}
	v, err := h.Prepare(ctx, id)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil:
		delete(h.votes, id) // no vote: the next prepare asks again
		return 0, err
	case v != apitypes.VotePrepared:
		h.finishedLocked(id, e) // nothing to roll: remembered for repeats
	}
	e.vote = v
	return v, nil
}

// finish rolls a PREPARED transaction forward or back, once.
func (h *Handler) finish(ctx context.Context, id string, commit bool) error {
	e, err := h.claim(ctx, id, false)
	switch {
	case err != nil:
		return err
	case e == nil:
		return errUnknown
	}
	defer h.release(e)
	if e.finished || e.vote != apitypes.VotePrepared {
		return nil
	}
	f := h.Abort
	if commit {
		f = h.Commit
	}
	if err := f(ctx, id); err != nil {
		return err
	}
	h.mu.Lock()
	h.finishedLocked(id, e)
	h.mu.Unlock()
	return nil
}

// finishedLocked marks e finished and forgets the oldest beyond
// maxRemembered.
func (h *Handler) finishedLocked(id string, e *entry) {
	e.finished = true
	h.order = append(h.order, id)
	for len(h.order) > maxRemembered {
		delete(h.votes, h.order[0])
		h.order = h.order[1:]
	}
}

// Restore gives a new Handler, before it serves, the transactions the
// application had voted PREPARED on and not yet rolled either way (its
// durable records, after a crash): the manager's commit or abort for one
// is then carried out.
func (h *Handler) Restore(ids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.votes == nil {
		h.votes = map[string]*entry{}
	}
	for _, id := range ids {
		if h.votes[id] == nil {
			h.votes[id] = &entry{vote: apitypes.VotePrepared}
		}
	}
}

// Pending lists the transactions voted PREPARED and not yet rolled
// forward or back.
func (h *Handler) Pending() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, e := range h.votes {
		if e.vote == apitypes.VotePrepared && !e.finished {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ErrUndecided is Settle's error for a transaction its manager has not
// decided yet: ask again later (or wait for the manager's call).
var ErrUndecided = errors.New("the transaction is not decided yet")

// Settle rolls a pending transaction forward or back as its manager says
// (TX.2.8.1). state is the manager's getState (the Go client's
// TxnState): COMMITTED rolls forward; ABORTED, or an error whose code is
// UnknownTransaction or NoSuchObject (the manager presumes abort), rolls
// back; ACTIVE or VOTING is ErrUndecided. Any other error of state's is
// returned, with nothing done. A transaction not pending is left alone.
func (h *Handler) Settle(ctx context.Context, id string, state func(ctx context.Context, id string) (string, error)) error {
	st, err := state(ctx, id)
	var ae *apitypes.Error
	switch {
	case err == nil && st == "COMMITTED":
		return h.settled(h.finish(ctx, id, true))
	case err == nil && st == "ABORTED",
		errors.As(err, &ae) && (ae.Code == apitypes.UnknownTransaction || ae.Code == apitypes.NoSuchObject):
		return h.settled(h.finish(ctx, id, false))
	case err != nil:
		return fmt.Errorf("asking the manager about transaction %s: %w", id, err)
	}
	return ErrUndecided
}

// settled makes finish's "never voted" nothing to settle.
func (h *Handler) settled(err error) error {
	if errors.Is(err, errUnknown) {
		return nil
	}
	return err
}

func (h *Handler) answer(w http.ResponseWriter, v apitypes.Vote, err error) {
	switch {
	case errors.Is(err, errUnknown):
		writeError(w, http.StatusNotFound, apitypes.UnknownTransaction, "unknown transaction")
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, apitypes.Unavailable, "try again")
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(apitypes.ParticipantAnswer{Vote: v.String()})
	}
}

func writeError(w http.ResponseWriter, status int, code apitypes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apitypes.ErrorBody{Error: apitypes.Error{Code: code, Message: msg}})
}

// Package participant helps write a transaction participant in Go: an
// http.Handler that answers the manager's callbacks (API.md, "Transaction
// manager") the way TX.2.6 asks. It keeps each transaction's vote, so a
// repeated prepare gets the same answer (the manager calls at least
// once), runs the application's roll-forward and roll-back once each,
// and answers "unknown transaction" for one it never voted on. The
// application keeps its PREPARED records durable (Prepare returns only
// once they are) and, after a crash, asks the manager's getState for each
// (TX.2.8.1): COMMITTED rolls forward; UnknownTransaction, NoSuchObject or
// ABORTED roll back.
package participant

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/txn"
)

// maxRemembered bounds the finished transactions a Handler remembers (to
// answer a repeated call the same way); the oldest go first.
const maxRemembered = 4096

// Handler is a participant's callback endpoint. Set its functions before
// serving.
type Handler struct {
	// Prepare votes on transaction id: txn.VotePrepared once its record
	// is durable, txn.VoteNotChanged if it changed nothing, or
	// txn.VoteAborted. An error is no vote (the manager retries).
	Prepare func(ctx context.Context, id string) (txn.Vote, error)
	// Commit rolls a PREPARED transaction forward; Abort rolls one back.
	// An error makes the manager call again.
	Commit func(ctx context.Context, id string) error
	Abort  func(ctx context.Context, id string) error

	mu    sync.Mutex
	votes map[string]*entry
	order []string // finished, oldest first
}

type entry struct {
	vote     txn.Vote
	finished bool
}

// ServeHTTP answers one callback.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var cb txn.Callback
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&cb); err != nil || cb.ID == "" {
		writeError(w, http.StatusBadRequest, apitypes.InvalidArgument, "a callback: {op, manager, id, attempt}")
		return
	}
	ctx := r.Context()
	switch cb.Op {
	case txn.OpPrepare:
		v, err := h.prepare(ctx, cb.ID)
		h.answer(w, v, err)
	case txn.OpPrepareAndCommit:
		v, err := h.prepare(ctx, cb.ID)
		if err == nil && v == txn.VotePrepared {
			if err = h.finish(ctx, cb.ID, true); err == nil {
				v = txn.VoteCommitted
			}
		}
		h.answer(w, v, err)
	case txn.OpCommit, txn.OpAbort:
		if err := h.finish(ctx, cb.ID, cb.Op == txn.OpCommit); err != nil {
			h.answer(w, 0, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusBadRequest, apitypes.InvalidArgument, "unknown op")
	}
}

// errUnknown is a transaction this participant never voted on.
var errUnknown = txn.ErrUnknownTransaction

// prepare votes once per transaction; a repeat gets the same vote, or,
// once finished, COMMITTED's or ABORTED's own vote.
func (h *Handler) prepare(ctx context.Context, id string) (txn.Vote, error) {
	h.mu.Lock()
	if e := h.votes[id]; e != nil {
		h.mu.Unlock()
		return e.vote, nil
	}
	h.mu.Unlock()
	v, err := h.Prepare(ctx, id)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.votes == nil {
		h.votes = map[string]*entry{}
	}
	if e := h.votes[id]; e != nil {
		return e.vote, nil // a concurrent repeat voted first
	}
	e := &entry{vote: v}
	h.votes[id] = e
	if v != txn.VotePrepared {
		h.finishedLocked(id, e) // nothing to roll: remembered for repeats
	}
	return v, nil
}

// finish rolls a PREPARED transaction forward or back, once.
func (h *Handler) finish(ctx context.Context, id string, commit bool) error {
	h.mu.Lock()
	e := h.votes[id]
	if e == nil {
		h.mu.Unlock()
		return errUnknown
	}
	if e.finished || e.vote != txn.VotePrepared {
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
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

func (h *Handler) answer(w http.ResponseWriter, v txn.Vote, err error) {
	switch {
	case errors.Is(err, errUnknown):
		writeError(w, http.StatusNotFound, apitypes.UnknownTransaction, "unknown transaction")
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, apitypes.Unavailable, "try again")
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(txn.Answer{Vote: v.String()})
	}
}

func writeError(w http.ResponseWriter, status int, code apitypes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apitypes.ErrorBody{Error: apitypes.Error{Code: code, Message: msg}})
}

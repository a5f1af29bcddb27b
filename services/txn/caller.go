package txn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/api/apitypes"
)

// maxAnswer bounds a participant's answer read.
const maxAnswer = 64 << 10

// Callback is what the manager POSTs to a participant (API.md,
// "Transaction manager").
type Callback struct {
	Op      Op     `json:"op"`
	Manager string `json:"manager"`
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
}

// Answer is a participant's answer to prepare or prepareAndCommit.
type Answer struct {
	Vote string `json:"vote"`
}

// HTTPCaller calls participants over HTTP with the daemon's outbound
// client: every request goes through its address policy.
type HTTPCaller struct {
	Client http1.Doer
	// Manager is the manager's base URL, sent with every call (a
	// participant calls it back for its roll decision).
	Manager string
}

var _ Caller = HTTPCaller{}

// ErrIndefinite wraps every failure that is not a participant's definite
// answer: the call may be tried again.
var ErrIndefinite = errors.New("no definite answer from the participant")

// Call implements Caller. Answers are classified by their error code,
// never by the status alone: a bare 404 (a daemon with the service
// off, a wrong path) is no "unknown transaction", only indefinite.
func (c HTTPCaller) Call(ctx context.Context, p Participant, op Op, id string, attempt int) (Vote, error) {
	body, _ := json.Marshal(Callback{Op: op, Manager: c.Manager, ID: id, Attempt: attempt})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("participant URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrIndefinite, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, fmt.Errorf("%w: reading the answer: %w", ErrIndefinite, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb apitypes.ErrorBody
		if json.Unmarshal(raw, &eb) == nil {
			switch eb.Error.Code {
			case apitypes.UnknownTransaction:
				return 0, ErrUnknownTransaction
			case apitypes.NoSuchObject:
				return 0, ErrNoSuchObject
			}
		}
		return 0, fmt.Errorf("%w: HTTP %d", ErrIndefinite, resp.StatusCode)
	}
	if op == OpCommit || op == OpAbort {
		return 0, nil
	}
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("%w: an answer that is not a vote", ErrIndefinite)
	}
	switch a.Vote {
	case "PREPARED":
		return VotePrepared, nil
	case "NOTCHANGED":
		return VoteNotChanged, nil
	case "ABORTED":
		return VoteAborted, nil
	case "COMMITTED":
		if op == OpPrepareAndCommit {
			return VoteCommitted, nil
		}
	}
	return 0, fmt.Errorf("%w: vote %.20q to %s", ErrIndefinite, a.Vote, op)
}

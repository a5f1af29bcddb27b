package txn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/outbound"
)

// maxAnswer bounds a participant's answer read.
const maxAnswer = 64 << 10

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
func (c HTTPCaller) Call(ctx context.Context, p Participant, op apitypes.ParticipantOp, id string, attempt int) (apitypes.Vote, error) {
	body, _ := json.Marshal(apitypes.ParticipantCall{Op: op, Manager: c.Manager, ID: id, Attempt: attempt})
	req, err := http.NewRequestWithContext(outbound.HostLocalIf(ctx, p.HostLocal), http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("participant URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	// A participant answers a call it hears twice as it did once (TX: the
	// manager repeats any call until it has an answer): it may be sent
	// again if a kept connection fails under it.
	req.Header["Idempotency-Key"] = nil
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
	if op == apitypes.OpCommit || op == apitypes.OpAbort {
		return 0, nil
	}
	var a apitypes.ParticipantAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("%w: an answer that is not a vote", ErrIndefinite)
	}
	switch a.Vote {
	case "PREPARED":
		return apitypes.VotePrepared, nil
	case "NOTCHANGED":
		return apitypes.VoteNotChanged, nil
	case "ABORTED":
		return apitypes.VoteAborted, nil
	case "COMMITTED":
		if op == apitypes.OpPrepareAndCommit {
			return apitypes.VoteCommitted, nil
		}
	}
	return 0, fmt.Errorf("%w: vote %.20q to %s", ErrIndefinite, a.Vote, op)
}

// HTTPParents reaches parents on other managers over their API (API.md,
// "Transaction manager"), with the daemon's outbound client.
type HTTPParents struct {
	Client http1.Doer
}

var _ Parents = HTTPParents{}

// ErrParentRefused is a parent's manager refusing this one's request
// (401 or 403: it wants a token, parent.token, with the client scope).
var ErrParentRefused = errors.New("the parent's manager refused the request: it wants a token with the client scope (parent.token)")

// Join implements Parents.
func (p HTTPParents) Join(ctx context.Context, parent Ref, as Participant) error {
	return p.post(ctx, parent, "/participants", struct {
		Participant struct {
			URL string `json:"url"`
		} `json:"participant"`
		CrashCount int64 `json:"crashCount"`
	}{struct {
		URL string `json:"url"`
	}{as.URL}, as.CrashCount})
}

// Promote implements Parents.
func (p HTTPParents) Promote(ctx context.Context, parent Ref, parts []Participant, drop Participant) error {
	return p.post(ctx, parent, "/promote", PromoteRequest{Participants: parts, Drop: &Dropped{URL: drop.URL}})
}

// PromoteRequest is the body of POST /v1/transactions/{id}/promote.
type PromoteRequest struct {
	Participants []Participant `json:"participants"`
	Drop         *Dropped      `json:"drop"`
}

// Dropped names the participant a promotion drops.
type Dropped struct {
	URL string `json:"url"`
}

// post sends body to the parent's transaction; the answer is classified
// by its error code, as a participant's is.
func (p HTTPParents) post(ctx context.Context, parent Ref, path string, body any) error {
	raw, _ := json.Marshal(body)
	u := strings.TrimSuffix(parent.Manager, "/") + "/v1/transactions/" + url.PathEscape(parent.ID) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("parent manager URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if parent.Token != "" {
		req.Header.Set("Authorization", "Bearer "+parent.Token)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIndefinite, err)
	}
	defer resp.Body.Close()
	ans, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var eb apitypes.ErrorBody
	json.Unmarshal(ans, &eb)
	switch {
	case eb.Error.Code == apitypes.UnknownTransaction:
		return ErrUnknownTransaction
	case eb.Error.Code == apitypes.CannotJoin:
		return ErrCannotJoin
	case eb.Error.Code == apitypes.CrashCount:
		return ErrCrashCount
	case eb.Error.Code == apitypes.TooMany:
		return ErrTooManyParticipants
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return ErrParentRefused
	}
	return fmt.Errorf("%w: HTTP %d", ErrIndefinite, resp.StatusCode)
}

package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
)

// Transaction is a transaction the manager created: its ID, the
// manager's URL and its lease.
type Transaction struct {
	ID      string         `json:"id"`
	Manager string         `json:"manager"`
	Lease   apitypes.Lease `json:"lease"`
}

func txnPath(id, rest string) string { return "/v1/transactions/" + url.PathEscape(id) + rest }

// TxnCreate creates a transaction leased for duration (ms).
func (c *Client) TxnCreate(ctx context.Context, duration int64) (Transaction, error) {
	var out Transaction
	return out, c.do(ctx, http.MethodPost, "/v1/transactions", map[string]any{"leaseDuration": duration}, &out)
}

// TxnParent names a nested transaction's parent: ID on the manager at
// Manager ("" for the one called), with Token for that manager's API if
// it wants one.
type TxnParent struct {
	Manager string `json:"manager,omitempty"`
	ID      string `json:"id"`
	Token   string `json:"token,omitempty"`
}

// TxnCreateNested creates a transaction nested in parent, leased for
// duration (ms).
func (c *Client) TxnCreateNested(ctx context.Context, duration int64, parent TxnParent) (Transaction, error) {
	var out Transaction
	return out, c.do(ctx, http.MethodPost, "/v1/transactions", map[string]any{"leaseDuration": duration, "parent": parent}, &out)
}

// TxnJoin joins the participant at url with its crash count.
func (c *Client) TxnJoin(ctx context.Context, id, participant string, crashCount int64) error {
	return c.do(ctx, http.MethodPost, txnPath(id, "/participants"),
		map[string]any{"participant": map[string]string{"url": participant}, "crashCount": crashCount}, nil)
}

// TxnState is the transaction's state: ACTIVE, VOTING, COMMITTED or
// ABORTED.
func (c *Client) TxnState(ctx context.Context, id string) (string, error) {
	var out struct {
		State string `json:"state"`
	}
	return out.State, c.do(ctx, http.MethodGet, txnPath(id, ""), nil, &out)
}

// TxnRef names a transaction on a manager (its API URL, as the managers
// give it).
type TxnRef struct {
	Manager string `json:"manager"`
	ID      string `json:"id"`
}

// TxnInfo is what the manager tells of a transaction: its state, the
// manager's URL, and a nested transaction's parent.
type TxnInfo struct {
	ID      string  `json:"id"`
	Manager string  `json:"manager"`
	State   string  `json:"state"`
	Parent  *TxnRef `json:"parent"`
}

// TxnInfo tells of the transaction.
func (c *Client) TxnInfo(ctx context.Context, id string) (TxnInfo, error) {
	var out TxnInfo
	return out, c.do(ctx, http.MethodGet, txnPath(id, ""), nil, &out)
}

// maxNesting bounds how many parents TxnEnclosedBy follows, whatever
// the managers answer.
const maxNesting = 64

// TxnEnclosedBy reports whether transaction id is nested, at any depth,
// in ancestor (enclosedBy, TX.3); ancestor.Manager "" is this client's
// manager. It follows the parents up, asking each one's manager: this
// client's with its token, others with its HTTP client and no token (they
// answer getState to readers). A parent's manager that cannot be asked is
// an error, not false.
func (c *Client) TxnEnclosedBy(ctx context.Context, id string, ancestor TxnRef) (bool, error) {
	at, cur := c, id
	for range maxNesting {
		info, err := at.TxnInfo(ctx, cur)
		if err != nil {
			return false, fmt.Errorf("transaction %s: %w", cur, err)
		}
		if ancestor.Manager == "" && at == c {
			ancestor.Manager = info.Manager
		}
		p := info.Parent
		switch {
		case p == nil:
			return false, nil
		case p.ID == ancestor.ID && sameManager(p.Manager, ancestor.Manager):
			return true, nil
		case !sameManager(p.Manager, info.Manager):
			hc := c.hc
			if c.socket {
				hc = &http1.Client{Timeout: timeoutOf(c.hc)}
			}
			if at, err = New(p.Manager, hc); err != nil {
				return false, fmt.Errorf("the parent of transaction %s: %w", cur, err)
			}
		}
		cur = p.ID
	}
	return false, fmt.Errorf("transaction %s: nested more than %d deep", id, maxNesting)
}

// sameManager compares managers' URLs as they give them.
func sameManager(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// TxnCommit commits; waitFor < 0 is the form without waitFor (ms).
func (c *Client) TxnCommit(ctx context.Context, id string, waitFor int64) (string, error) {
	return c.complete(ctx, id, "/commit", waitFor)
}

// TxnAbort aborts; waitFor as for TxnCommit.
func (c *Client) TxnAbort(ctx context.Context, id string, waitFor int64) (string, error) {
	return c.complete(ctx, id, "/abort", waitFor)
}

func (c *Client) complete(ctx context.Context, id, op string, waitFor int64) (string, error) {
	body := map[string]any{}
	if waitFor >= 0 {
		body["waitFor"] = waitFor
	}
	var out struct {
		State string `json:"state"`
	}
	return out.State, c.do(ctx, http.MethodPost, txnPath(id, op), body, &out)
}

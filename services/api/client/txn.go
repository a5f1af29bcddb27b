package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jinid/jinid/services/api/apitypes"
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

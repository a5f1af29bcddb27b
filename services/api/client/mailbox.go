package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jinid/jinid/services/apitypes"
)

// MailboxRegistration is a new mailbox registration.
type MailboxRegistration = apitypes.MailboxRegistration

func boxPath(id, rest string) string { return "/v1/mailbox/registrations/" + url.PathEscape(id) + rest }

// MailboxRegister registers with the event mailbox; pull makes a pull
// registration.
func (c *Client) MailboxRegister(ctx context.Context, duration int64, pull bool) (MailboxRegistration, error) {
	var out MailboxRegistration
	return out, c.do(ctx, http.MethodPost, "/v1/mailbox/registrations", map[string]any{"leaseDuration": duration, "pull": pull}, &out)
}

// MailboxGet returns a registration's state.
func (c *Client) MailboxGet(ctx context.Context, id string) (map[string]any, error) {
	var out map[string]any
	return out, c.do(ctx, http.MethodGet, boxPath(id, ""), nil, &out)
}

// MailboxEnable pushes the registration's events to target ("" disables).
func (c *Client) MailboxEnable(ctx context.Context, id, target string) error {
	var t any
	if target != "" {
		t = map[string]string{"url": target}
	}
	return c.do(ctx, http.MethodPut, boxPath(id, "/delivery"), map[string]any{"target": t}, nil)
}

// MailboxDisable stops push delivery.
func (c *Client) MailboxDisable(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, boxPath(id, "/delivery"), nil, nil)
}

// MailboxIterator starts a new iterator.
func (c *Client) MailboxIterator(ctx context.Context, id string) (string, error) {
	var out struct {
		Iterator string `json:"iterator"`
	}
	return out.Iterator, c.do(ctx, http.MethodPost, boxPath(id, "/iterators"), nil, &out)
}

// MailboxNext returns the next event (nil if none came within timeoutMS).
func (c *Client) MailboxNext(ctx context.Context, id, it string, timeoutMS int64) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, http.MethodGet, boxPath(id, "/iterators/"+url.PathEscape(it)+fmt.Sprintf("/next?timeout=%d", timeoutMS)), nil, &out)
	if len(out) == 0 {
		return nil, err
	}
	return out, err
}

// MailboxClose closes an iterator.
func (c *Client) MailboxClose(ctx context.Context, id, it string) error {
	return c.do(ctx, http.MethodDelete, boxPath(id, "/iterators/"+url.PathEscape(it)), nil, nil)
}

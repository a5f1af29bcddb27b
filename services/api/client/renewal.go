package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jinid/jinid/services/apitypes"
)

// RenewalSet is a new renewal set.
type RenewalSet = apitypes.RenewalSet

func setPath(id, rest string) string { return "/v1/renewal/sets/" + url.PathEscape(id) + rest }

// RenewalCreate creates a lease renewal set leased for duration (ms).
func (c *Client) RenewalCreate(ctx context.Context, duration int64) (RenewalSet, error) {
	var out RenewalSet
	return out, c.do(ctx, http.MethodPost, "/v1/renewal/sets", map[string]any{"leaseDuration": duration}, &out)
}

// RenewFor puts a lease in a set; renew nil means FOREVER (the
// two-argument form).
func (c *Client) RenewFor(ctx context.Context, set string, l apitypes.Lease, desired int64, renew *int64) error {
	body := map[string]any{"lease": l, "desiredDuration": desired}
	if renew != nil {
		body["renewDuration"] = *renew
	}
	return c.do(ctx, http.MethodPost, setPath(set, "/leases"), body, nil)
}

// RenewalLeases lists a set's client leases.
func (c *Client) RenewalLeases(ctx context.Context, set string) ([]apitypes.ClientLease, error) {
	var out struct {
		Leases []apitypes.ClientLease `json:"leases"`
	}
	return out.Leases, c.doPage(ctx, http.MethodGet, setPath(set, "/leases"), nil, &out)
}

// RenewalRemove takes a lease out of a set; key is "grantor|id" or the
// lease ID. It returns the lease, or nil if it was not there.
func (c *Client) RenewalRemove(ctx context.Context, set, key string) (*apitypes.Lease, error) {
	var out struct {
		Lease *apitypes.Lease `json:"lease"`
	}
	return out.Lease, c.do(ctx, http.MethodDelete, setPath(set, "/leases/"+url.PathEscape(key)), nil, &out)
}

// ListenerRegistration is the answer to setting a set's listener.
type ListenerRegistration = apitypes.ListenerRegistration

// RenewalWarning sets the expiration warning listener.
func (c *Client) RenewalWarning(ctx context.Context, set, listener string, minWarning int64, handback []byte) (ListenerRegistration, error) {
	var out ListenerRegistration
	return out, c.do(ctx, http.MethodPut, setPath(set, "/warning-listener"),
		map[string]any{"listener": map[string]string{"url": listener}, "minWarning": minWarning, "handback": handback}, &out)
}

// RenewalFailures sets the renewal failure listener.
func (c *Client) RenewalFailures(ctx context.Context, set, listener string, handback []byte) (ListenerRegistration, error) {
	var out ListenerRegistration
	return out, c.do(ctx, http.MethodPut, setPath(set, "/failure-listener"),
		map[string]any{"listener": map[string]string{"url": listener}, "handback": handback}, &out)
}

// RenewalClear clears the warning (or failure) listener.
func (c *Client) RenewalClear(ctx context.Context, set string, warning bool) error {
	which := "/failure-listener"
	if warning {
		which = "/warning-listener"
	}
	return c.do(ctx, http.MethodDelete, setPath(set, which), nil, nil)
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/lds"
)

// LDSRequest asks the lookup discovery service for a registration.
// Groups nil means all groups; Listener is the URL events are POSTed to.
type LDSRequest struct {
	Groups   []string
	Locators []string
	Listener string
	Handback []byte
	Duration int64 // milliseconds; -1 ANY
}

// LDSRegistered is the answer to LDSRegister.
type LDSRegistered struct {
	ID      string    `json:"id"`
	EventID int64     `json:"eventID"`
	SeqNum  int64     `json:"seqNum"`
	Lease   api.Lease `json:"lease"`
}

// LDSRegister registers with the lookup discovery service.
func (c *Client) LDSRegister(ctx context.Context, r LDSRequest) (LDSRegistered, error) {
	body := map[string]any{"groups": r.Groups, "listener": map[string]string{"url": r.Listener},
		"leaseDuration": r.Duration, "handback": r.Handback}
	if r.Locators != nil {
		body["locators"] = r.Locators
	}
	var out LDSRegistered
	return out, c.do(ctx, http.MethodPost, "/v1/lds/registrations", body, &out)
}

func ldsPath(id string, rest string) string {
	return "/v1/lds/registrations/" + url.PathEscape(id) + rest
}

// LDSGet returns a registration.
func (c *Client) LDSGet(ctx context.Context, id string) (api.LDSRegistration, error) {
	var out api.LDSRegistration
	return out, c.do(ctx, http.MethodGet, ldsPath(id, ""), nil, &out)
}

// LDSRegistrars returns a registration's discovered lookup services.
func (c *Client) LDSRegistrars(ctx context.Context, id string) ([]lds.Registrar, error) {
	var out struct {
		Registrars []lds.Registrar `json:"registrars"`
	}
	return out.Registrars, c.do(ctx, http.MethodGet, ldsPath(id, "/registrars"), nil, &out)
}

// mutationMethod: add is POST, set PUT, remove DELETE.
func mutationMethod(m lds.Mutation) string {
	return [...]string{lds.Add: http.MethodPost, lds.Set: http.MethodPut, lds.Remove: http.MethodDelete}[m]
}

// LDSGroups adds, sets or removes a registration's groups (for set, nil
// means all groups).
func (c *Client) LDSGroups(ctx context.Context, id string, m lds.Mutation, groups []string) (api.LDSRegistration, error) {
	var out api.LDSRegistration
	return out, c.do(ctx, mutationMethod(m), ldsPath(id, "/groups"), map[string]any{"groups": groups}, &out)
}

// LDSLocators adds, sets or removes a registration's locators.
func (c *Client) LDSLocators(ctx context.Context, id string, m lds.Mutation, locators []string) (api.LDSRegistration, error) {
	if locators == nil {
		locators = []string{}
	}
	var out api.LDSRegistration
	return out, c.do(ctx, mutationMethod(m), ldsPath(id, "/locators"), map[string]any{"locators": locators}, &out)
}

// LDSDiscard discards a lookup service from a registration's managed set.
func (c *Client) LDSDiscard(ctx context.Context, id, serviceID string) error {
	return c.do(ctx, http.MethodPost, ldsPath(id, "/discard"), map[string]any{"serviceID": serviceID}, nil)
}

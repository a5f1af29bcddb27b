package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/jinid/jinid/services/apitypes"
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
type LDSRegistered = apitypes.LDSRegistered

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
func (c *Client) LDSGet(ctx context.Context, id string) (apitypes.LDSRegistration, error) {
	var out apitypes.LDSRegistration
	return out, c.do(ctx, http.MethodGet, ldsPath(id, ""), nil, &out)
}

// LDSRegistrars returns a registration's discovered lookup services.
func (c *Client) LDSRegistrars(ctx context.Context, id string) ([]apitypes.Registrar, error) {
	var out struct {
		Registrars []apitypes.Registrar `json:"registrars"`
	}
	return out.Registrars, c.doPage(ctx, http.MethodGet, ldsPath(id, "/registrars"), nil, &out)
}

// Mutation is one of a registration's group and locator mutators.
type Mutation int

// The mutators.
const (
	Add Mutation = iota
	Set
	Remove
)

// mutationMethod: add is POST, set PUT, remove DELETE.
func mutationMethod(m Mutation) string {
	return [...]string{Add: http.MethodPost, Set: http.MethodPut, Remove: http.MethodDelete}[m]
}

// LDSGroups adds, sets or removes a registration's groups (for set, nil
// means all groups).
func (c *Client) LDSGroups(ctx context.Context, id string, m Mutation, groups []string) (apitypes.LDSRegistration, error) {
	var out apitypes.LDSRegistration
	return out, c.do(ctx, mutationMethod(m), ldsPath(id, "/groups"), map[string]any{"groups": groups}, &out)
}

// LDSLocators adds, sets or removes a registration's locators.
func (c *Client) LDSLocators(ctx context.Context, id string, m Mutation, locators []string) (apitypes.LDSRegistration, error) {
	if locators == nil {
		locators = []string{}
	}
	var out apitypes.LDSRegistration
	return out, c.do(ctx, mutationMethod(m), ldsPath(id, "/locators"), map[string]any{"locators": locators}, &out)
}

// LDSDiscard discards a lookup service from a registration's managed set.
func (c *Client) LDSDiscard(ctx context.Context, id, serviceID string) error {
	return c.do(ctx, http.MethodPost, ldsPath(id, "/discard"), map[string]any{"serviceID": serviceID}, nil)
}

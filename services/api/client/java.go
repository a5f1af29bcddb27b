package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// JavaForm is an object as Java reads it: the object stream of a
// java.rmi.MarshalledObject holding it.
type JavaForm struct {
	Class      string `json:"class"`
	Marshalled []byte `json:"marshalled"`
}

// JavaMailboxListener returns a mailbox registration's listener as Java
// uses it (Mercury's ListenerProxy), to hand a Java event generator.
func (c *Client) JavaMailboxListener(ctx context.Context, id string) (JavaForm, error) {
	var out JavaForm
	return out, c.do(ctx, http.MethodGet, "/v1/java/mailbox/"+url.PathEscape(id)+"/listener", nil, &out)
}

// JavaTransaction returns the ID of the transaction a Java client knows
// by long (ServerTransaction.id).
func (c *Client) JavaTransaction(ctx context.Context, long int64) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	return out.ID, c.do(ctx, http.MethodGet, "/v1/java/transactions/"+strconv.FormatInt(long, 10), nil, &out)
}

// JavaRegistration is a registration a Java program made with a helper
// service.
type JavaRegistration struct {
	Service    string `json:"service"`
	ID         string `json:"id"`
	Owner      string `json:"owner"`
	Lease      string `json:"lease"`
	Expiration int64  `json:"expiration"`
}

// JavaRegistrations lists the registrations Java programs made (an
// administrator's).
func (c *Client) JavaRegistrations(ctx context.Context) ([]JavaRegistration, error) {
	var out struct {
		Registrations []JavaRegistration `json:"registrations"`
	}
	return out.Registrations, c.do(ctx, http.MethodGet, "/v1/java/registrations", nil, &out)
}

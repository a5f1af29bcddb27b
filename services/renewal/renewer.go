package renewal

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/lease"
)

// HTTPRenewer renews leases at grantors that speak API.md's lease
// endpoints (another jinid, or anything that answers them), through the
// API's Go client: POST {grantor}/v1/leases/renew.
type HTTPRenewer struct {
	// Client makes the requests (the daemon's outbound client); nil
	// means the API client's default.
	Client http1.Doer
}

// RenewAll implements Renewer. A call refused as a whole with 4xx is a
// definite failure of every lease in it; 5xx, 408, 429, an unreachable
// grantor or an unreadable answer are indefinite.
func (h HTTPRenewer) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error) {
	c, err := client.New(grantor, h.Client)
	if err != nil {
		return nil, fmt.Errorf("grantor %q: %w", grantor, err)
	}
	batch := make([]client.Renewal, len(rs))
	for i, r := range rs {
		batch[i] = client.Renewal{ID: r.ID, Duration: r.Duration}
	}
	results, err := c.RenewAll(ctx, batch)
	var answered *client.Error
	switch {
	case errors.As(err, &answered) && definiteStatus(answered.Status):
		e := answered.Err
		if e.Code == apitypes.Internal {
			// No coded error: the endpoint is not there.
			e.Code = apitypes.NoSuchObject
		}
		out := make([]Result, len(rs))
		for i := range out {
			out[i] = Result{Err: grantorError(e)}
		}
		return out, nil
	case err != nil:
		return nil, err
	case len(results) != len(rs):
		return nil, fmt.Errorf("grantor %s: %d results for %d leases", grantor, len(results), len(rs))
	}
	out := make([]Result, len(rs))
	for i, r := range results {
		out[i] = Result{Expiration: r.Expiration}
		if r.Error != nil {
			out[i].Err = grantorError(*r.Error)
		}
	}
	return out, nil
}

// grantorError is what a client is told of a grantor's coded refusal: the
// code, if it is one a grantor answers, with this service's own message;
// never the grantor's words (another host's bytes), and any other code is
// a bad answer.
func grantorError(e apitypes.Error) *apitypes.Error {
	msg := map[apitypes.Code]string{
		apitypes.UnknownLease:    "the grantor does not know the lease (it ended or was cancelled)",
		apitypes.LeaseDenied:     "the grantor denied the renewal",
		apitypes.NoSuchObject:    "the grantor has no such lease to renew",
		apitypes.InvalidArgument: "the grantor refused the renewal's arguments",
		apitypes.NullArgument:    "the grantor refused the renewal's arguments",
		apitypes.Internal:        "the grantor failed to renew the lease",
	}[e.Code]
	if msg == "" {
		return &apitypes.Error{Code: apitypes.BadAnswer, Message: "the grantor did not answer as the protocol wants"}
	}
	return &apitypes.Error{Code: e.Code, Message: msg}
}

// definiteStatus tells the statuses of a call refused for good.
func definiteStatus(status int) bool {
	return status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

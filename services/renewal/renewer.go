package renewal

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
	Client *http.Client
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
		out := make([]Result, len(rs))
		for i := range out {
			e := answered.Err
			if e.Code == apitypes.Internal {
				// No coded error: the endpoint is not there.
				e = apitypes.Error{Code: apitypes.NoSuchObject, Message: fmt.Sprintf("grantor %s answered HTTP %d", grantor, answered.Status)}
			}
			out[i] = Result{Err: &e}
		}
		return out, nil
	case err != nil:
		return nil, err
	case len(results) != len(rs):
		return nil, fmt.Errorf("grantor %s: %d results for %d leases", grantor, len(results), len(rs))
	}
	out := make([]Result, len(rs))
	for i, r := range results {
		out[i] = Result{Expiration: r.Expiration, Err: r.Error}
	}
	return out, nil
}

// definiteStatus tells the statuses of a call refused for good.
func definiteStatus(status int) bool {
	return status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

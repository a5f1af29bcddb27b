package renewal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
)

// HTTPRenewer renews leases at grantors that speak API.md's lease
// endpoints: POST {grantor}/v1/leases/renew.
type HTTPRenewer struct {
	Client *http.Client // nil: 30 s timeout
}

// RenewAll implements Renewer.
func (h HTTPRenewer) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error) {
	type item struct {
		ID       string `json:"id"`
		Duration int64  `json:"duration"`
	}
	body := struct {
		Leases []item `json:"leases"`
	}{Leases: make([]item, len(rs))}
	for i, r := range rs {
		body.Leases[i] = item{r.ID, r.Duration}
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(grantor, "/")+"/v1/leases/renew", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("grantor %q: %w", grantor, err)
	}
	req.Header.Set("Content-Type", "application/json")
	hc := h.Client
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err // unreachable, timeout: indefinite
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout {
		return nil, fmt.Errorf("grantor %s answered %s", grantor, resp.Status)
	}
	if resp.StatusCode/100 != 2 {
		// The call itself refused (no such endpoint, a bad request): a
		// definite failure for every lease in it.
		var eb struct {
			Error fault.Error `json:"error"`
		}
		if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
			eb.Error = fault.Error{Code: fault.NoSuchObject, Message: fmt.Sprintf("grantor %s answered %s", grantor, resp.Status)}
		}
		out := make([]Result, len(rs))
		for i := range out {
			e := eb.Error
			out[i] = Result{Err: &e}
		}
		return out, nil
	}
	var answer struct {
		Results []struct {
			ID         string       `json:"id"`
			Expiration int64        `json:"expiration"`
			Error      *fault.Error `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || len(answer.Results) != len(rs) {
		return nil, fmt.Errorf("grantor %s: unreadable answer to renewAll (%d results for %d leases): %v", grantor, len(answer.Results), len(rs), err)
	}
	out := make([]Result, len(rs))
	for i, r := range answer.Results {
		out[i] = Result{Expiration: r.Expiration, Err: r.Error}
	}
	return out, nil
}

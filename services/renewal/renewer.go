package renewal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// HTTPRenewer renews leases at grantors that speak API.md's lease
// endpoints (another jinid, or anything that answers them), through the
// API's Go client: POST {grantor}/v1/leases/renew.
type HTTPRenewer struct {
	// Client makes the requests (the daemon's outbound client); nil
	// means an outbound client with the policy's fixed rules. Either way
	// what a grantor answers is read within outbound's bound.
	Client http1.Doer
}

// RenewAll implements Renewer. A call refused as a whole with 4xx is a
// definite failure of every lease in it; 5xx, 408, 429, an unreachable
// grantor or an unreadable answer are indefinite. What a grantor said in
// the API's coded errors (for the call or for a lease) is carried, code
// and message, into each lease's result; any other answer is an error
// the service turns into a category.
func (h HTTPRenewer) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error) {
	hc := h.Client
	if hc == nil {
		hc = outbound.New(outbound.Config{})
	}
	c, err := client.New(grantor, hc)
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
		e := grantorError(answered.Err)
		if !answered.Coded {
			// No coded error: the endpoint is not there.
			e = &apitypes.Error{Code: apitypes.NoSuchObject, Message: "the grantor has no lease renewal endpoint"}
		}
		return each(len(rs), Result{Err: e}), nil
	case errors.As(err, &answered) && answered.Coded:
		// Refused for now (503, 429, ...), saying why: try again.
		return each(len(rs), Result{Err: grantorError(answered.Err), Retry: true}), nil
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

// Renewers renew each grantor's leases with the renewer of its kind:
// HTTP grantors speak API.md, "jeri:" ones are Java's (their leases
// handed in by Java clients; none in a build without Java).
type Renewers struct {
	HTTP, Java Renewer
	_          [0]func() // not comparable: no equality code for it
}

// RenewAll implements Renewer.
func (m *Renewers) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]Result, error) {
	if m.Java != nil && strings.HasPrefix(grantor, "jeri:") {
		return m.Java.RenewAll(ctx, grantor, rs)
	}
	return m.HTTP.RenewAll(ctx, grantor, rs)
}

// each is n copies of r.
func each(n int, r Result) []Result {
	out := make([]Result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// grantorMessages are the codes a grantor's refusal of a renewal may
// carry, with this service's words for each when the grantor gave none.
var grantorMessages = map[apitypes.Code]string{
	apitypes.UnknownLease:    "the grantor does not know the lease (it ended or was cancelled)",
	apitypes.LeaseDenied:     "the grantor denied the renewal",
	apitypes.NoSuchObject:    "the grantor has no such lease to renew",
	apitypes.InvalidArgument: "the grantor refused the renewal's arguments",
	apitypes.NullArgument:    "the grantor refused the renewal's arguments",
	apitypes.Internal:        "the grantor failed to renew the lease",
	apitypes.Unavailable:     "the grantor cannot renew leases just now",
	apitypes.TooMany:         "the grantor refused the renewal: too many requests",
	apitypes.Unauthenticated: "the grantor refused the renewal: not authorized",
}

// maxGrantorMessage bounds what of a grantor's message a client is told.
const maxGrantorMessage = 200

// grantorError is what a client is told of a grantor's coded refusal
// (LR.2: the exception the last attempt ended with): the grantor's code,
// if it is one a grantor answers, and its message, bounded and made
// printable; any other code is a bad answer, told in this service's
// words alone.
func grantorError(e apitypes.Error) *apitypes.Error {
	def, ok := grantorMessages[e.Code]
	if !ok {
		return &apitypes.Error{Code: apitypes.BadAnswer, Message: "the grantor did not answer as the protocol wants"}
	}
	msg := printable(e.Message, maxGrantorMessage)
	if msg == "" {
		msg = def
	}
	return &apitypes.Error{Code: e.Code, Message: msg}
}

// printable is s with every character that is not printable (controls,
// invalid UTF-8, format characters) replaced by a space, runs of spaces
// made one, and cut to at most max bytes on a character boundary.
func printable(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = ' '
		}
		if r == ' ' {
			if space || b.Len() == 0 {
				continue
			}
			space = true
		} else {
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), " ")
}

// definiteStatus tells the statuses of a call refused for good.
func definiteStatus(status int) bool {
	return status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

package renewal

import (
	"context"
	"testing"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// Each renewal call is counted by grantor; a call that failed, whole or
// for a lease, is a failure too, told as a category (never the grantor's
// own words).
func TestCallsCountedByGrantor(t *testing.T) {
	reg := metrics.New()
	var heard []fault.Code
	s := &Service{cfg: Config{OnFailure: func(_ string, why fault.Code) { heard = append(heard, why) }},
		calls:    reg.Counter("jinid_renewal_calls_total", "Calls.", "grantor"),
		failures: reg.Counter("jinid_renewal_failures_total", "Failures.", "grantor")}
	g := "http://10.0.0.2:4162"
	s.countCall(g, []Result{{Expiration: 1}}, nil)
	s.countCall(g, []Result{{Expiration: 1}, {Err: &fault.Error{Code: apitypes.UnknownLease, Message: "<the grantor's words>"}}}, nil)
	s.countCall(g, nil, context.DeadlineExceeded)
	if c, f := s.calls.Get(g), s.failures.Get(g); c != 3 || f != 2 {
		t.Errorf("calls %d, failures %d; want 3 and 2", c, f)
	}
	if len(heard) != 2 || heard[0] != apitypes.UnknownLease || heard[1] != apitypes.Timeout {
		t.Errorf("failures heard as %q, want UnknownLease and Timeout", heard)
	}
}

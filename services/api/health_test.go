package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/api"
)

// /healthz and /readyz answer JSON naming every check, 503 with the
// failing ones when any fails, and follow the checks as they change;
// /metrics counts them by route and status.
func TestHealthTransitions(t *testing.T) {
	var storeOK, wedged atomic.Bool
	storeOK.Store(true)
	reg := metrics.New()
	h := api.New(api.Config{Metrics: reg,
		Live: func() []api.Check {
			return []api.Check{{Name: "serving", OK: true}, {Name: "store_writer", OK: !wedged.Load()}}
		},
		Ready: func() []api.Check {
			c := api.Check{Name: "store", OK: storeOK.Load()}
			if !c.OK {
				c.Detail = "no space left on the disk"
			}
			return []api.Check{c, {Name: "multicast", OK: true, Detail: "on (eth0)"}}
		}})
	get := func(path string) (int, api.Health, http.Header) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var body api.Health
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %q: %v", path, rec.Body, err)
		}
		return rec.Code, body, rec.Header()
	}
	for _, step := range []struct {
		storeOK, wedged bool
		path            string
		code            int
		status          string
		failing         string
	}{
		{true, false, "/readyz", 200, "ready", ""},
		{false, false, "/readyz", 503, "not ready", "store"},
		{false, false, "/healthz", 200, "ok", ""}, // a full disk is not a reason to restart
		{true, false, "/readyz", 200, "ready", ""},
		{true, true, "/healthz", 503, "failing", "store_writer"},
		{true, false, "/healthz", 200, "ok", ""},
	} {
		storeOK.Store(step.storeOK)
		wedged.Store(step.wedged)
		code, body, hdr := get(step.path)
		if code != step.code || body.Status != step.status || strings.Join(body.Failing, ",") != step.failing || len(body.Checks) != 2 {
			t.Errorf("%+v: %d %+v", step, code, body)
		}
		if (code == 503) != (hdr.Get("Retry-After") != "") {
			t.Errorf("%+v: Retry-After %q", step, hdr.Get("Retry-After"))
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{`jinid_api_requests_total{route="GET /readyz",code="503"} 1`, `jinid_api_requests_total{route="GET /healthz",code="200"} 2`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

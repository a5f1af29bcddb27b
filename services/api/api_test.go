package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/apidoc"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store/storetest"
)

type env struct {
	srv *httptest.Server
	c   *client.Client
	r   *lookup.Registrar
	g   *lease.Grantor
}

func newEnv(t testing.TB) *env {
	st := storetest.Open(t, t.TempDir())
	g := lease.New(st, clock.Real{}, slog.New(slog.DiscardHandler))
	d := event.New(event.Config{})
	r, err := lookup.New(lookup.Config{Store: st, Grantor: g, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(apidoc.Handler(t, api.New(api.Config{Services: []httpjson.Service{g, r},
		NotRun: []api.NotRun{{Prefix: "/v1/lds/", Name: "lookup discovery service"}, {Prefix: "/v1/mailbox/", Name: "event mailbox"}}})))
	t.Cleanup(func() { srv.Close(); d.Shutdown(context.Background()); g.Shutdown(context.Background()); st.Close() })
	c, _ := client.New(srv.URL, nil)
	return &env{srv: srv, c: c, r: r, g: g}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, says               string
	}{
		{"not JSON", "POST", "/v1/lookup/services", `{"item":`, 400, "InvalidArgument", "request body"},
		{"unknown field", "POST", "/v1/lookup/services", `{"item":{},"leaseDuration":1000,"colour":"red"}`, 400, "InvalidArgument", `unknown field \"colour\"`},
		{"empty body", "POST", "/v1/lookup/query", ``, 400, "NullArgument", "request body is empty"},
		{"missing duration", "POST", "/v1/lookup/services", `{"item":{}}`, 400, "NullArgument", "leaseDuration is required"},
		{"zero duration", "POST", "/v1/lookup/services", `{"item":{"types":["a.B"]},"leaseDuration":0}`, 400, "InvalidArgument", "must be positive"},
		{"item of nothing", "POST", "/v1/lookup/services", `{"item":{},"leaseDuration":1000}`, 400, "InvalidArgument", "needs a type or an attribute"},
		{"type not a Java name", "POST", "/v1/lookup/services", `{"item":{"types":["not a java name!!"]},"leaseDuration":1000}`, 400, "InvalidArgument", "is not a Java class or interface name"},
		{"entry class not a Java name", "POST", "/v1/lookup/services", `{"item":{"attributes":[{"type":"9lives","fields":{}}]},"leaseDuration":1000}`, 400, "InvalidArgument", "is not a Java class name"},
		{"missing template", "POST", "/v1/lookup/query", `{"maxMatches":1}`, 400, "NullArgument", "template is required"},
		{"trailing data", "POST", "/v1/lookup/query", `{"template":{},"maxMatches":1} {}`, 400, "InvalidArgument", "unexpected data"},
		{"huge body", "POST", "/v1/lookup/services", `{"item":{"endpoint":"` + strings.Repeat("x", httpjson.DefaultBodyBytes) + `"},"leaseDuration":1}`, 413, "TooLarge", "larger than"},
		{"unknown lease", "POST", "/v1/leases/nope/renew", `{"duration":1000}`, 404, "UnknownLease", "unknown"},
		{"unknown route", "GET", "/v1/nothing", ``, 404, "UnsupportedOperation", "not part of the API"},
		{"service not run", "POST", "/v1/lds/registrations", `{}`, 404, "UnsupportedOperation", "runs no lookup discovery service"},
		{"mailbox not run", "POST", "/v1/mailbox/listeners/x", `{}`, 404, "UnsupportedOperation", "runs no event mailbox"},
		{"batch without leases", "POST", "/v1/leases/renew", `{}`, 400, "NullArgument", "leases is required"},
		{"no such service", "GET", "/v1/lookup/services/01234567-89ab-cdef-fedc-ba9876543210", ``, 404, "NoSuchObject", "no service"},
		// The wrong kind of value is told in JSON's terms, not Go's.
		{"a string for an array", "POST", "/v1/lookup/services", `{"item":{"types":"x"},"leaseDuration":1000}`, 400, "InvalidArgument", "item.types: want an array, not a JSON string"},
		{"a string for a number", "POST", "/v1/lookup/services", `{"item":{},"leaseDuration":"long"}`, 400, "InvalidArgument", "leaseDuration: want a whole number, not a JSON string"},
		{"an array for an object", "POST", "/v1/lookup/query", `{"template":[],"maxMatches":1}`, 400, "InvalidArgument", "template: want an object, not a JSON array"},
		{"a number for a string", "POST", "/v1/lookup/services", `{"item":{"serviceID":7},"leaseDuration":1000}`, 400, "InvalidArgument", "item.serviceID: want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.srv.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body strings.Builder
			buf := make([]byte, 4096)
			n, _ := resp.Body.Read(buf)
			body.Write(buf[:n])
			if resp.StatusCode != tc.status || !strings.Contains(body.String(), `"code":"`+tc.code+`"`) || !strings.Contains(body.String(), tc.says) {
				t.Fatalf("%d %s; want %d %s saying %q", resp.StatusCode, body.String(), tc.status, tc.code, tc.says)
			}
			for _, goWord := range []string{"Go struct", "Go value", "[]string", "int64", "json:", "struct {", "*apitypes", "main."} {
				if strings.Contains(body.String(), goWord) {
					t.Errorf("the answer speaks Go (%q): %s", goWord, body.String())
				}
			}
		})
	}
	if items, n := e.r.Count(); items != 0 || n != 0 {
		t.Fatalf("bad requests changed state: %d items, %d notify registrations", items, n)
	}
}

func TestLeaseBatchesOverHTTP(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	a, err := e.c.Register(ctx, apitypes.Item{Types: []string{"com.example.Leased"}}, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.c.RenewAll(ctx, []client.Renewal{{ID: a.Lease.ID, Duration: 120_000}, {ID: "gone", Duration: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Error != nil || res[0].Expiration <= a.Lease.Expiration || res[1].Error == nil || res[1].Error.Code != apitypes.UnknownLease {
		t.Fatalf("renewAll results %+v", res)
	}
	res, err = e.c.CancelAll(ctx, []string{"gone", a.Lease.ID})
	if err != nil || res[0].Error == nil || res[1].Error != nil {
		t.Fatalf("cancelAll results %+v %v", res, err)
	}
	if _, total, _ := e.c.Query(ctx, apitypes.Template{}, 10); total != 0 {
		t.Fatal("cancelled registration still there")
	}
}

// With a fallback, what no route takes goes to it, behind the guard (a
// route of another method on the same path too); the routes and the
// health endpoints stay the API's own.
func TestFallback(t *testing.T) {
	follower := lookup.NewFollower(lookup.Config{})
	var fell []string
	h := api.New(api.Config{Services: []httpjson.Service{follower},
		Fallback: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fell = append(fell, r.Method+" "+r.URL.Path)
			w.WriteHeader(http.StatusAccepted)
		})})
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/lookup/services", http.StatusOK},
		{"POST", "/v1/lookup/services", http.StatusAccepted},
		{"GET", "/v1/renewal/sets/x", http.StatusAccepted},
		{"GET", "/metrics", http.StatusAccepted},
		{"GET", "/healthz", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader("")))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.code)
		}
	}
	if want := []string{"POST /v1/lookup/services", "GET /v1/renewal/sets/x", "GET /metrics"}; strings.Join(fell, ",") != strings.Join(want, ",") {
		t.Errorf("fell back: %v, want %v", fell, want)
	}
}

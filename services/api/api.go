// Package api assembles jinid's HTTP/JSON client API (shared/design/API.md,
// and docs/api/openapi.yaml in this repository): each service registers
// its own routes (its http.go), each with what it needs of its caller, and
// this package puts them on one mux behind the access guard, with a coded
// answer for everything else under /v1/ and the operations endpoints
// (/healthz). The error model and the wire types are apitypes; what the
// handlers share is httpjson; who may call what is access.
package api

import (
	"cmp"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
)

// Config says what the API serves.
type Config struct {
	// Services are the parts of the API the daemon runs, each with its
	// routes.
	Services []httpjson.Service
	// NotRun are parts of the API this daemon does not run: their prefix
	// answers so, rather than "not part of the API".
	NotRun []NotRun
	// Guard checks every request and each route's need; nil serves
	// everyone everything (a service's own tests).
	Guard *access.Guard
	// BodyBytes bounds request bodies; 0 means httpjson's default.
	BodyBytes int64
	// Live are the liveness checks of GET /healthz (the process can
	// serve: nothing in it is wedged); nil: answering is enough.
	Live func() []Check
	// Ready are the readiness checks of GET /readyz (the daemon can do
	// its work: its store can be written, its services run, multicast is
	// joined); nil is always ready.
	Ready  func() []Check
	Logger *slog.Logger
	// Metrics, if set, counts requests by route and status, and is
	// served at GET /metrics (read scope).
	Metrics *metrics.Registry
	// Status, if set, is the status page, served at GET / (read scope).
	Status http.HandlerFunc
	// Fallback, if set, answers every request no route takes, behind the
	// guard (a node of a cluster that does not hold the store forwards
	// them to the node that does), rather than "not part of the API".
	Fallback http.Handler
}

// Check is one health or readiness check, as /healthz and /readyz list
// them.
type Check = httpjson.Check

// Health is the body of /healthz and /readyz: the status, and every
// check with its outcome.
type Health struct {
	Status string  `json:"status"`
	Checks []Check `json:"checks"`
	// Failing names the checks that fail, in order.
	Failing []string `json:"failing,omitempty"`
}

// health answers a set of checks: 200 with status ok when all pass, 503
// naming the failing ones otherwise.
func health(w http.ResponseWriter, checks []Check, ok, failing string) {
	h := Health{Status: ok, Checks: checks}
	if h.Checks == nil {
		h.Checks = []Check{}
	}
	for _, c := range checks {
		if !c.OK {
			h.Failing = append(h.Failing, c.Name)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	if len(h.Failing) > 0 {
		h.Status = failing
		w.Header().Set("Retry-After", "10")
		httpjson.Write(w, http.StatusServiceUnavailable, h)
		return
	}
	httpjson.Write(w, http.StatusOK, h)
}

// NotRun names a part of the API by its prefix.
type NotRun struct{ Prefix, Name string }

// guarded is the mux the services register on: each route behind the
// guard's check of its need.
type guarded struct {
	mux   *http.ServeMux
	guard *access.Guard
}

func (g guarded) Handle(need httpjson.Need, pattern string, h http.HandlerFunc) {
	if g.guard != nil {
		h = g.guard.Require(need, h)
	}
	g.mux.HandleFunc(pattern, h)
}

// New returns the API's handler.
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	for _, svc := range cfg.Services {
		svc.Routes(guarded{mux, cfg.Guard})
	}
	for _, n := range cfg.NotRun {
		mux.HandleFunc(n.Prefix, func(w http.ResponseWriter, _ *http.Request) {
			httpjson.WriteError(w, fault.New(apitypes.UnsupportedOperation, "this jinid runs no %s", n.Name), http.StatusNotFound)
		})
	}
	if cfg.Fallback != nil {
		mux.Handle("/", cfg.Fallback)
	} else {
		mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			httpjson.WriteError(w, fault.New(apitypes.UnsupportedOperation, "%s %s is not part of the API", r.Method, r.URL.Path), http.StatusNotFound)
		})
	}
	// Health and readiness need nothing of the caller: a load balancer
	// or a service manager asks without a token.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		var checks []Check
		if cfg.Live != nil {
			checks = cfg.Live()
		}
		health(w, checks, "ok", "failing")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var checks []Check
		if cfg.Ready != nil {
			checks = cfg.Ready()
		}
		health(w, checks, "ready", "not ready")
	})
	ops := guarded{mux, cfg.Guard}
	if cfg.Metrics != nil {
		ops.Handle(httpjson.Read, "GET /metrics", cfg.Metrics.Handler().ServeHTTP)
	}
	if cfg.Status != nil {
		ops.Handle(httpjson.Read, "GET /{$}", cfg.Status)
	}
	var h http.Handler = mux
	if cfg.BodyBytes > 0 {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mux.ServeHTTP(w, r.WithContext(httpjson.WithBodyLimit(r.Context(), cfg.BodyBytes)))
		})
	}
	if cfg.Guard != nil {
		h = cfg.Guard.Handler(h)
	}
	if cfg.Metrics == nil {
		return h
	}
	return counted(h, mux, cfg.Metrics)
}

// counted counts each request by the route the mux matches (its
// pattern: a bounded set, never the path a client made up) and the status
// answered.
func counted(next http.Handler, mux *http.ServeMux, reg *metrics.Registry) http.Handler {
	requests := reg.Counter("jinid_api_requests_total",
		`HTTP requests to the API and the operations endpoints, by route ("METHOD /pattern"; "unmatched" for none) and status code.`,
		"route", "code")
	// In flight, by route (a bounded set): a long poll counts while it
	// waits. (A gauge several APIs of one daemon move together: a
	// cluster's node runs its door's and the holder's.)
	inFlight := reg.Gauge("jinid_api_requests_in_flight", "API requests being answered now, by route (a long poll counts while it waits).", "route")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, route := mux.Handler(r)
		if route == "" {
			route = "unmatched"
		}
		inFlight.Add(1, route)
		defer inFlight.Add(-1, route)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		requests.Inc(route, strconv.Itoa(cmp.Or(sw.status, http.StatusOK)))
	})
}

// statusWriter notes the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets long polls flush through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Routes lists the "METHOD /path" patterns the services register, for
// documentation tests.
func Routes(services ...httpjson.Service) []string {
	return slices.Sorted(maps.Keys(Needs(services...)))
}

// Needs maps each route the services register to what it needs of its
// caller, for documentation tests.
func Needs(services ...httpjson.Service) map[string]httpjson.Need {
	p := httpjson.Patterns{}
	for _, svc := range services {
		svc.Routes(p)
	}
	return p
}

// Package api assembles jinid's HTTP/JSON client API (shared/design/API.md,
// and docs/api/openapi.yaml in this repository): each service registers
// its own routes (its http.go), each with what it needs of its caller, and
// this package puts them on one mux behind the access guard, with a coded
// answer for everything else under /v1/ and the operations endpoints
// (/healthz). The error model and the wire types are apitypes; what the
// handlers share is httpjson; who may call what is access.
package api

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/jinid/jinid/services/access"
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
	// Ready says whether the daemon can do its work, and if not what
	// fails (its store cannot be written, say); nil is always ready.
	Ready  func() (ok bool, failing string)
	Logger *slog.Logger
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
			httpjson.WriteError(w, fault.New(fault.UnsupportedOperation, "this jinid runs no %s", n.Name), http.StatusNotFound)
		})
	}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, fault.New(fault.UnsupportedOperation, "%s %s is not part of the API", r.Method, r.URL.Path), http.StatusNotFound)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil {
			if ok, failing := cfg.Ready(); !ok {
				w.Header().Set("Retry-After", "10")
				httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "failing": failing})
				return
			}
		}
		httpjson.Write(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	var h http.Handler = mux
	if cfg.BodyBytes > 0 {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mux.ServeHTTP(w, r.WithContext(httpjson.WithBodyLimit(r.Context(), cfg.BodyBytes)))
		})
	}
	if cfg.Guard == nil {
		return h
	}
	return cfg.Guard.Handler(h)
}

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

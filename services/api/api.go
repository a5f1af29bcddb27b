// Package api assembles jinid's HTTP/JSON client API (shared/design/API.md,
// and docs/api/openapi.yaml in this repository): each service registers
// its own routes (its http.go), and this package puts them on one mux with
// a coded answer for everything else under /v1/ and the operations
// endpoints (/healthz). The error model and the wire types are apitypes;
// what the handlers share is httpjson.
package api

import (
	"log/slog"
	"net/http"

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
	Logger *slog.Logger
}

// NotRun names a part of the API by its prefix.
type NotRun struct{ Prefix, Name string }

// New returns the API's handler.
func New(cfg Config) *http.ServeMux {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	for _, svc := range cfg.Services {
		svc.Routes(mux)
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
	return mux
}

// Routes lists the "METHOD /path" patterns the services register, for
// documentation tests.
func Routes(services ...httpjson.Service) []string {
	var p httpjson.Patterns
	for _, svc := range services {
		svc.Routes(&p)
	}
	return p
}

// Package api serves jinid's HTTP/JSON client API (shared/design/API.md,
// and docs/api/openapi.yaml in this repository): the error model, request
// limits, and the routes of the lease grantor and the lookup service.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
)

// MaxBody bounds a request body.
const MaxBody = 1 << 20

// Config gives the API the services it serves.
type Config struct {
	Grantor   *lease.Grantor
	Registrar *lookup.Registrar
	// LDS is the lookup discovery service; nil serves none.
	LDS *lds.Service
	// Renewal is the lease renewal service; nil serves none.
	Renewal *renewal.Service
	// Mailbox is the event mailbox; nil serves none.
	Mailbox *mailbox.Service
	Logger  *slog.Logger
	// Now is the clock for "remaining" in leases; default time.Now.
	Now func() time.Time
	// UnicastPort tells where the lookup service answers unicast
	// discovery.
	UnicastPort func() int
}

// Lease is a lease as the API shows it.
type Lease struct {
	Grantor    string `json:"grantor"`
	ID         string `json:"id"`
	Expiration int64  `json:"expiration"`
	Remaining  int64  `json:"remaining"`
}

type server struct {
	cfg Config
	log *slog.Logger
}

// Register adds the API's routes, under /v1, to mux.
func Register(mux *http.ServeMux, cfg Config) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.UnicastPort == nil {
		cfg.UnicastPort = func() int { return 4160 }
	}
	s := &server{cfg: cfg, log: cfg.Logger}
	for _, rt := range s.routes() {
		mux.HandleFunc(rt.pattern, rt.h)
	}
	// A service the daemon does not run has no routes, only an answer
	// saying so; the handlers of those it runs can rely on them.
	for _, svc := range s.services() {
		if svc.on {
			for _, rt := range svc.routes {
				mux.HandleFunc(rt.pattern, rt.h)
			}
			continue
		}
		name := svc.name
		mux.HandleFunc(svc.prefix, func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, fault.New(fault.UnsupportedOperation, "this jinid runs no %s", name), http.StatusNotFound)
		})
	}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fault.New(fault.UnsupportedOperation, "%s %s is not part of the API", r.Method, r.URL.Path), http.StatusNotFound)
	})
}

type route struct {
	pattern string
	h       http.HandlerFunc
}

func (s *server) routes() []route {
	return []route{
		{"POST /v1/leases/{id}/renew", s.renew},
		{"DELETE /v1/leases/{id}", s.cancel},
		{"POST /v1/leases/renew", s.renewAll},
		{"POST /v1/leases/cancel", s.cancelAll},
		{"GET /v1/lookup", s.lookupInfo},
		{"POST /v1/lookup/services", s.register},
		{"GET /v1/lookup/services", s.list},
		{"GET /v1/lookup/services/{serviceID}", s.get},
		{"POST /v1/lookup/query", s.query},
		{"POST /v1/lookup/notify", s.notify},
		{"POST /v1/lookup/services/{serviceID}/attributes", s.attributes},
		{"GET /v1/lookup/groups", s.getGroups},
		{"PUT /v1/lookup/groups", s.putGroups},
		{"GET /v1/lookup/locators", s.getLocators},
		{"PUT /v1/lookup/locators", s.putLocators},
	}
}

// service is an optional service's routes, under one prefix.
type service struct {
	prefix, name string
	on           bool
	routes       []route
}

func (s *server) services() []service {
	return []service{
		{"/v1/lds/", "lookup discovery service", s.cfg.LDS != nil, s.ldsRoutes()},
		{"/v1/renewal/", "lease renewal service", s.cfg.Renewal != nil, s.renewalRoutes()},
		{"/v1/mailbox/", "event mailbox", s.cfg.Mailbox != nil, s.mailboxRoutes()},
	}
}

// Routes lists the API's "METHOD /path" patterns, for documentation tests.
func Routes() []string {
	var out []string
	s := &server{}
	rs := s.routes()
	for _, svc := range s.services() {
		rs = append(rs, svc.routes...)
	}
	for _, r := range rs {
		out = append(out, r.pattern)
	}
	return out
}

// ErrorBody is the error model of the API.
type ErrorBody struct {
	Error fault.Error `json:"error"`
}

func writeError(w http.ResponseWriter, err error, status ...int) {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		fe = &fault.Error{Code: fault.Internal, Message: err.Error()}
	}
	code := fe.Code.Status()
	if len(status) > 0 {
		code = status[0]
	}
	writeJSON(w, code, ErrorBody{Error: *fe})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v: bounded in size, no unknown fields,
// nothing after the value. A bad body changes nothing, and says why.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return fault.New(fault.InvalidArgument, "request body is larger than %d bytes", MaxBody)
		case errors.Is(err, io.EOF):
			return fault.New(fault.NullArgument, "request body is empty; a JSON object is required")
		}
		return fault.New(fault.InvalidArgument, "request body: %v", err)
	}
	if dec.More() {
		return fault.New(fault.InvalidArgument, "request body: unexpected data after the JSON object")
	}
	return nil
}

func (s *server) leaseOf(r *http.Request, rec lease.Record) Lease {
	rem := lease.Remaining(rec.Expiration, s.cfg.Now().UnixMilli())
	return Lease{Grantor: "http://" + r.Host, ID: rec.ID, Expiration: rec.Expiration, Remaining: rem}
}

func required(name string, v *int64) error {
	if v == nil {
		return fault.New(fault.NullArgument, "%s is required (milliseconds; -1 for ANY, %d for FOREVER)", name, lease.Forever)
	}
	return nil
}

// Leases --------------------------------------------------------------

func (s *server) renew(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Duration *int64 `json:"duration"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := required("duration", req.Duration); err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Renew(r.PathValue("id"), *req.Duration)
	if err != nil {
		writeError(w, err)
		return
	}
	l := s.leaseOf(r, rec)
	writeJSON(w, http.StatusOK, map[string]int64{"expiration": l.Expiration, "granted": l.Remaining})
}

func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Grantor.Cancel(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// BatchResult is one lease's outcome in a batch.
type BatchResult struct {
	ID         string       `json:"id"`
	Expiration int64        `json:"expiration,omitempty"`
	Error      *fault.Error `json:"error,omitempty"`
}

func asFault(err error) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	return &fault.Error{Code: fault.Internal, Message: err.Error()}
}

func (s *server) renewAll(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Leases []struct {
			ID       string `json:"id"`
			Duration *int64 `json:"duration"`
		} `json:"leases"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Leases == nil {
		writeError(w, fault.New(fault.NullArgument, "leases is required"))
		return
	}
	rs := make([]lease.Renewal, len(req.Leases))
	for i, l := range req.Leases {
		if err := required(fmt.Sprintf("leases[%d].duration", i), l.Duration); err != nil {
			writeError(w, err)
			return
		}
		rs[i] = lease.Renewal{ID: l.ID, Duration: *l.Duration}
	}
	results := s.cfg.Grantor.RenewAll(rs)
	out := make([]BatchResult, len(results))
	for i, res := range results {
		out[i] = BatchResult{ID: rs[i].ID}
		if res.Err != nil {
			out[i].Error = asFault(res.Err)
		} else {
			out[i].Expiration = res.Lease.Expiration
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

func (s *server) cancelAll(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IDs []string `json:"ids"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.IDs == nil {
		writeError(w, fault.New(fault.NullArgument, "ids is required"))
		return
	}
	errs := s.cfg.Grantor.CancelAll(req.IDs)
	out := make([]BatchResult, len(errs))
	for i, err := range errs {
		out[i] = BatchResult{ID: req.IDs[i]}
		if err != nil {
			out[i].Error = asFault(err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

// Lookup --------------------------------------------------------------

func (s *server) lookupInfo(w http.ResponseWriter, r *http.Request) {
	m := s.cfg.Registrar.Meta()
	host := r.Host
	if h, _, ok := strings.Cut(r.Host, ":"); ok && !strings.HasPrefix(r.Host, "[") {
		host = h
	} else if strings.HasPrefix(r.Host, "[") {
		host = r.Host[:strings.Index(r.Host, "]")+1]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"serviceID": m.ServiceID, "groups": m.Groups,
		"locator": fmt.Sprintf("jini://%s:%d", host, s.cfg.UnicastPort()),
	})
}

func (s *server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Item          *lookup.Item `json:"item"`
		LeaseDuration *int64       `json:"leaseDuration"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Item == nil {
		writeError(w, fault.New(fault.NullArgument, "item is required"))
		return
	}
	if err := required("leaseDuration", req.LeaseDuration); err != nil {
		writeError(w, err)
		return
	}
	reg, err := s.cfg.Registrar.Register(*req.Item, *req.LeaseDuration)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"serviceID": reg.ServiceID, "lease": s.leaseOf(r, reg.Lease)})
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	items, total, err := s.cfg.Registrar.Query(lookup.Template{}, 1<<30)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "totalMatches": total})
}

// get returns one item and when its registration's lease ends (not the
// lease itself: ServiceIDs are public, lease IDs are capabilities).
func (s *server) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("serviceID")
	items, _, err := s.cfg.Registrar.Query(lookup.Template{ServiceID: id}, 1)
	if err == nil && len(items) == 0 {
		err = fault.New(fault.NoSuchObject, "no service %q is registered", id)
	}
	var rec lease.Record
	if err == nil {
		rec, err = s.cfg.Registrar.Lease(id)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"item": items[0], "expiration": rec.Expiration})
}

func (s *server) query(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Template   *lookup.Template `json:"template"`
		MaxMatches *int             `json:"maxMatches"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Template == nil {
		writeError(w, fault.New(fault.NullArgument, "template is required ({} matches everything)"))
		return
	}
	if req.MaxMatches == nil {
		writeError(w, fault.New(fault.NullArgument, "maxMatches is required"))
		return
	}
	items, total, err := s.cfg.Registrar.Query(*req.Template, *req.MaxMatches)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "totalMatches": total})
}

func (s *server) notify(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Template    *lookup.Template `json:"template"`
		Transitions []string         `json:"transitions"`
		Listener    *struct {
			URL string `json:"url"`
		} `json:"listener"`
		Handback      []byte `json:"handback"`
		LeaseDuration *int64 `json:"leaseDuration"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	switch {
	case req.Template == nil:
		writeError(w, fault.New(fault.NullArgument, "template is required ({} matches everything)"))
		return
	case req.Listener == nil:
		writeError(w, fault.New(fault.NullArgument, "listener is required"))
		return
	}
	if err := required("leaseDuration", req.LeaseDuration); err != nil {
		writeError(w, err)
		return
	}
	n, err := s.cfg.Registrar.Notify(lookup.NotifyRequest{Template: *req.Template, Transitions: req.Transitions,
		Listener: req.Listener.URL, Handback: req.Handback, Duration: *req.LeaseDuration})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": n.ID, "eventID": n.EventID, "seqNum": n.SeqNum, "lease": s.leaseOf(r, n.Lease)})
}

func (s *server) attributes(w http.ResponseWriter, r *http.Request) {
	var req lookup.AttributeChange
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.cfg.Registrar.ChangeAttributes(r.PathValue("serviceID"), req); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) getGroups(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"groups": s.cfg.Registrar.Meta().Groups})
}

func (s *server) putGroups(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Groups []string `json:"groups"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.cfg.Registrar.SetGroups(req.Groups); err != nil {
		writeError(w, err)
		return
	}
	s.getGroups(w, r)
}

func (s *server) getLocators(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"locators": s.cfg.Registrar.Meta().Locators})
}

func (s *server) putLocators(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Locators []string `json:"locators"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.cfg.Registrar.SetLocators(req.Locators); err != nil {
		writeError(w, err)
		return
	}
	s.getLocators(w, r)
}

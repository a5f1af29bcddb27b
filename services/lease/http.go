package lease

import (
	"fmt"
	"net/http"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
)

// Name, Prefix and Routes make the grantor a part of the API: the lease
// endpoints every grantor serves (API.md, "Leases").
func (g *Grantor) Name() string   { return "lease grantor" }
func (g *Grantor) Prefix() string { return "/v1/leases/" }

// Routes registers the lease endpoints.
func (g *Grantor) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Capability, "POST /v1/leases/{id}/renew", g.httpRenew)
	mux.Handle(httpjson.Capability, "DELETE /v1/leases/{id}", g.httpCancel)
	mux.Handle(httpjson.Capability, "POST /v1/leases/renew", g.httpRenewAll)
	mux.Handle(httpjson.Capability, "POST /v1/leases/cancel", g.httpCancelAll)
}

func (g *Grantor) httpRenew(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Duration *int64 `json:"duration"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := httpjson.Required("duration", req.Duration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rec, err := g.Renew(r.PathValue("id"), *req.Duration)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.Renewed{Expiration: rec.Expiration, Granted: apitypes.Remaining(rec.Expiration, g.now())})
}

func (g *Grantor) httpCancel(w http.ResponseWriter, r *http.Request) {
	if err := g.Cancel(r.PathValue("id")); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Grantor) httpRenewAll(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Leases []struct {
			ID       string `json:"id"`
			Duration *int64 `json:"duration"`
		} `json:"leases"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Leases == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "leases is required"))
		return
	}
	if err := g.CheckBatch(len(req.Leases)); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rs := make([]Renewal, len(req.Leases))
	for i, l := range req.Leases {
		if err := httpjson.Required(fmt.Sprintf("leases[%d].duration", i), l.Duration); err != nil {
			httpjson.WriteError(w, err)
			return
		}
		rs[i] = Renewal{ID: l.ID, Duration: *l.Duration}
	}
	results := g.RenewAll(rs)
	out := apitypes.BatchResults{Results: make([]apitypes.BatchResult, len(results))}
	for i, res := range results {
		out.Results[i] = apitypes.BatchResult{ID: fault.Short(rs[i].ID)}
		if res.Err != nil {
			out.Results[i].Error = fault.As(res.Err)
		} else {
			out.Results[i].Expiration, out.Results[i].Cut = res.Lease.Expiration, res.Lease.CutBy
		}
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (g *Grantor) httpCancelAll(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IDs []string `json:"ids"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.IDs == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "ids is required"))
		return
	}
	if err := g.CheckBatch(len(req.IDs)); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	errs := g.CancelAll(req.IDs)
	out := apitypes.BatchResults{Results: make([]apitypes.BatchResult, len(errs))}
	for i, err := range errs {
		out.Results[i] = apitypes.BatchResult{ID: fault.Short(req.IDs[i])}
		if err != nil {
			out.Results[i].Error = fault.As(err)
		}
	}
	httpjson.Write(w, http.StatusOK, out)
}

// DefaultMaxBatch bounds the leases of one batch request.
const DefaultMaxBatch = 1000

// SetMaxBatch bounds the leases of one batch request (the daemon's
// "batch" limit); 0 means DefaultMaxBatch.
func (g *Grantor) SetMaxBatch(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.maxBatch = n
}

// CheckBatch refuses a batch of n leases, more than one request may
// hold (SetMaxBatch).
func (g *Grantor) CheckBatch(n int) error {
	g.mu.Lock()
	max := g.maxBatch
	g.mu.Unlock()
	if max <= 0 {
		max = DefaultMaxBatch
	}
	if n > max {
		return fault.Limit(apitypes.TooLarge, "batch", 0, "a batch of %d leases; at most %d per request", n, max)
	}
	return nil
}

// Owned serves h only to the client that made the registration the
// request's {id} names (whose lease ID leaseOf gives), or to an
// administrator: anyone else is Forbidden (access.MayAct). One that is
// gone (leaseOf gives "") is h's to answer. what names the kind of
// registration in the refusal.
func (g *Grantor) Owned(what string, leaseOf func(id string) string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := g.MayAct(r.Context(), leaseOf(id), what+" "+fault.Short(id)); err != nil {
			httpjson.WriteError(w, err)
			return
		}
		h(w, r)
	}
}

// Shown is the lease ID a registration's lease is shown with to the
// request's caller: its own, for the client that made it (or an
// administrator); "" for anyone else, to whom it would be the power to
// cancel another's registration.
func (g *Grantor) Shown(r *http.Request, id string) string {
	if g.MayAct(r.Context(), id, "") != nil {
		return ""
	}
	return id
}

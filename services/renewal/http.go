package renewal

import (
	"net/http"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// Name, Prefix and Routes make the service a part of the API (API.md,
// "Lease renewal service").
func (s *Service) Name() string   { return "lease renewal service" }
func (s *Service) Prefix() string { return "/v1/renewal/" }

// Place and Holds spread the service's registrations among a cluster's
// shards (httpjson.Placer): a request goes with the {id} it names, a
// new registration with its owner's.
func (s *Service) Place(r *http.Request) httpjson.Place { return httpjson.ByKey(r.PathValue("id")) }
func (s *Service) Holds(id string) bool                 { _, err := s.Get(id); return err == nil }

// Routes registers the service's endpoints.
func (s *Service) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, "POST /v1/renewal/sets", s.httpCreate)
	mux.Handle(httpjson.Read, "GET /v1/renewal/sets/{id}", s.httpGet)
	// A set is changed, and its client leases (each a capability at its
	// grantor) listed, by the client that made it (or an administrator)
	// only.
	owned := func(h http.HandlerFunc) http.HandlerFunc { return s.cfg.Grantor.Owned("renewal set", s.leaseOf, h) }
	mux.Handle(httpjson.Client, "POST /v1/renewal/sets/{id}/leases", owned(s.httpRenewFor))
	mux.Handle(httpjson.Read, "GET /v1/renewal/sets/{id}/leases", owned(s.httpLeases))
	mux.Handle(httpjson.Client, "DELETE /v1/renewal/sets/{id}/leases/{key}", owned(s.httpRemove))
	mux.Handle(httpjson.Client, "PUT /v1/renewal/sets/{id}/warning-listener", owned(s.httpSetWarning))
	mux.Handle(httpjson.Client, "DELETE /v1/renewal/sets/{id}/warning-listener", owned(s.httpClear(true)))
	mux.Handle(httpjson.Client, "PUT /v1/renewal/sets/{id}/failure-listener", owned(s.httpSetFailure))
	mux.Handle(httpjson.Client, "DELETE /v1/renewal/sets/{id}/failure-listener", owned(s.httpClear(false)))
}

func (s *Service) leases() httpjson.Leases { return httpjson.Leases{Now: s.clock.Now} }

// apiLease is a client lease (granted elsewhere) as the API shows it.
func (s *Service) apiLease(l ClientLease) apitypes.Lease {
	return apitypes.Lease{Grantor: l.Grantor, ID: l.ID, Expiration: l.Expiration, Remaining: apitypes.Remaining(l.Expiration, s.now())}
}

func (s *Service) httpCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LeaseDuration *int64 `json:"leaseDuration"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := httpjson.Required("leaseDuration", req.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	c, err := s.Create(*req.LeaseDuration, access.PrincipalOf(r.Context()).Owner())
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.RenewalSet{ID: c.ID, Lease: lease.Shown(s.leases().Of(r, c.Lease.ID, c.Lease.Expiration), c.Lease)})
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) {
	info, err := s.Get(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		httpjson.WriteError(w, noSuchSet(info.ID))
		return
	}
	out := map[string]any{"id": info.ID, "lease": s.leases().Of(r, s.cfg.Grantor.Shown(r, rec.ID), rec.Expiration), "leases": info.Leases,
		"warningListener": nil, "failureListener": nil}
	if wl := info.Warning; wl != nil {
		out["warningListener"] = map[string]any{"listener": apitypes.Listener{URL: wl.URL}, "minWarning": wl.MinWarning, "handback": wl.Handback}
	}
	if fl := info.Failure; fl != nil {
		out["failureListener"] = map[string]any{"listener": apitypes.Listener{URL: fl.URL}, "handback": fl.Handback}
	}
	httpjson.Write(w, http.StatusOK, out)
}

// httpRenewFor is renewFor: renewDuration left out means FOREVER (the
// two-argument form).
func (s *Service) httpRenewFor(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Lease *struct {
			Grantor    string `json:"grantor"`
			ID         string `json:"id"`
			Expiration *int64 `json:"expiration"`
			Remaining  *int64 `json:"remaining"`
		} `json:"lease"`
		DesiredDuration *int64 `json:"desiredDuration"`
		RenewDuration   *int64 `json:"renewDuration"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Lease == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "lease is required"))
		return
	}
	if req.DesiredDuration == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "desiredDuration is required (milliseconds; %d for as long as possible)", apitypes.Forever))
		return
	}
	renew := apitypes.Forever
	if req.RenewDuration != nil {
		renew = *req.RenewDuration
	}
	// The DURATION form wins: it does not depend on the grantor's clock.
	var exp int64
	switch {
	case req.Lease.Remaining != nil && *req.Lease.Remaining == apitypes.Forever:
		exp = apitypes.Forever
	case req.Lease.Remaining != nil:
		exp = s.now() + *req.Lease.Remaining
	case req.Lease.Expiration != nil:
		exp = *req.Lease.Expiration
	default:
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "lease: expiration or remaining is required"))
		return
	}
	err := s.RenewFor(r.PathValue("id"), ClientLease{Grantor: req.Lease.Grantor, ID: req.Lease.ID, Expiration: exp,
		HostLocal: outbound.IsHostLocal(r.Context())}, *req.DesiredDuration, renew)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) httpLeases(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Leases(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	out := make([]apitypes.ClientLease, len(ms))
	for i, m := range ms {
		out[i] = apitypes.ClientLease{Lease: s.apiLease(m.ClientLease), DesiredExpiration: m.Desired, RenewDuration: m.RenewDuration}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"leases": out})
}

// httpRemove is remove: the lease, or null. {key} is "grantor|id" or the
// lease ID alone.
func (s *Service) httpRemove(w http.ResponseWriter, r *http.Request) {
	l, err := s.Remove(r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if l == nil {
		httpjson.Write(w, http.StatusOK, map[string]any{"lease": nil})
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"lease": s.apiLease(*l)})
}

type listenerBody struct {
	Listener   *apitypes.Listener `json:"listener"`
	MinWarning *int64             `json:"minWarning"`
	Handback   []byte             `json:"handback"`
}

func (s *Service) httpSetWarning(w http.ResponseWriter, r *http.Request) {
	req, err := decodeListener(w, r)
	if err == nil && req.MinWarning == nil {
		err = fault.New(apitypes.NullArgument, "minWarning is required (milliseconds before the set's lease ends)")
	}
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	reg, err := s.SetWarningListener(r.Context(), r.PathValue("id"), req.Listener.URL, *req.MinWarning, req.Handback)
	s.writeListenerReg(w, r, reg, err)
}

func (s *Service) httpSetFailure(w http.ResponseWriter, r *http.Request) {
	req, err := decodeListener(w, r)
	if err == nil && req.MinWarning != nil {
		err = fault.New(apitypes.InvalidArgument, "minWarning belongs to the warning listener")
	}
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	reg, err := s.SetFailureListener(r.Context(), r.PathValue("id"), req.Listener.URL, req.Handback)
	s.writeListenerReg(w, r, reg, err)
}

// decodeListener reads a listener body, which must name a listener.
func decodeListener(w http.ResponseWriter, r *http.Request) (listenerBody, error) {
	var req listenerBody
	if err := httpjson.Decode(w, r, &req); err != nil {
		return req, err
	}
	if req.Listener == nil {
		return req, fault.New(apitypes.NullArgument, "listener is required")
	}
	return req, nil
}

func (s *Service) writeListenerReg(w http.ResponseWriter, r *http.Request, reg Registration, err error) {
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(reg.Lease)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.ListenerRegistration{EventID: reg.EventID, SeqNum: reg.SeqNum,
		Lease: s.leases().Of(r, rec.ID, rec.Expiration)})
}

func (s *Service) httpClear(warning bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var err error
		if warning {
			err = s.ClearWarningListener(r.PathValue("id"))
		} else {
			err = s.ClearFailureListener(r.PathValue("id"))
		}
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// leaseOf is the lease ID of set id ("" for one that is gone).
func (s *Service) leaseOf(id string) string {
	info, _ := s.Get(id)
	return info.Lease
}

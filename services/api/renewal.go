package api

import (
	"net/http"

	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/renewal"
)

func (s *server) renewalRoutes() []route {
	return []route{
		{"POST /v1/renewal/sets", s.renewalCreate},
		{"GET /v1/renewal/sets/{id}", s.renewalGet},
		{"POST /v1/renewal/sets/{id}/leases", s.renewalRenewFor},
		{"GET /v1/renewal/sets/{id}/leases", s.renewalLeases},
		{"DELETE /v1/renewal/sets/{id}/leases/{key}", s.renewalRemove},
		{"PUT /v1/renewal/sets/{id}/warning-listener", s.renewalSetWarning},
		{"DELETE /v1/renewal/sets/{id}/warning-listener", s.renewalClear(true)},
		{"PUT /v1/renewal/sets/{id}/failure-listener", s.renewalSetFailure},
		{"DELETE /v1/renewal/sets/{id}/failure-listener", s.renewalClear(false)},
	}
}

// ClientLeaseJSON is a client lease as the API shows it: a lease of
// API.md, with what the set wants of it.
type ClientLeaseJSON struct {
	Lease
	DesiredExpiration int64 `json:"desiredExpiration,omitempty"`
	RenewDuration     int64 `json:"renewDuration,omitempty"`
}

func (s *server) clientLease(l renewal.ClientLease) Lease {
	return Lease{Grantor: l.Grantor, ID: l.ID, Expiration: l.Expiration, Remaining: lease.Remaining(l.Expiration, s.cfg.Now().UnixMilli())}
}

func (s *server) renewalCreate(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	var req struct {
		LeaseDuration *int64 `json:"leaseDuration"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := required("leaseDuration", req.LeaseDuration); err != nil {
		writeError(w, err)
		return
	}
	c, err := svc.Create(*req.LeaseDuration)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": c.ID, "lease": s.leaseOf(r, c.Lease)})
}

func (s *server) renewalGet(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	info, err := svc.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		writeError(w, fault.New(fault.NoSuchObject, "no renewal set %q", info.ID))
		return
	}
	out := map[string]any{"id": info.ID, "lease": s.leaseOf(r, rec), "leases": info.Leases,
		"warningListener": nil, "failureListener": nil}
	if wl := info.Warning; wl != nil {
		out["warningListener"] = map[string]any{"listener": map[string]string{"url": wl.URL}, "minWarning": wl.MinWarning, "handback": wl.Handback}
	}
	if fl := info.Failure; fl != nil {
		out["failureListener"] = map[string]any{"listener": map[string]string{"url": fl.URL}, "handback": fl.Handback}
	}
	writeJSON(w, http.StatusOK, out)
}

// renewalRenewFor is renewFor: renewDuration left out means FOREVER (the
// two-argument form).
func (s *server) renewalRenewFor(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
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
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Lease == nil {
		writeError(w, fault.New(fault.NullArgument, "lease is required"))
		return
	}
	if req.DesiredDuration == nil {
		writeError(w, fault.New(fault.NullArgument, "desiredDuration is required (milliseconds; %d for as long as possible)", lease.Forever))
		return
	}
	renew := lease.Forever
	if req.RenewDuration != nil {
		renew = *req.RenewDuration
	}
	// The DURATION form wins: it does not depend on the grantor's clock.
	var exp int64
	switch {
	case req.Lease.Remaining != nil && *req.Lease.Remaining == lease.Never:
		exp = lease.Never
	case req.Lease.Remaining != nil:
		exp = s.cfg.Now().UnixMilli() + *req.Lease.Remaining
	case req.Lease.Expiration != nil:
		exp = *req.Lease.Expiration
	default:
		writeError(w, fault.New(fault.NullArgument, "lease: expiration or remaining is required"))
		return
	}
	err := svc.RenewFor(r.PathValue("id"), renewal.ClientLease{Grantor: req.Lease.Grantor, ID: req.Lease.ID, Expiration: exp}, *req.DesiredDuration, renew)
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) renewalLeases(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	ms, err := svc.Leases(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]ClientLeaseJSON, len(ms))
	for i, m := range ms {
		out[i] = ClientLeaseJSON{Lease: s.clientLease(m.ClientLease), DesiredExpiration: m.Desired, RenewDuration: m.RenewDuration}
	}
	writeJSON(w, http.StatusOK, map[string]any{"leases": out})
}

// renewalRemove is remove: the lease, or null. {key} is "grantor|id" or
// the lease ID alone.
func (s *server) renewalRemove(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	l, err := svc.Remove(r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		writeError(w, err)
		return
	}
	if l == nil {
		writeJSON(w, http.StatusOK, map[string]any{"lease": nil})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lease": s.clientLease(*l)})
}

type listenerBody struct {
	Listener *struct {
		URL string `json:"url"`
	} `json:"listener"`
	MinWarning *int64 `json:"minWarning"`
	Handback   []byte `json:"handback"`
}

func (s *server) renewalSetWarning(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	var req listenerBody
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Listener == nil {
		writeError(w, fault.New(fault.NullArgument, "listener is required"))
		return
	}
	if req.MinWarning == nil {
		writeError(w, fault.New(fault.NullArgument, "minWarning is required (milliseconds before the set's lease ends)"))
		return
	}
	reg, err := svc.SetWarningListener(r.PathValue("id"), req.Listener.URL, *req.MinWarning, req.Handback)
	s.writeListenerReg(w, r, reg, err)
}

func (s *server) renewalSetFailure(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Renewal
	var req listenerBody
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Listener == nil {
		writeError(w, fault.New(fault.NullArgument, "listener is required"))
		return
	}
	if req.MinWarning != nil {
		writeError(w, fault.New(fault.InvalidArgument, "minWarning belongs to the warning listener"))
		return
	}
	reg, err := svc.SetFailureListener(r.PathValue("id"), req.Listener.URL, req.Handback)
	s.writeListenerReg(w, r, reg, err)
}

func (s *server) writeListenerReg(w http.ResponseWriter, r *http.Request, reg renewal.Registration, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(reg.Lease)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"eventID": reg.EventID, "seqNum": reg.SeqNum, "lease": s.leaseOf(r, rec)})
}

func (s *server) renewalClear(warning bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc := s.cfg.Renewal
		var err error
		if warning {
			err = svc.ClearWarningListener(r.PathValue("id"))
		} else {
			err = svc.ClearFailureListener(r.PathValue("id"))
		}
		if err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

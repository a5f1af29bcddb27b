package lds

import (
	"net/http"
	"net/netip"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// Name, Prefix and Routes make the service a part of the API (API.md,
// "Lookup discovery service").
func (s *Service) Name() string   { return "lookup discovery service" }
func (s *Service) Prefix() string { return "/v1/lds/" }

// Place and Holds spread the service's registrations among a cluster's
// shards (httpjson.Placer): a request goes with the {id} it names, a
// new registration with its owner's.
func (s *Service) Place(r *http.Request) httpjson.Place { return httpjson.ByKey(r.PathValue("id")) }
func (s *Service) Holds(id string) bool                 { _, err := s.Get(id); return err == nil }

// Routes registers the service's endpoints.
func (s *Service) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, "POST /v1/lds/registrations", s.httpRegister)
	mux.Handle(httpjson.Read, "GET /v1/lds/registrations/{id}", s.httpGet)
	mux.Handle(httpjson.Read, "GET /v1/lds/registrations/{id}/registrars", s.httpRegistrars)
	// A registration is changed by the client that made it (or an
	// administrator) only.
	owned := func(h http.HandlerFunc) http.HandlerFunc {
		return s.cfg.Grantor.Owned("discovery registration", s.leaseOf, h)
	}
	mux.Handle(httpjson.Client, "POST /v1/lds/registrations/{id}/groups", owned(s.httpGroups(Add)))
	mux.Handle(httpjson.Client, "PUT /v1/lds/registrations/{id}/groups", owned(s.httpGroups(Set)))
	mux.Handle(httpjson.Client, "DELETE /v1/lds/registrations/{id}/groups", owned(s.httpGroups(Remove)))
	mux.Handle(httpjson.Client, "POST /v1/lds/registrations/{id}/locators", owned(s.httpLocators(Add)))
	mux.Handle(httpjson.Client, "PUT /v1/lds/registrations/{id}/locators", owned(s.httpLocators(Set)))
	mux.Handle(httpjson.Client, "DELETE /v1/lds/registrations/{id}/locators", owned(s.httpLocators(Remove)))
	mux.Handle(httpjson.Client, "POST /v1/lds/registrations/{id}/discard", owned(s.httpDiscard))
}

func (s *Service) leases() httpjson.Leases { return httpjson.Leases{Now: s.cfg.Grantor.Now} }

// stringSet checks a JSON array of strings that may be null and must not
// hold nulls (the specification's NullPointerException cases). It
// returns nil for a null array.
func stringSet(what string, v *[]*string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	out := make([]string, 0, len(*v))
	for i, p := range *v {
		if p == nil {
			return nil, fault.New(apitypes.NullArgument, "%s[%d] is null", what, i)
		}
		out = append(out, *p)
	}
	return out, nil
}

func locatorSet(v *[]*string) ([]discovery.Locator, error) {
	ss, err := stringSet("locators", v)
	if err != nil || ss == nil {
		return nil, err
	}
	out := make([]discovery.Locator, 0, len(ss))
	for _, str := range ss {
		l, err := discovery.ParseLocator(str)
		if err == nil {
			err = l.Dialable()
		}
		if err != nil {
			return nil, fault.New(apitypes.InvalidArgument, "%v", err)
		}
		out = append(out, l)
	}
	return out, nil
}

func (s *Service) httpRegister(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Groups        *[]*string         `json:"groups"`
		Locators      *[]*string         `json:"locators"`
		Listener      *apitypes.Listener `json:"listener"`
		Handback      []byte             `json:"handback"`
		LeaseDuration *int64             `json:"leaseDuration"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Listener == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "listener is required"))
		return
	}
	if err := httpjson.Required("leaseDuration", req.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	groups, err := stringSet("groups", req.Groups)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	locs, err := locatorSet(req.Locators)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	reg, err := s.Register(RegisterRequest{Owner: access.PrincipalOf(r.Context()).Owner(), HostLocal: outbound.IsHostLocal(r.Context()), Groups: groups, Locators: locs, Listener: req.Listener.URL,
		Handback: req.Handback, Duration: *req.LeaseDuration})
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.LDSRegistered{ID: reg.ID, EventID: reg.EventID, SeqNum: reg.SeqNum,
		Lease: lease.Shown(s.leases().Of(r, reg.Lease.ID, reg.Lease.Expiration), reg.Lease)})
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) {
	s.writeRegistration(w, r, r.PathValue("id"))
}

func (s *Service) writeRegistration(w http.ResponseWriter, r *http.Request, id string) {
	info, err := s.Get(id)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		httpjson.WriteError(w, noSuch(id))
		return
	}
	out := apitypes.LDSRegistration{ID: info.ID, EventID: info.EventID, SeqNum: info.SeqNum, Groups: info.Groups,
		Locators: make([]string, len(info.Locators)), Lease: s.leases().Of(r, s.cfg.Grantor.Shown(r, rec.ID), rec.Expiration)}
	if info.AllGroups {
		out.Groups = nil
	}
	for i, l := range info.Locators {
		out.Locators[i] = l.String()
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (s *Service) httpRegistrars(w http.ResponseWriter, r *http.Request) {
	ls, err := s.Registrars(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	out := apitypes.Registrars{Registrars: make([]apitypes.Registrar, len(ls))}
	client := netip.IPv6Loopback() // not over TCP: a local socket
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		client = ap.Addr()
	}
	for i, l := range ls {
		out.Registrars[i] = s.RegistrarFor(l, client)
	}
	httpjson.Write(w, http.StatusOK, out)
}

// httpGroups: POST adds, PUT sets (null: all groups), DELETE removes.
func (s *Service) httpGroups(m Mutation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Groups *[]*string `json:"groups"`
		}
		if err := httpjson.DecodeRequired(w, r, &req, "groups"); err != nil {
			httpjson.WriteError(w, err)
			return
		}
		groups, err := stringSet("groups", req.Groups)
		if err == nil {
			err = s.MutateGroups(r.PathValue("id"), m, groups)
		}
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		s.writeRegistration(w, r, r.PathValue("id"))
	}
}

// httpLocators: POST adds, PUT sets, DELETE removes.
func (s *Service) httpLocators(m Mutation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Locators *[]*string `json:"locators"`
		}
		if err := httpjson.DecodeRequired(w, r, &req, "locators"); err != nil {
			httpjson.WriteError(w, err)
			return
		}
		if req.Locators == nil {
			httpjson.WriteError(w, fault.New(apitypes.NullArgument, "locators is null"))
			return
		}
		locs, err := locatorSet(req.Locators)
		if err == nil {
			err = s.MutateLocators(r.PathValue("id"), m, locs)
		}
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		s.writeRegistration(w, r, r.PathValue("id"))
	}
}

func (s *Service) httpDiscard(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ServiceID *string `json:"serviceID"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.ServiceID == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "serviceID is required"))
		return
	}
	id, err := discovery.ParseServiceID(*req.ServiceID)
	if err != nil {
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "serviceID: %v", err))
		return
	}
	if err := s.Discard(r.PathValue("id"), id); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// leaseOf is the lease ID of registration id ("" for one that is gone).
func (s *Service) leaseOf(id string) string {
	info, _ := s.Get(id)
	return info.Lease
}

package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lds"
)

func (s *server) ldsRoutes() []route {
	return []route{
		{"POST /v1/lds/registrations", s.ldsRegister},
		{"GET /v1/lds/registrations/{id}", s.ldsGet},
		{"GET /v1/lds/registrations/{id}/registrars", s.ldsRegistrars},
		{"POST /v1/lds/registrations/{id}/groups", s.ldsGroups(lds.Add)},
		{"PUT /v1/lds/registrations/{id}/groups", s.ldsGroups(lds.Set)},
		{"DELETE /v1/lds/registrations/{id}/groups", s.ldsGroups(lds.Remove)},
		{"POST /v1/lds/registrations/{id}/locators", s.ldsLocators(lds.Add)},
		{"PUT /v1/lds/registrations/{id}/locators", s.ldsLocators(lds.Set)},
		{"DELETE /v1/lds/registrations/{id}/locators", s.ldsLocators(lds.Remove)},
		{"POST /v1/lds/registrations/{id}/discard", s.ldsDiscard},
	}
}

// LDSRegistration is a discovery registration as the API shows it.
type LDSRegistration struct {
	ID      string `json:"id"`
	EventID int64  `json:"eventID"`
	SeqNum  int64  `json:"seqNum"`
	// Groups: null means all groups.
	Groups   []string `json:"groups"`
	Locators []string `json:"locators"`
	Lease    Lease    `json:"lease"`
}

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
			return nil, fault.New(fault.NullArgument, "%s[%d] is null", what, i)
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
	for _, s := range ss {
		l, err := discovery.ParseLocator(s)
		if err != nil {
			return nil, fault.New(fault.InvalidArgument, "%v", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// decodeRequired decodes like decode, and also requires field to be
// present (null is a value there: "all groups").
func decodeRequired(w http.ResponseWriter, r *http.Request, v any, field string) error {
	var raw json.RawMessage
	if err := decode(w, r, &raw); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fault.New(fault.InvalidArgument, "request body: %v", err)
	}
	if _, ok := keys[field]; !ok {
		return fault.New(fault.NullArgument, "%s is required", field)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.New(fault.InvalidArgument, "request body: %v", err)
	}
	return nil
}

func (s *server) ldsRegister(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.LDS
	var req struct {
		Groups   *[]*string `json:"groups"`
		Locators *[]*string `json:"locators"`
		Listener *struct {
			URL string `json:"url"`
		} `json:"listener"`
		Handback      []byte `json:"handback"`
		LeaseDuration *int64 `json:"leaseDuration"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Listener == nil {
		writeError(w, fault.New(fault.NullArgument, "listener is required"))
		return
	}
	if err := required("leaseDuration", req.LeaseDuration); err != nil {
		writeError(w, err)
		return
	}
	groups, err := stringSet("groups", req.Groups)
	if err != nil {
		writeError(w, err)
		return
	}
	locs, err := locatorSet(req.Locators)
	if err != nil {
		writeError(w, err)
		return
	}
	reg, err := svc.Register(lds.RegisterRequest{Groups: groups, Locators: locs, Listener: req.Listener.URL,
		Handback: req.Handback, Duration: *req.LeaseDuration})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": reg.ID, "eventID": reg.EventID, "seqNum": reg.SeqNum, "lease": s.leaseOf(r, reg.Lease)})
}

func (s *server) ldsGet(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.LDS
	s.writeRegistration(w, r, svc, r.PathValue("id"))
}

func (s *server) writeRegistration(w http.ResponseWriter, r *http.Request, svc *lds.Service, id string) {
	info, err := svc.Get(id)
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		writeError(w, noSuchRegistration(id))
		return
	}
	out := LDSRegistration{ID: info.ID, EventID: info.EventID, SeqNum: info.SeqNum, Groups: info.Groups,
		Locators: make([]string, len(info.Locators)), Lease: s.leaseOf(r, rec)}
	if info.AllGroups {
		out.Groups = nil
	}
	for i, l := range info.Locators {
		out.Locators[i] = l.String()
	}
	writeJSON(w, http.StatusOK, out)
}

func noSuchRegistration(id string) error {
	return fault.New(fault.NoSuchObject, "no discovery registration %q (its lease ended, or it never existed)", id)
}

func (s *server) ldsRegistrars(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.LDS
	ls, err := svc.Registrars(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]lds.Registrar, len(ls))
	for i, l := range ls {
		out[i] = lds.RegistrarOf(l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"registrars": out})
}

// ldsGroups: POST adds, PUT sets (null: all groups), DELETE removes.
func (s *server) ldsGroups(m lds.Mutation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc := s.cfg.LDS
		var req struct {
			Groups *[]*string `json:"groups"`
		}
		if err := decodeRequired(w, r, &req, "groups"); err != nil {
			writeError(w, err)
			return
		}
		groups, err := stringSet("groups", req.Groups)
		if err == nil {
			err = svc.MutateGroups(r.PathValue("id"), m, groups)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		s.writeRegistration(w, r, svc, r.PathValue("id"))
	}
}

// ldsLocators: POST adds, PUT sets, DELETE removes.
func (s *server) ldsLocators(m lds.Mutation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc := s.cfg.LDS
		var req struct {
			Locators *[]*string `json:"locators"`
		}
		if err := decodeRequired(w, r, &req, "locators"); err != nil {
			writeError(w, err)
			return
		}
		if req.Locators == nil {
			writeError(w, fault.New(fault.NullArgument, "locators is null"))
			return
		}
		locs, err := locatorSet(req.Locators)
		if err == nil {
			err = svc.MutateLocators(r.PathValue("id"), m, locs)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		s.writeRegistration(w, r, svc, r.PathValue("id"))
	}
}

func (s *server) ldsDiscard(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.LDS
	var req struct {
		ServiceID *string `json:"serviceID"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.ServiceID == nil {
		writeError(w, fault.New(fault.NullArgument, "serviceID is required"))
		return
	}
	id, err := discovery.ParseServiceID(*req.ServiceID)
	if err != nil {
		writeError(w, fault.New(fault.InvalidArgument, "serviceID: %v", err))
		return
	}
	if err := svc.Discard(r.PathValue("id"), id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

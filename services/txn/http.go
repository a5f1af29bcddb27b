package txn

import (
	"context"
	"net/http"
	"time"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
)

// Name, Prefix and Routes make the service a part of the API (API.md,
// "Transaction manager").
func (s *Service) Name() string   { return "transaction manager" }
func (s *Service) Prefix() string { return "/v1/transactions" }

// Routes registers the service's endpoints.
func (s *Service) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, "POST /v1/transactions", s.httpCreate)
	mux.Handle(httpjson.Read, "GET /v1/transactions/{id}", s.httpState)
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/participants", s.httpJoin)
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/commit", s.httpCommit)
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/abort", s.httpAbort)
}

// TxRef names a transaction on a manager.
type TxRef struct {
	Manager string `json:"manager"`
	ID      string `json:"id"`
}

func (s *Service) httpCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LeaseDuration *int64 `json:"leaseDuration"`
		Parent        *TxRef `json:"parent"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := httpjson.Required("leaseDuration", req.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	parent := ""
	if req.Parent != nil {
		if req.Parent.Manager != "" && req.Parent.Manager != s.cfg.Manager {
			httpjson.WriteError(w, fault.New(fault.UnsupportedOperation, "a parent on another manager is not supported yet: create the nested transaction on the parent's manager"))
			return
		}
		parent = req.Parent.ID
	}
	id, rec, err := s.Create(*req.LeaseDuration, parent, access.PrincipalOf(r.Context()).Owner())
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		ID      string         `json:"id"`
		Manager string         `json:"manager"`
		Lease   apitypes.Lease `json:"lease"`
	}{id, s.cfg.Manager, httpjson.Leases{Now: s.cfg.Clock.Now}.Of(r, rec.ID, rec.Expiration)})
}

func (s *Service) httpState(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := s.State(id)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}{id, st.String()})
}

func (s *Service) httpJoin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Participant *struct {
			URL string `json:"url"`
		} `json:"participant"`
		CrashCount *int64 `json:"crashCount"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Participant == nil || req.Participant.URL == "" {
		httpjson.WriteError(w, fault.New(fault.NullArgument, "participant.url is required"))
		return
	}
	if err := httpjson.Required("crashCount", req.CrashCount); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := s.Join(r.PathValue("id"), Participant{URL: req.Participant.URL, CrashCount: *req.CrashCount}); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) httpCommit(w http.ResponseWriter, r *http.Request) { s.complete(w, r, s.Commit) }
func (s *Service) httpAbort(w http.ResponseWriter, r *http.Request)  { s.complete(w, r, s.Abort) }

// complete runs commit or abort with the body's waitFor (none: the
// one-parameter form). These may take as long as voting takes.
func (s *Service) complete(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, id string, waitFor time.Duration) (State, error)) {
	var req struct {
		WaitFor *int64 `json:"waitFor"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	waitFor := time.Duration(-1)
	if req.WaitFor != nil {
		if *req.WaitFor < 0 {
			httpjson.WriteError(w, fault.New(fault.InvalidArgument, "waitFor %d: want milliseconds, 0 or more", *req.WaitFor))
			return
		}
		waitFor = time.Duration(*req.WaitFor) * time.Millisecond
	}
	// The deadlines of an ordinary request do not bound this one.
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{})
	st, err := op(r.Context(), r.PathValue("id"), waitFor)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		State string `json:"state"`
	}{st.String()})
}

package txn

import (
	"context"
	"net/http"
	"time"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// Name, Prefix and Routes make the service a part of the API (API.md,
// "Transaction manager").
func (s *Service) Name() string   { return "transaction manager" }
func (s *Service) Prefix() string { return "/v1/transactions" }

// Place and Holds spread the transactions among a cluster's shards
// (httpjson.Placer): a request goes with the transaction it names (its
// participants' joins, links and promotions with it), a new one with
// its owner's.
func (s *Service) Place(r *http.Request) httpjson.Place { return httpjson.ByKey(r.PathValue("id")) }
func (s *Service) Holds(id string) bool                 { _, _, err := s.State(id); return err == nil }

// Routes registers the service's endpoints.
func (s *Service) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, "POST /v1/transactions", s.httpCreate)
	mux.Handle(httpjson.Read, "GET /v1/transactions/{id}", s.httpState)
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/participants", s.httpJoin)
	// The client that made a transaction (or an administrator) alone
	// ends it; anyone it hands the ID to may join it (that is what the
	// ID is for), and another manager promotes into it.
	owned := func(h http.HandlerFunc) http.HandlerFunc { return s.cfg.Grantor.Owned("transaction", s.leaseOf, h) }
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/commit", owned(s.httpCommit))
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/abort", owned(s.httpAbort))
	mux.Handle(httpjson.Client, "POST /v1/transactions/{id}/promote", s.httpPromote)
	// A nested transaction's link, as its parent's manager calls it: the
	// URL is the capability.
	mux.Handle(httpjson.Capability, "POST /v1/transactions/{id}/links/{token}", s.httpLink)
}

// TxRef names a transaction on a manager.
type TxRef struct {
	Manager string `json:"manager"`
	ID      string `json:"id"`
}

// parentRef is a create's parent: a token for its manager, if that one
// wants one, rides along (kept in memory only).
type parentRef struct {
	Manager string `json:"manager"`
	ID      string `json:"id"`
	Token   string `json:"token"`
}

func (s *Service) httpCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LeaseDuration *int64     `json:"leaseDuration"`
		Parent        *parentRef `json:"parent"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := httpjson.Required("leaseDuration", req.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	var parent Ref
	if req.Parent != nil {
		if req.Parent.ID == "" {
			httpjson.WriteError(w, fault.New(apitypes.NullArgument, "parent.id is required (or no parent, for a top-level transaction)"))
			return
		}
		parent = Ref{Manager: req.Parent.Manager, ID: req.Parent.ID, Token: req.Parent.Token}
	}
	id, rec, err := s.Create(r.Context(), *req.LeaseDuration, parent, access.PrincipalOf(r.Context()).Owner())
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		ID      string         `json:"id"`
		Manager string         `json:"manager"`
		Lease   apitypes.Lease `json:"lease"`
	}{id, s.shown(r), lease.Shown(httpjson.Leases{Now: s.cfg.Clock.Now}.Of(r, rec.ID, rec.Expiration), rec)})
}

// shown is the manager's URL as an answer shows it: where the client
// reached it (a node of a cluster, whichever holds the transaction),
// or, with no such URL, the one participants call.
func (s *Service) shown(r *http.Request) string {
	if b := httpjson.BaseOf(r); b.URL != "" {
		return b.URL
	}
	return s.cfg.Manager
}

func (s *Service) httpState(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, parent, err := s.State(id)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	var p *TxRef
	if parent != nil {
		p = &TxRef{Manager: parent.Manager, ID: parent.ID}
		if p.Manager == s.cfg.Manager {
			p.Manager = s.shown(r)
		}
	}
	httpjson.Write(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Manager string `json:"manager"`
		State   string `json:"state"`
		Parent  *TxRef `json:"parent"`
	}{id, s.shown(r), st.String(), p})
}

func (s *Service) httpPromote(w http.ResponseWriter, r *http.Request) {
	var req PromoteRequest
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	seen := make(map[string]bool, len(req.Participants))
	for i, p := range req.Participants {
		switch {
		case p.URL == "":
			httpjson.WriteError(w, fault.New(apitypes.NullArgument, "participants[%d].url is required", i))
			return
		case seen[p.URL]:
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "participants[%d]: the same url twice", i))
			return
		}
		seen[p.URL] = true
	}
	drop := ""
	if req.Drop != nil {
		drop = req.Drop.URL
	}
	for i := range req.Participants {
		// Who may name this host is the caller, not the body.
		req.Participants[i].HostLocal = outbound.IsHostLocal(r.Context())
	}
	if err := s.Promote(r.PathValue("id"), req.Participants, drop); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// httpLink answers the parent's manager on a nested transaction's link,
// with the participant callback protocol. A prepare may wait for the
// nested transaction's own commit to end.
func (s *Service) httpLink(w http.ResponseWriter, r *http.Request) {
	var cb apitypes.ParticipantCall
	if err := httpjson.Decode(w, r, &cb); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	switch cb.Op {
	case apitypes.OpPrepare, apitypes.OpPrepareAndCommit, apitypes.OpCommit, apitypes.OpAbort:
	default:
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "op %.20q: want prepare, prepareAndCommit, commit or abort", cb.Op))
		return
	}
	liftDeadlines(w)
	s.lapse(r.PathValue("id"))
	v, err := s.eng.Link(r.Context(), r.PathValue("id"), r.PathValue("token"), cb.Op)
	switch {
	case err != nil:
		httpjson.WriteError(w, fault.New(apitypes.Unavailable, "stopping: call again"))
	case cb.Op == apitypes.OpCommit || cb.Op == apitypes.OpAbort:
		w.WriteHeader(http.StatusNoContent)
	default:
		httpjson.Write(w, http.StatusOK, apitypes.ParticipantAnswer{Vote: v.String()})
	}
}

// liftDeadlines frees a request that may take as long as voting takes
// from the deadlines of an ordinary one.
func liftDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{})
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
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "participant.url is required"))
		return
	}
	if err := httpjson.Required("crashCount", req.CrashCount); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := s.Join(r.PathValue("id"), Participant{URL: req.Participant.URL, CrashCount: *req.CrashCount,
		HostLocal: outbound.IsHostLocal(r.Context())}); err != nil {
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
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "waitFor %d: want milliseconds, 0 or more", *req.WaitFor))
			return
		}
		waitFor = time.Duration(*req.WaitFor) * time.Millisecond
	}
	liftDeadlines(w)
	st, err := op(r.Context(), r.PathValue("id"), waitFor)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		State string `json:"state"`
	}{st.String()})
}

// leaseOf is the lease ID of transaction id ("" once its commit or
// abort has ended it: that one is done, and the answer says so).
func (s *Service) leaseOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseIDs[id]
}

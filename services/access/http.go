package access

import (
	"net/http"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
)

// Name, Prefix and Routes make the tokens a part of the API (API.md,
// "Access"): an administrator's alone.
func (t *Tokens) Name() string   { return "tokens" }
func (t *Tokens) Prefix() string { return "/v1/tokens" }

// Routes registers the token endpoints.
func (t *Tokens) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Admin, "POST /v1/tokens", t.httpCreate)
	mux.Handle(httpjson.Admin, "GET /v1/tokens", t.httpList)
	mux.Handle(httpjson.Admin, "DELETE /v1/tokens/{id}", t.httpRevoke)
}

func (t *Tokens) httpCreate(w http.ResponseWriter, r *http.Request) {
	var req apitypes.TokenRequest
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	scope, err := ParseScope(req.Scope)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Duration < 0 || req.Duration > int64(100*365*24*time.Hour/time.Millisecond) {
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "duration %d: want milliseconds, or 0 for a token that works until revoked", req.Duration))
		return
	}
	var expires time.Time
	if req.Duration > 0 {
		expires = t.cfg.Clock.Now().Add(time.Duration(req.Duration) * time.Millisecond)
	}
	secret, tok, err := t.Create(req.Name, scope, expires)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusCreated, apitypes.NewToken{Token: tok, Secret: secret})
}

func (t *Tokens) httpList(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, apitypes.Tokens{Tokens: t.List()})
}

func (t *Tokens) httpRevoke(w http.ResponseWriter, r *http.Request) {
	if err := t.Revoke(r.PathValue("id")); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

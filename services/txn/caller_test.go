package txn

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
)

// The callback protocol: what is posted, and how each answer is read.
func TestHTTPCaller(t *testing.T) {
	var got apitypes.ParticipantCall
	status, body := 200, `{"vote":"PREPARED"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &got)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	c := HTTPCaller{Client: &http1.Client{Timeout: 5 * time.Second}, Manager: "http://gw:4162"}
	p := Participant{URL: srv.URL + "/tx"}
	for _, tc := range []struct {
		name       string
		op         apitypes.ParticipantOp
		status     int
		body       string
		vote       apitypes.Vote
		err        error
		indefinite bool
	}{
		{"prepared", apitypes.OpPrepare, 200, `{"vote":"PREPARED"}`, apitypes.VotePrepared, nil, false},
		{"notchanged", apitypes.OpPrepare, 200, `{"vote":"NOTCHANGED"}`, apitypes.VoteNotChanged, nil, false},
		{"aborted", apitypes.OpPrepare, 200, `{"vote":"ABORTED"}`, apitypes.VoteAborted, nil, false},
		{"committed to prepareAndCommit", apitypes.OpPrepareAndCommit, 200, `{"vote":"COMMITTED"}`, apitypes.VoteCommitted, nil, false},
		{"committed to prepare is no vote", apitypes.OpPrepare, 200, `{"vote":"COMMITTED"}`, 0, nil, true},
		{"commit: any 2xx", apitypes.OpCommit, 204, ``, 0, nil, false},
		{"unknown transaction", apitypes.OpPrepare, 404, `{"error":{"code":"UnknownTransaction","message":"x"}}`, 0, ErrUnknownTransaction, false},
		{"no such object", apitypes.OpCommit, 404, `{"error":{"code":"NoSuchObject","message":"x"}}`, 0, ErrNoSuchObject, false},
		{"a bare 404 is indefinite", apitypes.OpPrepare, 404, `404 page not found`, 0, nil, true},
		{"another code's 404 is indefinite", apitypes.OpPrepare, 404, `{"error":{"code":"UnknownLease","message":"x"}}`, 0, nil, true},
		{"5xx", apitypes.OpCommit, 503, ``, 0, nil, true},
		{"garbage", apitypes.OpPrepare, 200, `<html>`, 0, nil, true},
	} {
		status, body = tc.status, tc.body
		v, err := c.Call(t.Context(), p, tc.op, "tx1", 2)
		switch {
		case tc.indefinite && !errors.Is(err, ErrIndefinite):
			t.Errorf("%s: %v, want indefinite", tc.name, err)
		case !tc.indefinite && !errors.Is(err, tc.err):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		case v != tc.vote:
			t.Errorf("%s: vote %v, want %v", tc.name, v, tc.vote)
		}
		if got.Op != tc.op || got.ID != "tx1" || got.Manager != "http://gw:4162" || got.Attempt != 2 {
			t.Errorf("%s: posted %+v", tc.name, got)
		}
	}
	// Nobody there: indefinite.
	srv.Close()
	if _, err := c.Call(t.Context(), p, apitypes.OpCommit, "tx1", 1); !errors.Is(err, ErrIndefinite) {
		t.Errorf("closed server: %v", err)
	}
}

package txn_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn"
	"github.com/jinid/jinid/services/txn/txntest"
)

// participant is an HTTP participant that votes as told and records the
// operations it is called with.
type participant struct {
	mu   sync.Mutex
	vote string
	ops  []string
	srv  *httptest.Server
}

func newParticipant(t *testing.T, vote string) *participant {
	p := &participant{vote: vote}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb apitypes.ParticipantCall
		json.NewDecoder(r.Body).Decode(&cb)
		p.mu.Lock()
		p.ops = append(p.ops, string(cb.Op))
		vote := p.vote
		p.mu.Unlock()
		if cb.Op == apitypes.OpPrepareAndCommit && vote == "PREPARED" {
			vote = "COMMITTED"
		}
		json.NewEncoder(w).Encode(apitypes.ParticipantAnswer{Vote: vote})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *participant) seen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.ops, ",")
}

type rig struct {
	*txntest.Manager
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return &rig{txntest.Start(t, txn.ServiceConfig{Backoff: 10 * time.Millisecond})}
}

// do sends a request to the API and decodes the answer into out.
func (r *rig) do(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, r.URL+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(raw, out)
	}
	return resp.StatusCode
}

type errBody struct {
	Error struct {
		Code      string `json:"code"`
		Committed *bool  `json:"committed"`
	} `json:"error"`
}

// Through the API: create, join three participants, commit; each hears
// prepare then commit; the transaction reads COMMITTED; its lease is gone.
// The whole transaction costs one store write: its decision (the lease is
// in memory, and forgetting the decision rides along with a later write).
func TestThroughTheAPI(t *testing.T) {
	r := newRig(t)
	writes := r.Writes()
	var created struct {
		ID, Manager string
		Lease       struct{ ID string }
	}
	if code := r.do(t, "POST", "/v1/transactions", `{"leaseDuration":60000}`, &created); code != 200 || created.ID == "" || created.Manager != r.URL {
		t.Fatalf("create: %d %+v", code, created)
	}
	ps := []*participant{newParticipant(t, "PREPARED"), newParticipant(t, "PREPARED"), newParticipant(t, "NOTCHANGED")}
	for _, p := range ps {
		if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/participants", `{"participant":{"url":"`+p.srv.URL+`/tx"},"crashCount":1}`, nil); code != 204 {
			t.Fatalf("join: %d", code)
		}
	}
	var st struct{ State string }
	if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/commit", `{"waitFor":10000}`, &st); code != 200 || st.State != "COMMITTED" {
		t.Fatalf("commit: %d %+v", code, st)
	}
	if ps[0].seen() != "prepare,commit" || ps[1].seen() != "prepare,commit" || ps[2].seen() != "prepare" {
		t.Fatalf("participants saw %q %q %q", ps[0].seen(), ps[1].seen(), ps[2].seen())
	}
	if n := r.Writes() - writes; n != 1 {
		t.Errorf("%d store writes for one committed transaction, want 1", n)
	}
	if code := r.do(t, "GET", "/v1/transactions/"+created.ID, "", &st); code != 200 || st.State != "COMMITTED" {
		t.Fatalf("state: %d %+v", code, st)
	}
	for series, want := range map[string]float64{
		`jinid_transactions_completed_total{outcome="committed"}`:                    1,
		`jinid_transactions{state="committed"}`:                                      1, // answered for a minute
		`jinid_transactions{state="active"}`:                                         0,
		`jinid_transaction_participant_calls_total{op="prepare",outcome="answered"}`: 3,
		`jinid_transaction_participant_calls_total{op="commit",outcome="answered"}`:  2,
		`jinid_transactions_rolling_forward`:                                         0,
	} {
		if got := r.Metric(series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	var eb errBody
	if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/abort", `{}`, &eb); code != 409 || eb.Error.Code != "CannotAbort" {
		t.Fatalf("abort after commit: %d %+v", code, eb)
	}
}

// Bad input gets a clear error and changes nothing.
func TestBadInput(t *testing.T) {
	r := newRig(t)
	var created struct{ ID string }
	r.do(t, "POST", "/v1/transactions", `{"leaseDuration":60000}`, &created)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/transactions/nope", "", 404, "UnknownTransaction"},
		{"POST", "/v1/transactions/nope/commit", `{}`, 404, "UnknownTransaction"},
		{"POST", "/v1/transactions/nope/participants", `{"participant":{"url":"http://127.0.0.1:1/"},"crashCount":1}`, 404, "UnknownTransaction"},
		{"POST", "/v1/transactions", `{}`, 400, "NullArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/participants", `{"crashCount":1}`, 400, "NullArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/participants", `{"participant":{"url":"ftp://x"},"crashCount":1}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/participants", `{"participant":{"url":"http://169.254.1.1/"},"crashCount":1}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/participants", `{"participant":{"url":"http://127.0.0.1:1/"}}`, 400, "NullArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/commit", `{"waitFor":-1}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions", `{"leaseDuration":1000,"parent":{"manager":"http://127.0.0.1:1","id":"x"}}`, 502, "Refused"},
		{"POST", "/v1/transactions", `{"leaseDuration":1000,"parent":{"manager":"ftp://x","id":"x"}}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions", `{"leaseDuration":1000,"parent":{"manager":"http://127.0.0.1:1"}}`, 400, "NullArgument"},
		{"POST", "/v1/transactions", `{"leaseDuration":1000,"parent":{"id":"nope"}}`, 404, "UnknownTransaction"},
		{"POST", "/v1/transactions/nope/promote", `{"participants":[]}`, 404, "UnknownTransaction"},
		{"POST", "/v1/transactions/" + created.ID + "/promote", `{"participants":[{"crashCount":1}]}`, 400, "NullArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/promote", `{"participants":[{"url":"http://127.0.0.1:1/","crashCount":1},{"url":"http://127.0.0.1:1/","crashCount":2}]}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/promote", `{"participants":[{"url":"http://169.254.1.1/","crashCount":1}]}`, 400, "InvalidArgument"},
		{"POST", "/v1/transactions/" + created.ID + "/links/x", `{"op":"vote"}`, 400, "InvalidArgument"},
	} {
		var eb errBody
		if got := r.do(t, c.method, c.path, c.body, &eb); got != c.status || eb.Error.Code != c.code {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, got, eb.Error.Code, c.status, c.code)
		}
	}
	var st struct{ State string }
	if r.do(t, "GET", "/v1/transactions/"+created.ID, "", &st); st.State != "ACTIVE" {
		t.Errorf("after the bad requests: %s, want ACTIVE", st.State)
	}
	// Nothing was created or joined: one transaction, which commits
	// without a participant call.
	if n := r.Metric(`jinid_transactions{state="active"}`); n != 1 {
		t.Errorf("%v transactions ACTIVE after the bad requests, want 1", n)
	}
	if r.do(t, "POST", "/v1/transactions/"+created.ID+"/commit", `{}`, &st); st.State != "COMMITTED" {
		t.Errorf("commit after the bad requests: %s", st.State)
	}
	if n := r.Metric(`jinid_transaction_participant_calls_total{op="prepareAndCommit",outcome="answered"}`) +
		r.Metric(`jinid_transaction_participant_calls_total{op="prepare",outcome="failed"}`); n != 0 {
		t.Errorf("%v participant calls: a bad join added a participant", n)
	}
}

// A transaction's lease is an ordinary lease of /v1/leases: renewing it
// keeps an ACTIVE transaction, cancelling it or letting it expire aborts
// it; once commit or abort was received, renew and cancel answer
// UnknownLease (API.md, "Transaction manager").
func TestTransactionLease(t *testing.T) {
	r := newRig(t)
	var created struct {
		ID    string
		Lease struct{ ID string }
	}
	var st struct{ State string }
	var eb errBody
	create := func(ms int) {
		t.Helper()
		if code := r.do(t, "POST", "/v1/transactions", fmt.Sprintf(`{"leaseDuration":%d}`, ms), &created); code != 200 {
			t.Fatalf("create: %d", code)
		}
	}

	create(60000)
	if code := r.do(t, "POST", "/v1/leases/"+created.Lease.ID+"/renew", `{"duration":60000}`, nil); code != 200 {
		t.Fatalf("renew an ACTIVE transaction's lease: %d", code)
	}
	if r.do(t, "GET", "/v1/transactions/"+created.ID, "", &st); st.State != "ACTIVE" {
		t.Fatalf("after renewing: %s", st.State)
	}
	if code := r.do(t, "DELETE", "/v1/leases/"+created.Lease.ID, "", nil); code != 204 {
		t.Fatalf("cancel: %d", code)
	}
	if r.do(t, "GET", "/v1/transactions/"+created.ID, "", &st); st.State != "ABORTED" {
		t.Fatalf("after the lease was cancelled: %s", st.State)
	}

	create(50) // expires while ACTIVE
	testenv.Until(t, "a transaction whose 50 ms lease expired aborted", func() bool {
		r.do(t, "GET", "/v1/transactions/"+created.ID, "", &st)
		return st.State == "ABORTED"
	})

	for _, end := range []string{"commit", "abort"} {
		create(60000)
		r.do(t, "POST", "/v1/transactions/"+created.ID+"/"+end, `{}`, &st)
		if code := r.do(t, "POST", "/v1/leases/"+created.Lease.ID+"/renew", `{"duration":60000}`, &eb); code != 404 || eb.Error.Code != "UnknownLease" {
			t.Errorf("renew after %s: %d %s, want UnknownLease", end, code, eb.Error.Code)
		}
		if code := r.do(t, "DELETE", "/v1/leases/"+created.Lease.ID, "", &eb); code != 404 || eb.Error.Code != "UnknownLease" {
			t.Errorf("cancel after %s: %d %s, want UnknownLease", end, code, eb.Error.Code)
		}
	}
}

// A transaction nested in a parent on another manager, through both
// managers' APIs: B joins the parent on A through a link; B's commit
// promotes its participant into the parent and drops the link; the
// participant then hears A's prepare and commit. An abort of the parent
// while the nested transaction is ACTIVE reaches it through the link.
func TestNestedAcrossManagers(t *testing.T) {
	a, b := newRig(t), newRig(t)
	create := func(r *rig, body string) string {
		t.Helper()
		var created struct{ ID string }
		if code := r.do(t, "POST", "/v1/transactions", body, &created); code != 200 {
			t.Fatalf("create %s: %d", body, code)
		}
		return created.ID
	}
	join := func(r *rig, id string, p *participant) {
		t.Helper()
		if code := r.do(t, "POST", "/v1/transactions/"+id+"/participants", `{"participant":{"url":"`+p.srv.URL+`/tx"},"crashCount":1}`, nil); code != 204 {
			t.Fatalf("join: %d", code)
		}
	}
	var st struct {
		State  string
		Parent *struct{ Manager, ID string }
	}

	parent := create(a, `{"leaseDuration":60000}`)
	nested := create(b, `{"leaseDuration":60000,"parent":{"manager":"`+a.URL+`","id":"`+parent+`"}}`)
	if b.do(t, "GET", "/v1/transactions/"+nested, "", &st); st.State != "ACTIVE" || st.Parent == nil || st.Parent.Manager != a.URL || st.Parent.ID != parent {
		t.Fatalf("nested: %+v", st)
	}
	x, y := newParticipant(t, "PREPARED"), newParticipant(t, "PREPARED")
	join(b, nested, x)
	join(a, parent, y)
	if b.do(t, "POST", "/v1/transactions/"+nested+"/commit", `{}`, &st); st.State != "COMMITTED" || x.seen() != "prepare" {
		t.Fatalf("nested commit: %s; x saw %q", st.State, x.seen())
	}
	if a.do(t, "POST", "/v1/transactions/"+parent+"/commit", `{"waitFor":10000}`, &st); st.State != "COMMITTED" {
		t.Fatalf("parent commit: %s", st.State)
	}
	if x.seen() != "prepare,prepare,commit" || y.seen() != "prepare,commit" {
		t.Fatalf("x saw %q, y %q", x.seen(), y.seen())
	}

	parent = create(a, `{"leaseDuration":60000}`)
	nested = create(b, `{"leaseDuration":60000,"parent":{"manager":"`+a.URL+`","id":"`+parent+`"}}`)
	z := newParticipant(t, "PREPARED")
	join(b, nested, z)
	if a.do(t, "POST", "/v1/transactions/"+parent+"/abort", `{"waitFor":10000}`, &st); st.State != "ABORTED" {
		t.Fatalf("parent abort: %s", st.State)
	}
	if b.do(t, "GET", "/v1/transactions/"+nested, "", &st); st.State != "ABORTED" {
		t.Fatalf("nested after the parent's abort: %s", st.State)
	}
	var eb errBody
	if code := b.do(t, "POST", "/v1/transactions/"+nested+"/commit", `{}`, &eb); code != 409 || eb.Error.Code != "CannotCommit" {
		t.Fatalf("nested commit after the parent's abort: %d %+v", code, eb)
	}
}

// A participant list past the limit is refused (429 TooMany, naming the
// limit) and the transaction goes on; a commit repeated gets the same
// answer; an abort after it is CannotAbort, and changes nothing.
func TestOversizedAndRepeated(t *testing.T) {
	r := &rig{txntest.Start(t, txn.ServiceConfig{MaxParticipants: 2})}
	var created struct{ ID string }
	r.do(t, "POST", "/v1/transactions", `{"leaseDuration":60000}`, &created)
	ps := []*participant{newParticipant(t, "PREPARED"), newParticipant(t, "PREPARED"), newParticipant(t, "PREPARED")}
	for i, p := range ps {
		var eb errBody
		code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/participants", `{"participant":{"url":"`+p.srv.URL+`/tx"},"crashCount":1}`, &eb)
		if want := 204; i == 2 {
			if code != 429 || eb.Error.Code != "TooMany" {
				t.Fatalf("the third join: %d %+v", code, eb)
			}
		} else if code != want {
			t.Fatalf("join %d: %d", i, code)
		}
	}
	var eb errBody
	if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/promote", `{"participants":[{"url":"`+ps[2].srv.URL+`/tx","crashCount":1}]}`, &eb); code != 429 || eb.Error.Code != "TooMany" {
		t.Fatalf("promote past the limit: %d %+v", code, eb)
	}
	var st struct{ State string }
	for range 2 {
		if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/commit", `{"waitFor":10000}`, &st); code != 200 || st.State != "COMMITTED" {
			t.Fatalf("commit: %d %+v", code, st)
		}
	}
	if code := r.do(t, "POST", "/v1/transactions/"+created.ID+"/abort", `{}`, &eb); code != 409 || eb.Error.Code != "CannotAbort" {
		t.Fatalf("abort after commit: %d %+v", code, eb)
	}
	if ps[0].seen() != "prepare,commit" || ps[2].seen() != "" {
		t.Fatalf("participants saw %q and %q", ps[0].seen(), ps[2].seen())
	}
}

// A transaction whose lease has expired is over at the moment of the
// next call, whether or not the grantor's expiry has run yet (TX.2.5:
// letting the lease expire is an abort): a join is CannotJoin, a commit
// CannotCommit, its state ABORTED, a nested create in it CannotJoin; and
// a nested transaction whose parent's lease expired is aborted with it.
// The fake clock moves past the expiration without running the
// grantor's timer (a late sweep), 1 to 50 ms past it.
func TestLeaseExpiryAtEachCall(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	r := &rig{txntest.Start(t, txn.ServiceConfig{Backoff: 10 * time.Millisecond, Clock: clk})}
	p := newParticipant(t, "PREPARED")
	var eb errBody
	create := func(body string) string {
		t.Helper()
		var created struct{ ID string }
		if code := r.do(t, "POST", "/v1/transactions", body, &created); code != 200 {
			t.Fatalf("create %s: %d", body, code)
		}
		return created.ID
	}
	for _, past := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
		for _, call := range []struct {
			name string
			do   func(id string) (int, string)
			want string
		}{
			{"join", func(id string) (int, string) {
				code := r.do(t, "POST", "/v1/transactions/"+id+"/participants", `{"participant":{"url":"`+p.srv.URL+`/other"},"crashCount":1}`, &eb)
				return code, eb.Error.Code
			}, "CannotJoin"},
			{"commit", func(id string) (int, string) {
				code := r.do(t, "POST", "/v1/transactions/"+id+"/commit", `{"waitFor":1000}`, &eb)
				return code, eb.Error.Code
			}, "CannotCommit"},
			{"state", func(id string) (int, string) {
				var st struct{ State string }
				code := r.do(t, "GET", "/v1/transactions/"+id, "", &st)
				return code, st.State
			}, "ABORTED"},
			{"nested create", func(id string) (int, string) {
				code := r.do(t, "POST", "/v1/transactions", `{"leaseDuration":60000,"parent":{"id":"`+id+`"}}`, &eb)
				return code, eb.Error.Code
			}, "CannotJoin"},
		} {
			eb = errBody{}
			id := create(`{"leaseDuration":1000}`)
			if code := r.do(t, "POST", "/v1/transactions/"+id+"/participants", `{"participant":{"url":"`+p.srv.URL+`"},"crashCount":1}`, nil); code != 204 {
				t.Fatalf("join: %d", code)
			}
			clk.Skip(time.Second + past)
			if code, got := call.do(id); got != call.want {
				t.Errorf("%s %v after the lease's expiration: %d %s, want %s", call.name, past, code, got, call.want)
			}
			clk.Advance(0) // the grantor's expiry, late: nothing more happens
			var st struct{ State string }
			if r.do(t, "GET", "/v1/transactions/"+id, "", &st); st.State != "ABORTED" {
				t.Errorf("%s %v after: %s, want ABORTED", call.name, past, st.State)
			}
		}
	}
	if strings.Contains(p.seen(), "prepare") || strings.Contains(p.seen(), "commit") {
		t.Fatalf("a participant of an expired transaction was asked %s", p.seen())
	}

	// A nested transaction's parent expires: it is aborted with it.
	parent := create(`{"leaseDuration":1000}`)
	child := create(`{"leaseDuration":60000,"parent":{"id":"` + parent + `"}}`)
	clk.Skip(time.Second + time.Millisecond)
	var st struct{ State string }
	if r.do(t, "GET", "/v1/transactions/"+child, "", &st); st.State != "ABORTED" {
		t.Fatalf("a nested transaction whose parent's lease expired: %s, want ABORTED", st.State)
	}
}

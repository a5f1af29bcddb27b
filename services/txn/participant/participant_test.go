package participant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn"
	"github.com/jinid/jinid/services/txn/txntest"
)

// app is an application behind a Handler: it votes as told and counts
// its roll-forwards and roll-backs.
type app struct {
	mu                          sync.Mutex
	vote                        apitypes.Vote
	prepares, commits, rollback int
}

// counts reads what the application did.
func (a *app) counts() (prepares, commits, rollbacks int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.prepares, a.commits, a.rollback
}

func (a *app) handler() *Handler {
	return &Handler{
		Prepare: func(context.Context, string) (apitypes.Vote, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.prepares++
			return a.vote, nil
		},
		Commit: func(context.Context, string) error { a.mu.Lock(); a.commits++; a.mu.Unlock(); return nil },
		Abort:  func(context.Context, string) error { a.mu.Lock(); a.rollback++; a.mu.Unlock(); return nil },
	}
}

// Three Go participants behind their Handlers, driven by the engine over
// HTTP: each votes once, rolls forward once, and answers repeats the
// same way.
func TestHandlersWithTheEngine(t *testing.T) {
	apps := []*app{{vote: apitypes.VotePrepared}, {vote: apitypes.VotePrepared}, {vote: apitypes.VoteNotChanged}}
	var urls []string
	for _, a := range apps {
		srv := httptest.NewServer(a.handler())
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	caller := txn.HTTPCaller{Client: &http1.Client{Timeout: 5 * time.Second}, Manager: "http://gw:4162"}
	e := txn.New(txn.Config{Caller: caller, Journal: nopJournal{}})
	defer e.Shutdown(context.Background())
	id := e.Create()
	for _, u := range urls {
		e.Join(id, txn.Participant{URL: u, CrashCount: 1})
	}
	if err := e.Commit(context.Background(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i, a := range apps {
		want := 1
		if a.vote != apitypes.VotePrepared {
			want = 0
		}
		if a.prepares != 1 || a.commits != want || a.rollback != 0 {
			t.Errorf("participant %d: %d prepares, %d commits, %d rollbacks", i, a.prepares, a.commits, a.rollback)
		}
	}
	// At least once: a repeated prepare and commit change nothing.
	for _, op := range []apitypes.ParticipantOp{apitypes.OpPrepare, apitypes.OpCommit} {
		v, err := caller.Call(context.Background(), txn.Participant{URL: urls[0]}, op, id, 2)
		if err != nil || (op == apitypes.OpPrepare && v != apitypes.VotePrepared) {
			t.Errorf("repeated %s: %v %v", op, v, err)
		}
	}
	if apps[0].prepares != 1 || apps[0].commits != 1 {
		t.Errorf("a repeat ran the application again: %d prepares, %d commits", apps[0].prepares, apps[0].commits)
	}
	if _, err := caller.Call(context.Background(), txn.Participant{URL: urls[0]}, apitypes.OpCommit, "never-seen", 1); !errors.Is(err, txn.ErrUnknownTransaction) {
		t.Errorf("commit of an unknown transaction: %v, want UnknownTransaction", err)
	}
}

type nopJournal struct{}

func (nopJournal) Committed(string, []txn.Participant) error { return nil }
func (nopJournal) Finished(string) error                     { return nil }

// swap is an http.Handler whose handler can be replaced: a participant
// restarting behind the same URL.
type swap struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swap) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }

func (s *swap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// A participant that crashes after voting PREPARED comes back with its
// records (Restore): the manager's commit, repeated until answered, is
// carried out by the new Handler, not answered "unknown transaction". One
// whose abort it missed (the manager tells abort three times at most) is
// settled by asking getState (Settle): ABORTED rolls it back. Through a
// real manager's API.
func TestRestoreAndSettle(t *testing.T) {
	m := txntest.Start(t, txn.ServiceConfig{Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	c, err := client.New(m.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	down := errors.New("crashed")

	// Before the crash: votes PREPARED, then fails every roll.
	var sw swap
	before := &Handler{
		Prepare: func(context.Context, string) (apitypes.Vote, error) { return apitypes.VotePrepared, nil },
		Commit:  func(context.Context, string) error { return down },
		Abort:   func(context.Context, string) error { return down },
	}
	sw.set(before)
	srv := httptest.NewServer(&sw)
	defer srv.Close()
	other := httptest.NewServer((&app{vote: apitypes.VotePrepared}).handler())
	defer other.Close()
	no := httptest.NewServer((&app{vote: apitypes.VoteAborted}).handler())
	defer no.Close()

	tx := func(second string) string {
		t.Helper()
		created, err := c.TxnCreate(ctx, 60000)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{srv.URL, second} {
			if err := c.TxnJoin(ctx, created.ID, u, 1); err != nil {
				t.Fatal(err)
			}
		}
		return created.ID
	}
	committed := tx(other.URL)
	// waitFor 0: the commit is decided, this participant not yet told.
	_, err = c.TxnCommit(ctx, committed, 0)
	if te := (*apitypes.Error)(nil); !errors.As(err, &te) || te.Code != apitypes.TimeoutExpired || te.Committed == nil || !*te.Committed {
		t.Fatalf("commit: %v, want TimeoutExpired committed=true", err)
	}
	aborted := tx(no.URL)
	if _, err := c.TxnCommit(ctx, aborted, -1); err == nil {
		t.Fatal("a transaction with an ABORTED vote committed")
	}
	// The manager gives up telling abort after a few tries.
	testenv.Until(t, "the manager to give up telling abort", func() bool {
		return m.Metric(`jinid_transaction_participant_calls_total{op="abort",outcome="failed"}`) >= 3
	})
	if got := before.Pending(); !slices.Equal(got, sorted(committed, aborted)) {
		t.Fatalf("pending before the crash: %v", got)
	}

	// After the crash: the records come back.
	a := &app{}
	after := a.handler()
	after.Restore(before.Pending()...)
	sw.set(after)
	testenv.Until(t, "the restored PREPARED transaction rolled forward", func() bool { _, c, _ := a.counts(); return c == 1 })
	if err := after.Settle(ctx, aborted, c.TxnState); err != nil {
		t.Fatalf("settle the aborted one: %v", err)
	}
	if err := after.Settle(ctx, committed, c.TxnState); err != nil {
		t.Fatalf("settle the committed one again: %v", err)
	}
	if p, c, r := a.counts(); p != 0 || c != 1 || r != 1 || len(after.Pending()) != 0 {
		t.Fatalf("after the restart: %d prepares, %d commits, %d rollbacks, pending %v", p, c, r, after.Pending())
	}
}

// Settle asks the manager: COMMITTED forward, ABORTED or unknown back,
// ACTIVE or VOTING undecided, a failed question nothing done.
func TestSettle(t *testing.T) {
	a := &app{}
	h := a.handler()
	h.Restore("c", "a", "u", "n", "v", "x")
	states := map[string]func() (string, error){
		"c": func() (string, error) { return "COMMITTED", nil },
		"a": func() (string, error) { return "ABORTED", nil },
		"u": func() (string, error) {
			return "", &client.Error{Status: 404, Err: apitypes.Error{Code: apitypes.UnknownTransaction}}
		},
		"n": func() (string, error) { return "", &apitypes.Error{Code: apitypes.NoSuchObject} },
		"v": func() (string, error) { return "VOTING", nil },
		"x": func() (string, error) { return "", errors.New("connection refused") },
	}
	state := func(_ context.Context, id string) (string, error) { return states[id]() }
	for id, want := range map[string]error{"c": nil, "a": nil, "u": nil, "n": nil, "v": ErrUndecided, "x": nil} {
		err := h.Settle(context.Background(), id, state)
		switch {
		case id == "x" && err == nil:
			t.Errorf("settle %s: no error", id)
		case id != "x" && !errors.Is(err, want):
			t.Errorf("settle %s: %v, want %v", id, err, want)
		}
	}
	if _, c, r := a.counts(); c != 1 || r != 3 || !slices.Equal(h.Pending(), []string{"v", "x"}) {
		t.Fatalf("%d commits, %d rollbacks, pending %v", c, r, h.Pending())
	}
	// Not pending: nothing to settle, whatever the manager says.
	states["never"] = states["c"]
	if err := h.Settle(context.Background(), "never", state); err != nil {
		t.Errorf("settle a transaction never voted on: %v", err)
	}
	if _, c, _ := a.counts(); c != 1 {
		t.Errorf("a transaction never voted on was rolled forward")
	}
}

// Repeated calls that arrive together run the application once: a
// second prepare or commit waits for the first, then gets its answer.
func TestConcurrentRepeats(t *testing.T) {
	a := &app{vote: apitypes.VotePrepared}
	h := a.handler()
	var release chan struct{}
	prepare, commit := h.Prepare, h.Commit
	h.Prepare = func(ctx context.Context, id string) (apitypes.Vote, error) { <-release; return prepare(ctx, id) }
	h.Commit = func(ctx context.Context, id string) error { <-release; return commit(ctx, id) }
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	caller := txn.HTTPCaller{Client: &http1.Client{Timeout: 5 * time.Second}}
	for _, op := range []apitypes.ParticipantOp{apitypes.OpPrepare, apitypes.OpCommit} {
		release = make(chan struct{})
		arrived.Store(0)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				v, err := caller.Call(context.Background(), txn.Participant{URL: srv.URL}, op, "t", i+1)
				if err == nil && op == apitypes.OpPrepare && v != apitypes.VotePrepared {
					err = fmt.Errorf("vote %v", v)
				}
				errs[i] = err
			})
		}
		testenv.Until(t, string(op)+": all four calls in the handler, one running", func() bool { return arrived.Load() >= 4 })
		close(release)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	if p, c, _ := a.counts(); p != 1 || c != 1 {
		t.Fatalf("%d prepares, %d commits, want 1 and 1", p, c)
	}
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

package participant

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/txn"
)

// app is an application behind a Handler: it votes as told and counts
// its roll-forwards and roll-backs.
type app struct {
	mu                          sync.Mutex
	vote                        txn.Vote
	prepares, commits, rollback int
}

func (a *app) handler() *Handler {
	return &Handler{
		Prepare: func(context.Context, string) (txn.Vote, error) {
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
	apps := []*app{{vote: txn.VotePrepared}, {vote: txn.VotePrepared}, {vote: txn.VoteNotChanged}}
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
		if a.vote != txn.VotePrepared {
			want = 0
		}
		if a.prepares != 1 || a.commits != want || a.rollback != 0 {
			t.Errorf("participant %d: %d prepares, %d commits, %d rollbacks", i, a.prepares, a.commits, a.rollback)
		}
	}
	// At least once: a repeated prepare and commit change nothing.
	for _, op := range []txn.Op{txn.OpPrepare, txn.OpCommit} {
		v, err := caller.Call(context.Background(), txn.Participant{URL: urls[0]}, op, id, 2)
		if err != nil || (op == txn.OpPrepare && v != txn.VotePrepared) {
			t.Errorf("repeated %s: %v %v", op, v, err)
		}
	}
	if apps[0].prepares != 1 || apps[0].commits != 1 {
		t.Errorf("a repeat ran the application again: %d prepares, %d commits", apps[0].prepares, apps[0].commits)
	}
	if _, err := caller.Call(context.Background(), txn.Participant{URL: urls[0]}, txn.OpCommit, "never-seen", 1); !errors.Is(err, txn.ErrUnknownTransaction) {
		t.Errorf("commit of an unknown transaction: %v, want UnknownTransaction", err)
	}
}

type nopJournal struct{}

func (nopJournal) Committed(string, []txn.Participant) error { return nil }
func (nopJournal) Finished(string) error                     { return nil }

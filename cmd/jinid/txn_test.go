//go:build !jinid_omit_tools

package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn"
	"github.com/jinid/jinid/services/txn/participant"
	"github.com/jinid/jinid/services/txn/txntest"
)

// jinid txn create, join, state and commit against a transaction manager,
// with a participant that votes PREPARED.
func TestTxnCommands(t *testing.T) {
	m := txntest.Start(t, txn.ServiceConfig{})
	var committed atomic.Int32
	p := httptest.NewServer(&participant.Handler{
		Prepare: func(context.Context, string) (apitypes.Vote, error) { return apitypes.VotePrepared, nil },
		Commit:  func(context.Context, string) error { committed.Add(1); return nil },
		Abort:   func(context.Context, string) error { return nil },
	})
	defer p.Close()

	out, _, err := run(t, nil, "txn", "create", "--server", m.URL)
	id := strings.TrimSpace(out)
	if err != nil || len(id) != 32 {
		t.Fatalf("create: %q %v", out, err)
	}
	if _, _, err := run(t, nil, "txn", "join", id, p.URL, "--server", m.URL); err != nil {
		t.Fatalf("join: %v", err)
	}
	if out, _, err := run(t, nil, "txn", "state", id, "--server", m.URL); err != nil || out != "ACTIVE\n" {
		t.Fatalf("state: %q %v", out, err)
	}
	if out, _, err := run(t, nil, "txn", "commit", id, "--wait-for", "10s", "--server", m.URL); err != nil || out != "COMMITTED\n" || committed.Load() != 1 {
		t.Fatalf("commit: %q %v, %d commits", out, err, committed.Load())
	}
	if _, _, err := run(t, nil, "txn", "abort", id, "--server", m.URL); err == nil || !strings.Contains(err.Error(), "cannot abort") {
		t.Fatalf("abort after commit: %v", err)
	}
	// Nested: on this manager, and on another one (a second manager).
	out, _, err = run(t, nil, "txn", "create", "--server", m.URL)
	parent := strings.TrimSpace(out)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, nil, "txn", "create", "--parent", parent, "--server", m.URL); err != nil || len(strings.TrimSpace(out)) != 32 {
		t.Fatalf("create nested here: %q %v", out, err)
	}
	m2 := txntest.Start(t, txn.ServiceConfig{})
	out, _, err = run(t, nil, "txn", "create", "--parent", parent, "--parent-manager", m.URL, "--server", m2.URL)
	nested := strings.TrimSpace(out)
	if err != nil || len(nested) != 32 {
		t.Fatalf("create nested elsewhere: %q %v", out, err)
	}
	out, _, err = run(t, nil, "txn", "create", "--parent", nested, "--server", m2.URL)
	inner := strings.TrimSpace(out)
	if err != nil {
		t.Fatal(err)
	}
	// enclosedBy, across the two managers: inner is in nested (on m2),
	// which is in parent (on m).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{inner, nested}, "true"},
		{[]string{inner, parent, "--ancestor-manager", m.URL}, "true"},
		{[]string{nested, parent, "--ancestor-manager", m.URL}, "true"},
		{[]string{inner, parent}, "false"}, // no such transaction on m2
		{[]string{nested, inner}, "false"},
	} {
		args := append([]string{"txn", "enclosed-by", "--server", m2.URL}, c.args...)
		if out, _, err := run(t, nil, args...); err != nil || strings.TrimSpace(out) != c.want {
			t.Errorf("enclosed-by %v: %q %v, want %s", c.args, out, err, c.want)
		}
	}
	if _, _, err := run(t, nil, "txn", "enclosed-by", "nosuch", parent, "--server", m.URL); err == nil || !strings.Contains(err.Error(), "no such transaction") {
		t.Errorf("enclosed-by of an unknown transaction: %v", err)
	}
	for _, bad := range [][]string{
		{"txn", "create", "--parent-manager", m.URL, "--server", m.URL},
		{"txn", "participant", "--vote", "maybe"},
		{"txn", "commit", id, "--wait-for", "-1s", "--server", m.URL},
	} {
		if _, _, err := run(t, nil, bad...); err == nil || exitCode(err) != exitUsage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

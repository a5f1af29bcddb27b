package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
	"github.com/jinid/jinid/services/txn/participant"
)

// jinid txn create, join, state and commit against a transaction manager,
// with a participant that votes PREPARED.
func TestTxnCommands(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := lease.New(st, clock.Real{}, slog.New(slog.DiscardHandler))
	loopbackOK := outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	s, err := txn.NewService(txn.ServiceConfig{Store: st, Grantor: g, Outbound: loopbackOK,
		Client: outbound.New(outbound.Config{Policy: loopbackOK}), Manager: "http://gw:4162"})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	defer g.Shutdown(context.Background())
	defer s.Shutdown(context.Background())
	srv := httptest.NewServer(api.New(api.Config{Services: []httpjson.Service{g, s}}))
	defer srv.Close()
	var committed atomic.Int32
	p := httptest.NewServer(&participant.Handler{
		Prepare: func(context.Context, string) (txn.Vote, error) { return txn.VotePrepared, nil },
		Commit:  func(context.Context, string) error { committed.Add(1); return nil },
		Abort:   func(context.Context, string) error { return nil },
	})
	defer p.Close()

	out, _, err := run(t, nil, "txn", "create", "--server", srv.URL)
	id := strings.TrimSpace(out)
	if err != nil || len(id) != 32 {
		t.Fatalf("create: %q %v", out, err)
	}
	if _, _, err := run(t, nil, "txn", "join", id, p.URL, "--server", srv.URL); err != nil {
		t.Fatalf("join: %v", err)
	}
	if out, _, err := run(t, nil, "txn", "state", id, "--server", srv.URL); err != nil || out != "ACTIVE\n" {
		t.Fatalf("state: %q %v", out, err)
	}
	if out, _, err := run(t, nil, "txn", "commit", id, "--wait-for", "10s", "--server", srv.URL); err != nil || out != "COMMITTED\n" || committed.Load() != 1 {
		t.Fatalf("commit: %q %v, %d commits", out, err, committed.Load())
	}
	if _, _, err := run(t, nil, "txn", "abort", id, "--server", srv.URL); err == nil || !strings.Contains(err.Error(), "cannot abort") {
		t.Fatalf("abort after commit: %v", err)
	}
	for _, bad := range [][]string{
		{"txn", "participant", "--vote", "maybe"},
		{"txn", "commit", id, "--wait-for", "-1s", "--server", srv.URL},
	} {
		if _, _, err := run(t, nil, bad...); err == nil || exitCode(err) != exitUsage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

// Package txntest runs a transaction manager behind the API for tests: a
// store in a temporary directory, a lease grantor, the service, and an
// httptest server, with loopback allowed as a participant address.
package txntest

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/apidoc"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
)

// Manager is a running transaction manager.
type Manager struct {
	URL     string // the API's
	Grantor *lease.Grantor
	Service *txn.Service
	metrics *metrics.Registry
}

// Start runs one until the test ends. cfg's Store, Grantor, Outbound,
// Client and Manager are filled in; its other settings are kept (a Clock
// is the grantor's too).
func Start(t testing.TB, cfg txn.ServiceConfig) *Manager {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.New()
	st.Instrument(reg)
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	g := lease.New(st, clk, slog.New(slog.DiscardHandler))
	// Participants in tests listen on loopback, which the outbound
	// policy refuses unless allowed.
	loopbackOK := outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	// The API's address is known first: it is the manager's URL, which
	// participants and other managers call back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Grantor, cfg.Outbound, cfg.Metrics = st, g, loopbackOK, reg
	cfg.Client, cfg.Manager = outbound.New(outbound.Config{Policy: loopbackOK}), "http://"+ln.Addr().String()
	s, err := txn.NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	s.Start(context.Background())
	srv := httptest.NewUnstartedServer(apidoc.Handler(t, api.New(api.Config{Services: []httpjson.Service{g, s}})))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		s.Shutdown(context.Background())
		g.Shutdown(context.Background())
		st.Close()
	})
	return &Manager{URL: srv.URL, Grantor: g, Service: s, metrics: reg}
}

// Writes is how many writes (each an fsync) the store has committed.
func (m *Manager) Writes() int {
	return int(m.Metric("jinid_store_commit_duration_seconds_count"))
}

// Metric is the value of a series as exposed, named with its labels
// (`jinid_transactions{state="active"}`); 0 when absent.
func (m *Manager) Metric(series string) float64 {
	var b strings.Builder
	m.metrics.WritePrometheus(&b)
	for line := range strings.Lines(b.String()) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n
		}
	}
	return 0
}

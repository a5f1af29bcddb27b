package lookup

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// loopbackOK lets the tests' listeners, on loopback, receive: the
// outbound policy refuses loopback unless allowed.
var loopbackOK = outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

// A listener that answers UnknownEvent stops getting that event: the
// registrar cancels its notify registration; another listener goes on.
func TestUnknownEventCancelsRegistration(t *testing.T) {
	var refused, fine atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/refuses", func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":{"code":"UnknownEvent","message":"not interested"}}`))
	})
	mux.HandleFunc("/fine", func(w http.ResponseWriter, r *http.Request) { fine.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := lease.New(st, clock.Real{}, slog.New(slog.DiscardHandler))
	defer g.Shutdown(context.Background())
	d := event.New(event.Config{Client: outbound.New(outbound.Config{Policy: loopbackOK})})
	defer d.Shutdown(context.Background())
	r, err := New(Config{Store: st, Grantor: g, Outbound: loopbackOK, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/refuses", "/fine"} {
		if _, err := r.Notify(NotifyRequest{Transitions: []string{NoMatchMatch}, Listener: srv.URL + path, Duration: lease.Forever}); err != nil {
			t.Fatal(err)
		}
	}
	r.Register(printer("one"), 60_000, "")
	testenv.Until(t, "the refusing listener's registration gone, the fine one's event delivered", func() bool {
		_, n := r.Count()
		return n == 1 && fine.Load() == 1
	})
	r.Register(printer("two"), 60_000, "")
	testenv.Until(t, "the fine listener's second event", func() bool { return fine.Load() >= 2 })
	if refused.Load() != 1 || fine.Load() != 2 {
		t.Fatalf("refusing listener got %d events (want 1), the other %d (want 2)", refused.Load(), fine.Load())
	}
}

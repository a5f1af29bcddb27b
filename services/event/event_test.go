package event

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/outbound"
)

// loopbackOK lets the tests' listeners, on loopback, receive: the
// outbound policy refuses loopback unless allowed.
var loopbackOK = outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	mu   sync.Mutex
	seqs []int64
}

func (r *recorder) add(req *http.Request) {
	var ev map[string]any
	json.NewDecoder(req.Body).Decode(&ev)
	r.mu.Lock()
	r.seqs = append(r.seqs, int64(ev["seqNum"].(float64)))
	r.mu.Unlock()
}

func (r *recorder) got() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.seqs...)
}

// testEvent is an event type of the tests' own: any event type works
// that embeds apitypes.RemoteEvent.
type testEvent struct {
	apitypes.RemoteEvent
	X int64 `json:"x"`
}

func ev(seq int64) Event {
	return testEvent{RemoteEvent: apitypes.RemoteEvent{Source: apitypes.EventSource{Service: "test", ID: "r1"}, EventID: 7, SeqNum: seq, Type: "TestEvent"}, X: seq}
}

// An event goes out as its JSON: the common part and its own fields side
// by side, as API.md shows them.
func TestEventJSON(t *testing.T) {
	b, _ := json.Marshal(apitypes.RemoteDiscoveryEvent{RemoteEvent: apitypes.RemoteEvent{Source: apitypes.EventSource{Service: "lds", ID: "abc"},
		EventID: 12, SeqNum: 7, Handback: []byte{1, 2}, Type: "RemoteDiscoveryEvent"}, Registrars: []apitypes.Registrar{}})
	want := `{"source":{"service":"lds","id":"abc"},"eventID":12,"seqNum":7,"handback":"AQI=","type":"RemoteDiscoveryEvent","discarded":false,"registrars":[],"groups":null}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

// A listener that fails with 500 and then recovers gets every event, in
// order.
func TestRetryThenRecover(t *testing.T) {
	var rec recorder
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		}
		rec.add(r)
	}))
	defer srv.Close()
	d := New(Config{Client: outbound.New(outbound.Config{Policy: loopbackOK}), Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	defer d.Shutdown(context.Background())
	outcomes := make(chan Outcome, 10)
	for i := int64(1); i <= 5; i++ {
		d.Send(Delivery{Listener: srv.URL, Event: ev(i), Until: time.Now().Add(time.Minute), Done: func(o Outcome, _ error) { outcomes <- o }})
	}
	for range 5 {
		if o := <-outcomes; o != Delivered {
			t.Fatalf("outcome %v", o)
		}
	}
	if got := rec.got(); len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("delivered %v, want 1..5 in order", got)
	}
}

func TestOutcomes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/unknown", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":{"code":"UnknownEvent","message":"no"}}`))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	reg := metrics.New()
	var failures atomic.Int64
	d := New(Config{Client: outbound.New(outbound.Config{Policy: loopbackOK}), Backoff: 5 * time.Millisecond,
		Metrics: reg, OnFailure: func(string, Outcome, error) { failures.Add(1) }})
	defer d.Shutdown(context.Background())
	for _, tc := range []struct {
		path  string
		until time.Duration
		want  Outcome
	}{
		{"/unknown", time.Minute, UnknownEvent},
		{"/gone", time.Minute, Definite},
		{"/down", 50 * time.Millisecond, GaveUp},
	} {
		done := make(chan Outcome, 1)
		d.Send(Delivery{Listener: srv.URL + tc.path, Event: ev(1), Until: time.Now().Add(tc.until), Done: func(o Outcome, _ error) { done <- o }})
		if got := <-done; got != tc.want {
			t.Errorf("%s: outcome %v, want %v", tc.path, got, tc.want)
		}
	}
	done := make(chan Outcome, 1)
	d.Send(Delivery{Listener: "http://127.0.0.1:1/refused", Event: ev(1), Until: time.Now().Add(50 * time.Millisecond), Done: func(o Outcome, _ error) { done <- o }})
	if got := <-done; got != GaveUp {
		t.Errorf("refused connection: %v, want GaveUp after retrying", got)
	}
	// Each outcome counted, with its time, before Done heard it.
	for outcome, n := range map[string]uint64{"unknown_event": 1, "definite_failure": 1, "gave_up": 2, "delivered": 0} {
		if got := d.deliveries.Get(outcome); got != n {
			t.Errorf("deliveries %s: %d, want %d", outcome, got, n)
		}
		if got := d.duration.Count(outcome); got != n {
			t.Errorf("delivery durations %s: %d, want %d", outcome, got, n)
		}
	}
	if failures.Load() != 4 {
		t.Errorf("OnFailure heard %d failures, want 4", failures.Load())
	}
}

// A listener that hangs does not delay another.
func TestHungListenerDelaysNoOne(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	var rec recorder
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	defer fast.Close()

	d := New(Config{Client: &http.Client{Timeout: 30 * time.Second}})
	defer d.Shutdown(context.Background())
	start := time.Now()
	for i := int64(1); i <= 20; i++ {
		d.Send(Delivery{Listener: hung.URL, Event: ev(i), Until: time.Now().Add(time.Minute)})
		d.Send(Delivery{Listener: fast.URL, Event: ev(i), Until: time.Now().Add(time.Minute)})
	}
	testenv.Until(t, "the fast listener's 20 events while another hangs", func() bool { return len(rec.got()) >= 20 })
	took := time.Since(start)
	t.Logf("fast listener got all 20 events in %v while the other hung", took)
	// Not a timing: the hung listener holds a call for 30 s, and one
	// delivery queued behind it would take that long.
	if took > 15*time.Second {
		t.Fatalf("fast listener delayed %v by the hung one", took)
	}
}

// TestDeadlineFollowsRenewal: a delivery retried against a deadline that
// moves (a lease renewed meanwhile) asks for it before each retry, and
// keeps going while it moves.
func TestDeadlineFollowsRenewal(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 20 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	d := New(Config{Client: outbound.New(outbound.Config{Policy: loopbackOK}), Backoff: 5 * time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	defer d.Shutdown(context.Background())
	// The lease is renewed at every look: a second from then. (Not a
	// fixed end that renewals push on by a few milliseconds: on a loaded
	// machine a try outlasted that.) What is checked is that it is looked
	// at before each retry.
	var looks atomic.Int64
	deadline := func() time.Time {
		looks.Add(1)
		return time.Now().Add(time.Second)
	}
	done := make(chan Outcome, 1)
	d.Send(Delivery{Listener: srv.URL, Event: ev(1), Deadline: deadline, Done: func(o Outcome, _ error) { done <- o }})
	if got := <-done; got != Delivered {
		t.Fatalf("outcome %v after %d tries, want delivered", got, calls.Load())
	}
	if tries := calls.Load(); looks.Load() != tries-1 {
		t.Fatalf("the deadline looked at %d times in %d tries, want before each retry", looks.Load(), tries)
	}
}

// An event for a listener served inside the daemon (an event mailbox's,
// Config.Inside) is handed over with no request, to the receiver; the
// HTTP listener of the same URL hears nothing.
func TestInsideListener(t *testing.T) {
	var posted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posted.Add(1) }))
	defer srv.Close()
	d := New(Config{Client: outbound.New(outbound.Config{Policy: loopbackOK})})
	defer d.Shutdown(context.Background())
	got := make(chan int, 1)
	d.SetInside(func(l string) (Receiver, bool) {
		return func(body []byte, hops int) (Outcome, error) { got <- hops; return Delivered, nil }, l == srv.URL+"/inside"
	})
	done := make(chan Outcome, 1)
	d.Send(Delivery{Listener: srv.URL + "/inside", Event: ev(1), Hops: 2, Until: time.Now().Add(time.Minute), Done: func(o Outcome, _ error) { done <- o }})
	if hops, o := <-got, <-done; hops != 2 || o != Delivered || posted.Load() != 0 {
		t.Fatalf("hops %d, outcome %v, %d requests", hops, o, posted.Load())
	}
}

// BenchmarkDelivery: an event to a listener over HTTP on loopback, and
// to one served inside the daemon (a mailbox listener of its own), one
// after another through one dispatcher queue.
func BenchmarkDelivery(b *testing.B) {
	for _, inside := range []bool{false, true} {
		name := "http"
		if inside {
			name = "inside"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			d := New(Config{Client: outbound.New(outbound.Config{Policy: loopbackOK})})
			defer d.Shutdown(context.Background())
			if inside {
				d.SetInside(func(string) (Receiver, bool) {
					return func([]byte, int) (Outcome, error) { return Delivered, nil }, true
				})
			}
			done := make(chan struct{}, 1024)
			b.ResetTimer()
			for i := range b.N {
				d.Send(Delivery{Listener: srv.URL, Event: ev(int64(i)), Until: time.Now().Add(time.Minute),
					Done: func(Outcome, error) { done <- struct{}{} }})
				<-done
			}
		})
	}
}

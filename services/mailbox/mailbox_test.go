package mailbox_test

// The conformance suite of the event mailbox: one named case per rule of
// the EM specification (v2, push and pull) and of issue 9, through the
// HTTP API with real listeners.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/apidoc"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/store/storetest"
)

type rig struct {
	t   testing.TB
	dir string
	st  *store.Store
	g   *lease.Grantor
	m   *mailbox.Service
	srv *httptest.Server
	cfg mailbox.Config
}

func newRig(t *testing.T, cfg mailbox.Config) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), cfg: cfg}
	r.open()
	t.Cleanup(r.close)
	return r
}

func (r *rig) open() {
	st := storetest.Open(r.t, r.dir)
	r.st = st
	r.g = lease.New(st, clock.Real{}, slog.New(slog.DiscardHandler))
	cfg := r.cfg
	cfg.Store, cfg.Grantor, cfg.Backoff, cfg.MaxBackoff = st, r.g, 20*time.Millisecond, 100*time.Millisecond
	// The tests' targets are on loopback, which the outbound policy
	// refuses unless allowed.
	loopbackOK := outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	cfg.Outbound, cfg.Client = loopbackOK, outbound.New(outbound.Config{Policy: loopbackOK})
	var err error
	r.m, err = mailbox.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.g.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.m.Start(context.Background())
	r.srv = httptest.NewServer(apidoc.Handler(r.t, api.New(api.Config{Services: []httpjson.Service{r.g, r.m}})))
}

func (r *rig) close() {
	if r.srv == nil {
		return
	}
	r.srv.Close()
	r.m.Shutdown(context.Background())
	r.g.Shutdown(context.Background())
	r.st.Close()
	r.srv = nil
}

func (r *rig) restart() {
	r.close()
	r.open()
}

// do sends a request and decodes a JSON answer into out; it returns the
// status and the error code.
func (r *rig) do(method, path string, body any, out any) (int, string) {
	r.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = r.srv.URL + path
	}
	req, _ := http.NewRequest(method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		var eb apitypes.ErrorBody
		json.Unmarshal(raw, &eb)
		return resp.StatusCode, string(eb.Error.Code)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			r.t.Fatalf("%s %s: %v (%s)", method, path, err, raw)
		}
	}
	return resp.StatusCode, ""
}

type registration struct {
	ID       string         `json:"id"`
	Lease    apitypes.Lease `json:"lease"`
	Listener struct {
		URL string `json:"url"`
	} `json:"listener"`
}

func (r *rig) register(pull bool) registration {
	r.t.Helper()
	var reg registration
	if status, code := r.do("POST", "/v1/mailbox/registrations", map[string]any{"leaseDuration": 600_000, "pull": pull}, &reg); status != 200 {
		r.t.Fatalf("register: HTTP %d %s", status, code)
	}
	return reg
}

// ev is an event from source src with event ID id and sequence seq.
func ev(src string, id, seq int64) map[string]any {
	return map[string]any{"source": map[string]string{"service": "test", "id": src}, "eventID": id, "seqNum": seq, "type": "TestEvent", "handback": nil}
}

// post sends an event to the registration's mailbox listener (at the
// server as it is now: a restart moves it to another port).
func (r *rig) post(reg registration, e map[string]any) (int, string) {
	r.t.Helper()
	_, path, _ := strings.Cut(strings.TrimPrefix(reg.Listener.URL, "http://"), "/")
	return r.do("POST", "/"+path, e, nil)
}

// postRaw sends an event as exactly these bytes (a map would be encoded
// with its members sorted).
func (r *rig) postRaw(reg registration, body string) (int, string) {
	r.t.Helper()
	_, path, _ := strings.Cut(strings.TrimPrefix(reg.Listener.URL, "http://"), "/")
	return r.do("POST", "/"+path, body, nil)
}

func (r *rig) mustPost(reg registration, events ...map[string]any) {
	r.t.Helper()
	for _, e := range events {
		if status, code := r.post(reg, e); status != 204 {
			r.t.Fatalf("posting %v: HTTP %d %s", e, status, code)
		}
	}
}

func (r *rig) iterator(reg registration) string {
	r.t.Helper()
	var out struct {
		Iterator string `json:"iterator"`
	}
	if status, code := r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/iterators", nil, &out); status != 200 {
		r.t.Fatalf("iterator: HTTP %d %s", status, code)
	}
	return out.Iterator
}

type got struct {
	Source struct {
		ID string `json:"id"`
	} `json:"source"`
	EventID int64 `json:"eventID"`
	SeqNum  int64 `json:"seqNum"`
}

func (r *rig) next(reg registration, it string, timeoutMS int) (*got, int, string) {
	r.t.Helper()
	var g got
	status, code := r.do("GET", fmt.Sprintf("/v1/mailbox/registrations/%s/iterators/%s/next?timeout=%d", reg.ID, it, timeoutMS), nil, &g)
	if status == 200 {
		return &g, status, code
	}
	return nil, status, code
}

// target is a real listener whose answers can be scripted.
type target struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []got
	// fail answers the first fail deliveries with 500; mode "unknown"
	// answers UnknownEvent for events of event ID 7; "gone" 404s all.
	fail int
	mode string
	ch   chan got
}

func newTarget(t *testing.T) *target {
	tg := &target{ch: make(chan got, 1000)}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var g got
		json.NewDecoder(r.Body).Decode(&g)
		tg.mu.Lock()
		defer tg.mu.Unlock()
		if tg.fail > 0 {
			tg.fail--
			w.WriteHeader(500)
			return
		}
		switch {
		case tg.mode == "gone":
			w.WriteHeader(404)
			return
		case tg.mode == "unknown" && g.EventID == 7:
			w.WriteHeader(410)
			w.Write([]byte(`{"error":{"code":"UnknownEvent","message":"no"}}`))
			return
		}
		tg.got = append(tg.got, g)
		tg.ch <- g
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) set(fn func()) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	fn()
}

func (tg *target) expect(t *testing.T, seqs ...int64) {
	t.Helper()
	for _, want := range seqs {
		select {
		case g := <-tg.ch:
			if g.SeqNum != want {
				t.Fatalf("delivered seq %d, want %d", g.SeqNum, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("seq %d not delivered", want)
		}
	}
}

func (tg *target) none(t *testing.T) {
	t.Helper()
	select {
	case g := <-tg.ch:
		t.Fatalf("unexpected delivery of seq %d", g.SeqNum)
	case <-time.After(200 * time.Millisecond):
	}
}

func (r *rig) enable(reg registration, url string) (int, string) {
	r.t.Helper()
	return r.do("PUT", "/v1/mailbox/registrations/"+reg.ID+"/delivery", map[string]any{"target": map[string]string{"url": url}}, nil)
}

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		cfg  mailbox.Config
		run  func(t *testing.T, r *rig)
	}{
		{name: "register/positive-and-ANY-granted", run: func(t *testing.T, r *rig) {
			for _, d := range []int64{60_000, lease.Any} {
				if status, code := r.do("POST", "/v1/mailbox/registrations", map[string]any{"leaseDuration": d}, nil); status != 200 {
					t.Errorf("duration %d: HTTP %d %s", d, status, code)
				}
			}
		}},
		{name: "register/zero-or-negative-is-InvalidArgument", run: func(t *testing.T, r *rig) {
			for _, d := range []int64{0, -5} {
				if _, code := r.do("POST", "/v1/mailbox/registrations", map[string]any{"leaseDuration": d}, nil); code != "InvalidArgument" {
					t.Errorf("duration %d: %s", d, code)
				}
			}
		}},
		{name: "listener/same-when-asked-again-different-per-registration", run: func(t *testing.T, r *rig) {
			a, b := r.register(false), r.register(false)
			var info registration
			r.do("GET", "/v1/mailbox/registrations/"+a.ID, nil, &info)
			if info.Listener.URL != a.Listener.URL || a.Listener.URL == b.Listener.URL {
				t.Fatalf("listeners %q %q %q", a.Listener.URL, info.Listener.URL, b.Listener.URL)
			}
		}},
		{name: "notify/ended-registration-is-NoSuchObject", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.do("DELETE", "/v1/leases/"+reg.Lease.ID, nil, nil)
			if status, code := r.post(reg, ev("a", 1, 1)); status != 404 || code != "NoSuchObject" {
				t.Fatalf("HTTP %d %s", status, code)
			}
		}},
		{name: "notify/not-an-event-is-InvalidArgument", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			for _, body := range []string{`{`, `{"eventID":1}`, `{"source":{"id":"x"}}`, `[]`} {
				if _, code := r.do("POST", reg.Listener.URL, body, nil); code != "InvalidArgument" {
					t.Errorf("%s: %s", body, code)
				}
			}
			big := ev("a", 1, 1)
			big["pad"] = strings.Repeat("x", mailbox.MaxEventSize)
			if _, code := r.post(reg, big); code != "InvalidArgument" {
				t.Errorf("oversized: %s", code)
			}
		}},
		{name: "push/stored-events-delivered-in-order-on-enable", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			r.mustPost(reg, ev("a", 1, 1), ev("b", 1, 1), ev("a", 1, 2))
			r.enable(reg, tg.srv.URL)
			tg.expect(t, 1, 1, 2)
		}},
		{name: "push/events-arriving-while-enabled-delivered", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			r.enable(reg, tg.srv.URL)
			for i := int64(1); i <= 20; i++ {
				r.mustPost(reg, ev("a", 1, i))
			}
			tg.expect(t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
		}},
		{name: "push/enable-replaces-the-target", run: func(t *testing.T, r *rig) {
			reg, t1, t2 := r.register(false), newTarget(t), newTarget(t)
			r.enable(reg, t1.srv.URL)
			r.mustPost(reg, ev("a", 1, 1))
			t1.expect(t, 1)
			r.enable(reg, t2.srv.URL)
			r.mustPost(reg, ev("a", 1, 2))
			t2.expect(t, 2)
			t1.none(t)
		}},
		{name: "push/own-mailbox-listener-as-target-is-InvalidArgument", run: func(t *testing.T, r *rig) {
			a, b := r.register(false), r.register(false)
			for _, l := range []string{a.Listener.URL, b.Listener.URL} {
				if _, code := r.enable(a, l); code != "InvalidArgument" {
					t.Errorf("target %s: %s", l, code)
				}
			}
		}},
		{name: "push/null-target-disables", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			r.enable(reg, tg.srv.URL)
			if status, _ := r.do("PUT", "/v1/mailbox/registrations/"+reg.ID+"/delivery", `{"target":null}`, nil); status != 204 {
				t.Fatalf("HTTP %d", status)
			}
			r.mustPost(reg, ev("a", 1, 1))
			tg.none(t)
		}},
		{name: "push/disable-keeps-events-stored", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/delivery", nil, nil)
			r.mustPost(reg, ev("a", 1, 1))
			tg.none(t)
			r.enable(reg, tg.srv.URL)
			tg.expect(t, 1)
		}},
		{name: "push/indefinite-failures-retried-in-order", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			tg.set(func() { tg.fail = 3 })
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2))
			r.enable(reg, tg.srv.URL)
			tg.expect(t, 1, 2)
		}},
		{name: "push/definite-failure-disables-until-enabled-again", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			tg.set(func() { tg.mode = "gone" })
			r.mustPost(reg, ev("a", 1, 1))
			r.enable(reg, tg.srv.URL)
			testenv.Until(t, "delivery disabled", func() bool {
				var info struct {
					Target  any `json:"target"`
					Pending int `json:"pending"`
				}
				r.do("GET", "/v1/mailbox/registrations/"+reg.ID, nil, &info)
				if info.Target == nil && info.Pending != 1 {
					t.Fatalf("pending %d after a definite failure, want the event kept", info.Pending)
				}
				return info.Target == nil
			})
			tg.set(func() { tg.mode = "" })
			r.enable(reg, tg.srv.URL)
			tg.expect(t, 1)
		}},
		{name: "unknown/target-UnknownEvent-recorded-refused-and-skipped", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			tg.set(func() { tg.mode = "unknown" })
			r.mustPost(reg, ev("a", 7, 1), ev("a", 1, 2), ev("a", 7, 3), ev("b", 7, 4))
			r.enable(reg, tg.srv.URL)
			tg.expect(t, 2) // a#7 refused (and recorded), a#7 seq 3 skipped; b#7 refused too
			if status, code := r.post(reg, ev("a", 7, 5)); status != 410 || code != "UnknownEvent" {
				t.Fatalf("a later a#7: HTTP %d %s", status, code)
			}
			r.mustPost(reg, ev("a", 1, 6))
			tg.expect(t, 6)
		}},
		{name: "unknown/cleared-by-enableDelivery", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			tg.set(func() { tg.mode = "unknown" })
			r.enable(reg, tg.srv.URL)
			r.mustPost(reg, ev("a", 7, 1))
			testenv.Until(t, "events refused with 410", func() bool { s, _ := r.post(reg, ev("a", 7, 2)); return s == 410 })
			tg.set(func() { tg.mode = "" })
			r.enable(reg, tg.srv.URL)
			r.mustPost(reg, ev("a", 7, 3))
			tg.expect(t, 3)
		}},
		{name: "unknown/list-persists-across-restart", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/unknown-events", map[string]any{"events": []any{map[string]any{"source": map[string]string{"service": "test", "id": "a"}, "eventID": 7}}}, nil)
			r.restart()
			if status, code := r.post(reg, ev("a", 7, 1)); status != 410 || code != "UnknownEvent" {
				t.Fatalf("after restart: HTTP %d %s", status, code)
			}
		}},
		{name: "unknown/addUnknownEvents-skips-stored-and-refuses-new", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 7, 1), ev("a", 1, 2))
			r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/unknown-events", map[string]any{"events": []any{map[string]any{"source": map[string]string{"service": "test", "id": "a"}, "eventID": 7}}}, nil)
			if _, code := r.post(reg, ev("a", 7, 3)); code != "UnknownEvent" {
				t.Fatalf("new a#7: %s", code)
			}
			it := r.iterator(reg)
			// getRemoteEvents cleared the list, but the stored a#7 was
			// dropped when it was added.
			if g, _, _ := r.next(reg, it, 0); g == nil || g.SeqNum != 2 {
				t.Fatalf("next %+v", g)
			}
		}},
		{name: "unknown/cleared-by-getRemoteEvents", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/unknown-events", map[string]any{"events": []any{map[string]any{"source": map[string]string{"service": "test", "id": "a"}, "eventID": 7}}}, nil)
			r.iterator(reg)
			if status, code := r.post(reg, ev("a", 7, 1)); status != 204 {
				t.Fatalf("HTTP %d %s", status, code)
			}
		}},
		{name: "pull/only-for-pull-registrations", run: func(t *testing.T, r *rig) {
			reg := r.register(false)
			if _, code := r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/iterators", nil, nil); code != "UnsupportedOperation" {
				t.Fatal(code)
			}
		}},
		{name: "pull/events-in-order-each-once", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2), ev("a", 1, 3))
			it := r.iterator(reg)
			for want := int64(1); want <= 3; want++ {
				if g, _, _ := r.next(reg, it, 0); g == nil || g.SeqNum != want {
					t.Fatalf("next %+v, want seq %d", g, want)
				}
			}
			if g, status, _ := r.next(reg, it, 0); g != nil || status != 204 {
				t.Fatalf("after the last: %+v HTTP %d", g, status)
			}
		}},
		{name: "pull/next-waits-up-to-timeout", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			start := time.Now()
			if g, status, _ := r.next(reg, it, 300); g != nil || status != 204 || time.Since(start) < 300*time.Millisecond {
				t.Fatalf("empty next: %+v HTTP %d after %v", g, status, time.Since(start))
			}
		}},
		{name: "pull/long-poll-gets-an-event-as-it-arrives", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			arrives := time.AfterFunc(100*time.Millisecond, func() { r.mustPost(reg, ev("a", 1, 1)) }) // while the poll waits
			defer arrives.Stop()
			start := time.Now()
			g, _, _ := r.next(reg, it, 10_000)
			if g == nil || g.SeqNum != 1 || time.Since(start) > 5*time.Second {
				t.Fatalf("next %+v after %v", g, time.Since(start))
			}
		}},
		{name: "pull/negative-timeout-is-InvalidArgument", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			if _, _, code := r.next(reg, it, -1); code != "InvalidArgument" {
				t.Fatal(code)
			}
		}},
		{name: "pull/new-iterator-invalidates-the-old", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			old := r.iterator(reg)
			r.iterator(reg)
			for range 2 { // and stays invalid
				if _, _, code := r.next(reg, old, 0); code != "InvalidIterator" {
					t.Fatal(code)
				}
			}
		}},
		{name: "pull/enableDelivery-invalidates-iterators", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(true), newTarget(t)
			it := r.iterator(reg)
			r.enable(reg, tg.srv.URL)
			if _, _, code := r.next(reg, it, 0); code != "InvalidIterator" {
				t.Fatal(code)
			}
		}},
		{name: "pull/getRemoteEvents-disables-push", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(true), newTarget(t)
			r.enable(reg, tg.srv.URL)
			it := r.iterator(reg)
			r.mustPost(reg, ev("a", 1, 1))
			tg.none(t)
			if g, _, _ := r.next(reg, it, 0); g == nil {
				t.Fatal("event not pullable")
			}
		}},
		{name: "pull/close-invalidates", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			if status, _ := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); status != 204 {
				t.Fatalf("close: HTTP %d", status)
			}
			if _, _, code := r.next(reg, it, 0); code != "InvalidIterator" {
				t.Fatal(code)
			}
			if _, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); code != "InvalidIterator" {
				t.Fatal(code)
			}
		}},
		{name: "pull/unacknowledged-event-returned-by-the-next-iterator", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2))
			a := r.iterator(reg)
			r.next(reg, a, 0) // seq 1, not acknowledged by a further next
			b := r.iterator(reg)
			if g, _, _ := r.next(reg, b, 0); g == nil || g.SeqNum != 1 {
				t.Fatalf("new iterator's first %+v", g)
			}
			if g, _, _ := r.next(reg, b, 0); g == nil || g.SeqNum != 2 {
				t.Fatalf("then %+v", g)
			}
		}},
		{name: "pull/acknowledged-events-are-gone", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2))
			a := r.iterator(reg)
			r.next(reg, a, 0)
			r.next(reg, a, 0)                                                             // acknowledges 1
			r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+a, nil, nil) // acknowledges 2
			b := r.iterator(reg)
			if g, status, _ := r.next(reg, b, 0); g != nil || status != 204 {
				t.Fatalf("acknowledged event again: %+v", g)
			}
		}},
		// issue 13, items 5 to 8
		{name: "pull/iterator-never-returns-an-event-twice-across-a-restart", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2), ev("a", 1, 3))
			it := r.iterator(reg)
			if g, _, _ := r.next(reg, it, 0); g == nil || g.SeqNum != 1 {
				t.Fatalf("first %+v", g)
			}
			r.restart() // the iterator stays valid, and remembers what it returned
			for want := int64(2); want <= 3; want++ {
				if g, _, code := r.next(reg, it, 0); g == nil || g.SeqNum != want {
					t.Fatalf("after the restart: %+v %s, want seq %d", g, code, want)
				}
			}
			r.restart()
			if g, status, code := r.next(reg, it, 0); g != nil || status != 204 {
				t.Fatalf("after the last and a restart: %+v HTTP %d %s", g, status, code)
			}
			if g, _, _ := r.next(reg, r.iterator(reg), 0); g != nil {
				t.Fatalf("acknowledged event returned again by a new iterator: %+v", g)
			}
		}},
		{name: "pull/unacknowledged-event-survives-a-restart-for-the-next-iterator", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1))
			r.next(reg, r.iterator(reg), 0)
			r.restart()
			if g, _, _ := r.next(reg, r.iterator(reg), 0); g == nil || g.SeqNum != 1 {
				t.Fatalf("unacknowledged event after a restart: %+v", g)
			}
		}},
		{name: "unknown/sources-compare-as-JSON-values", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			// The same source, its members in another order and spaced
			// differently, for the list and for the event.
			if status, code := r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/unknown-events",
				`{"events":[{"source":{"service":"test","id":"a","n":1.50},"eventID":7}]}`, nil); status != 204 {
				t.Fatalf("addUnknownEvents: HTTP %d %s", status, code)
			}
			if status, code := r.postRaw(reg, `{"source": {"n":1.50, "id":"a", "service":"test"}, "eventID":7, "seqNum":1}`); status != 410 || code != "UnknownEvent" {
				t.Fatalf("the same source reordered: HTTP %d %s, want 410 UnknownEvent", status, code)
			}
			if status, code := r.postRaw(reg, `{"source":{"id":"b","service":"test","n":1.50},"eventID":7,"seqNum":1}`); status != 204 {
				t.Fatalf("another source: HTTP %d %s", status, code)
			}
		}},
		{name: "unknown/target-refusal-matches-the-source-reordered", run: func(t *testing.T, r *rig) {
			reg, tg := r.register(false), newTarget(t)
			tg.set(func() { tg.mode = "unknown" })
			r.enable(reg, tg.srv.URL)
			r.postRaw(reg, `{"source":{"service":"test","id":"a"},"eventID":7,"seqNum":1}`)
			testenv.Until(t, "the target's refusal recorded", func() bool {
				var info struct {
					Unknown []any `json:"unknownEvents"`
				}
				r.do("GET", "/v1/mailbox/registrations/"+reg.ID, nil, &info)
				return len(info.Unknown) == 1
			})
			if status, code := r.postRaw(reg, `{"source":{"id":"a","service":"test"},"eventID":7,"seqNum":2}`); status != 410 {
				t.Fatalf("the refused source reordered: HTTP %d %s, want 410 UnknownEvent", status, code)
			}
		}},
		{name: "pull/close-after-the-registration-ended-succeeds-once", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			if status, _ := r.do("DELETE", "/v1/leases/"+reg.Lease.ID, nil, nil); status != 204 {
				t.Fatalf("cancel: HTTP %d", status)
			}
			if status, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); status != 204 {
				t.Fatalf("first close: HTTP %d %s, want 204", status, code)
			}
			if _, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); code != "InvalidIterator" {
				t.Fatalf("second close: %s, want InvalidIterator", code)
			}
		}},
		{name: "pull/close-after-the-registration-ended-and-a-restart", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			it := r.iterator(reg)
			r.do("DELETE", "/v1/leases/"+reg.Lease.ID, nil, nil)
			r.restart()
			if status, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); status != 204 {
				t.Fatalf("first close: HTTP %d %s, want 204", status, code)
			}
			r.restart()
			if _, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+it, nil, nil); code != "InvalidIterator" {
				t.Fatalf("second close: %s, want InvalidIterator", code)
			}
		}},
		{name: "pull/close-of-an-ended-registration's-replaced-iterator-is-InvalidIterator", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			old := r.iterator(reg)
			r.iterator(reg)
			r.do("DELETE", "/v1/leases/"+reg.Lease.ID, nil, nil)
			if _, code := r.do("DELETE", "/v1/mailbox/registrations/"+reg.ID+"/iterators/"+old, nil, nil); code != "InvalidIterator" {
				t.Fatal(code)
			}
		}},
		{name: "push/listener-of-an-ended-registration-refused-as-target", run: func(t *testing.T, r *rig) {
			a, b := r.register(false), r.register(false)
			r.do("DELETE", "/v1/leases/"+a.Lease.ID, nil, nil)
			if _, code := r.enable(b, a.Listener.URL); code != "InvalidArgument" {
				t.Fatalf("an ended registration's listener as target: %q, want InvalidArgument", code)
			}
			r.restart()
			// Under another name for this host, and after a restart.
			other := strings.Replace(a.Listener.URL, "127.0.0.1", "localhost", 1)
			if _, code := r.enable(b, other); code != "InvalidArgument" {
				t.Fatalf("%s as target: %q, want InvalidArgument", other, code)
			}
		}},
		{name: "listener/is-not-the-registration-ID", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			if strings.Contains(reg.Listener.URL, reg.ID) {
				t.Fatalf("listener %s names registration %s: holding it would be a capability over the registration", reg.Listener.URL, reg.ID)
			}
			if _, code := r.do("POST", mailbox.ListenerPath+reg.ID, ev("a", 1, 1), nil); code != "NoSuchObject" {
				t.Fatalf("events to the registration ID: %q, want NoSuchObject", code)
			}
		}},
		{name: "quota/full-registration-refuses-indefinitely-keeping-what-it-has", cfg: mailbox.Config{MaxPerRegistration: 3}, run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2), ev("a", 1, 3))
			if status, _ := r.post(reg, ev("a", 1, 4)); status != 503 {
				t.Fatalf("at the quota: HTTP %d, want 503 (retry later)", status)
			}
			it := r.iterator(reg)
			for want := int64(1); want <= 3; want++ {
				if g, _, _ := r.next(reg, it, 0); g == nil || g.SeqNum != want {
					t.Fatalf("stored event %d: %+v", want, g)
				}
			}
			r.next(reg, it, 0) // acknowledges the last
			r.mustPost(reg, ev("a", 1, 4))
		}},
		{name: "quota/daemon-wide", cfg: mailbox.Config{MaxEvents: 2}, run: func(t *testing.T, r *rig) {
			a, b := r.register(true), r.register(true)
			r.mustPost(a, ev("a", 1, 1))
			r.mustPost(b, ev("a", 1, 1))
			if status, _ := r.post(a, ev("a", 1, 2)); status != 503 {
				t.Fatalf("HTTP %d", status)
			}
		}},
		{name: "durable/events-survive-a-restart-in-order", run: func(t *testing.T, r *rig) {
			reg := r.register(true)
			r.mustPost(reg, ev("a", 1, 1), ev("a", 1, 2))
			r.restart()
			it := r.iterator(reg)
			for want := int64(1); want <= 2; want++ {
				if g, _, _ := r.next(reg, it, 0); g == nil || g.SeqNum != want {
					t.Fatalf("after restart %+v", g)
				}
			}
		}},
		{name: "lease/expiry-ends-the-registration-and-its-events", run: func(t *testing.T, r *rig) {
			var reg registration
			r.do("POST", "/v1/mailbox/registrations", map[string]any{"leaseDuration": 300, "pull": true}, &reg)
			r.mustPost(reg, ev("a", 1, 1))
			testenv.Until(t, "the listener gone (NoSuchObject)", func() bool { _, code := r.post(reg, ev("a", 1, 2)); return code == "NoSuchObject" })
			if _, code := r.do("GET", "/v1/mailbox/registrations/"+reg.ID, nil, nil); code != "NoSuchObject" {
				t.Fatal(code)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newRig(t, c.cfg)) })
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
}

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/lease"
)

// The lease renewal service's rules of LR.2 through the real daemon,
// with grantors that are HTTP servers on another host of the LAN.

// labGrantor grants leases of 3 s and answers renewals as the API does,
// after a delay (a slow grantor: it renews at once and answers late), or
// with the coded error it is told to give. It counts lapses: a renewal
// that comes after the lease expired.
type labGrantor struct {
	URL    string
	answer time.Duration // how late it answers
	// refuse, if set, is the body of a whole-call refusal with status
	// refuseStatus; perLease, a coded error each lease gets.
	refuse       string
	refuseStatus int
	perLease     *apitypes.Error

	mu     sync.Mutex
	exp    map[string]time.Time
	lapses []string
	calls  int
	// history is the last calls, for a failure's message: when each came
	// and when it was answered.
	history []string
}

const grantedFor = 3 * time.Second

func newLabGrantor(t *testing.T, h *netlab.Host, ip string, answer time.Duration) *labGrantor {
	t.Helper()
	g := &labGrantor{answer: answer, exp: map[string]time.Time{}}
	g.URL = jinidtest.ServeIn(t, h, ip, g)
	return g
}

// grant makes a lease of 3 s.
func (g *labGrantor) grant(id string) apitypes.Lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp := time.Now().Add(grantedFor)
	g.exp[id] = exp
	return apitypes.Lease{Grantor: g.URL, ID: id, Expiration: exp.UnixMilli(), Remaining: grantedFor.Milliseconds()}
}

func (g *labGrantor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Leases []apitypes.Renewal `json:"leases"`
	}
	if r.URL.Path != "/v1/leases/renew" || json.NewDecoder(r.Body).Decode(&req) != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	now := time.Now()
	var out apitypes.BatchResults
	defer func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.history = append(g.history, fmt.Sprintf("came %s answered %s: %+v", now.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), out.Results))
		if len(g.history) > 4 {
			g.history = g.history[1:]
		}
	}()
	g.mu.Lock()
	g.calls++
	for _, l := range req.Leases {
		res := apitypes.BatchResult{ID: l.ID}
		switch exp, ok := g.exp[l.ID]; {
		case g.perLease != nil:
			res.Error = g.perLease
		case !ok || !now.Before(exp):
			g.lapses = append(g.lapses, fmt.Sprintf("%s %v late", l.ID, now.Sub(exp)))
			res.Error = &apitypes.Error{Code: apitypes.UnknownLease, Message: "expired"}
		default:
			exp = now.Add(min(time.Duration(l.Duration)*time.Millisecond, grantedFor))
			g.exp[l.ID] = exp
			res.Expiration = exp.UnixMilli()
		}
		out.Results = append(out.Results, res)
	}
	refuse, status := g.refuse, g.refuseStatus
	g.mu.Unlock()
	// The grantor's slowness is what is tested; a caller that gives up
	// ends the wait.
	select {
	case <-time.After(g.answer):
	case <-r.Context().Done():
		return
	}
	if refuse != "" {
		if strings.HasPrefix(refuse, "{") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/html")
		}
		w.WriteHeader(status)
		w.Write([]byte(refuse))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (g *labGrantor) state() (calls int, lapses []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, append([]string(nil), g.lapses...)
}

// bannerServer answers every connection with an SSH server's banner: a
// grantor URL where no HTTP server is.
func bannerServer(t *testing.T, h *netlab.Host, ip string) string {
	t.Helper()
	ln := jinidtest.ListenIn(t, h, ip)
	jinidtest.ServeConns(t, ln, func(c net.Conn) { c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")) })
	return "http://" + ln.Addr().String()
}

type renewalLab struct {
	t    *testing.T
	d    *jinidtest.LabProc
	c    *client.Client
	gh   *netlab.Host
	gip  string
	sink *jinidtest.Sink
}

func newRenewalLab(t *testing.T) *renewalLab {
	t.Helper()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, cl, gh := lab.Host("gw"), lab.Host("client"), lab.Host("grantors")
	gwl, cll, ghl := gw.Attach(lan), cl.Attach(lan), gh.Attach(lan)
	// At debug level: why a renewal failed is logged there.
	d := jinidtest.LabDaemon(t, bin, gw, "--no-dns-sd", "--log-level", "debug")
	return &renewalLab{t: t, d: d, c: jinidtest.LabClient(t, cl, "http://"+gwl.IPv4.String()+":4162"), gh: gh, gip: ghl.IPv4.String(),
		sink: jinidtest.NewSink(t, cl, cll.IPv4.String())}
}

// set makes a renewal set whose failure events go to the sink at path,
// holding ls, renewed for 3 s at a time for ever.
func (l *renewalLab) set(path string, ls ...apitypes.Lease) string {
	l.t.Helper()
	ctx := context.Background()
	s, err := l.c.RenewalCreate(ctx, 600_000)
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.c.RenewalFailures(ctx, s.ID, l.sink.URL+path, nil); err != nil {
		l.t.Fatal(err)
	}
	renew := grantedFor.Milliseconds()
	for _, le := range ls {
		if err := l.c.RenewFor(ctx, s.ID, le, lease.Forever, &renew); err != nil {
			l.t.Fatal(err)
		}
	}
	return s.ID
}

// TestRenewalConformance: each case is a rule as the issue that found it
// breaking stated it (issue 32), through the daemon's API.
func TestRenewalConformance(t *testing.T) {
	t.Parallel()
	l := newRenewalLab(t)

	t.Run("LR.2 a slow grantor's leases are kept as long as they are in the set", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("a minute of renewals")
		}
		var gs []*labGrantor
		var ls []apitypes.Lease
		for _, answer := range []time.Duration{300 * time.Millisecond, time.Second, 1500 * time.Millisecond} {
			g := newLabGrantor(t, l.gh, l.gip, answer)
			gs = append(gs, g)
			ls = append(ls, g.grant(fmt.Sprintf("after-%v", answer)))
		}
		set := l.set("/slow", ls...)
		// A minute, looking every few seconds: every lease in the set and
		// alive, no lapse at a grantor, no failure event.
		look := time.NewTicker(3 * time.Second)
		defer look.Stop()
		for end := time.Now().Add(time.Minute); time.Now().Before(end); <-look.C {
			got, err := l.c.RenewalLeases(context.Background(), set)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ls) {
				var lapses, history []string
				for _, g := range gs {
					_, l := g.state()
					lapses = append(lapses, l...)
					g.mu.Lock()
					history = append(history, fmt.Sprintf("%s (answering after %v):\n\t%s", g.URL, g.answer, strings.Join(g.history, "\n\t")))
					g.mu.Unlock()
				}
				var logged []string
				for _, line := range strings.Split(l.d.Log(), "\n") {
					if strings.Contains(line, "renew") {
						logged = append(logged, line)
					}
				}
				t.Fatalf("%d of %d leases left in the set at %s: %+v; lapses at the grantors %v; events %v\ngrantors' last calls:\n%s\nthe renewal service's log:\n%s",
					len(got), len(ls), time.Now().Format("15:04:05.000"), got, lapses, l.sink.Events("/slow"), strings.Join(history, "\n"), strings.Join(logged, "\n"))
			}
			for _, g := range gs {
				if _, lapses := g.state(); len(lapses) > 0 {
					t.Fatalf("grantor answering after %v: lapses %v", g.answer, lapses)
				}
			}
			if n := l.sink.Pending("/slow"); n > 0 {
				t.Fatalf("%d failure events: %v", n, l.sink.Events("/slow"))
			}
		}
		for _, g := range gs {
			calls, _ := g.state()
			t.Logf("grantor answering after %v: %d renewal calls in a minute", g.answer, calls)
		}
	})

	t.Run("LR.2 failure events carry what the grantor said", func(t *testing.T) {
		t.Parallel()
		coded := newLabGrantor(t, l.gh, l.gip, 0)
		coded.perLease = &apitypes.Error{Code: apitypes.UnknownLease, Message: "lease gone-1 was cancelled by its owner"}
		busy := newLabGrantor(t, l.gh, l.gip, 0)
		busy.refuse, busy.refuseStatus = `{"error":{"code":"Internal","message":"transient failure #2"}}`, 503
		html := newLabGrantor(t, l.gh, l.gip, 0)
		html.refuse, html.refuseStatus = `<html><body><h1>503</h1>backend pool-7 is down</body></html>`, 503
		ssh := bannerServer(t, l.gh, l.gip)
		l.set("/failures", coded.grant("gone-1"), busy.grant("busy-1"), html.grant("html-1"),
			apitypes.Lease{Grantor: ssh, ID: "ssh-1", Remaining: grantedFor.Milliseconds()})
		want := map[string]struct {
			code    apitypes.Code
			message string // what the message is, or ("!" first) must not contain
		}{
			"gone-1": {apitypes.UnknownLease, "lease gone-1 was cancelled by its owner"},
			"busy-1": {apitypes.Internal, "transient failure #2"},
			"html-1": {apitypes.BadAnswer, "!pool-7"},
			"ssh-1":  {apitypes.BadAnswer, "!SSH"},
		}
		for range want {
			var e apitypes.RenewalFailureEvent
			l.sink.Next(t, "/failures", 15*time.Second, &e)
			w, ok := want[e.Lease.ID]
			if !ok {
				t.Fatalf("an event for %q", e.Lease.ID)
			}
			delete(want, e.Lease.ID)
			switch {
			case e.Error == nil || e.Error.Code != w.code:
				t.Errorf("%s: error %+v, want %s", e.Lease.ID, e.Error, w.code)
			case strings.HasPrefix(w.message, "!") && strings.Contains(e.Error.Message, w.message[1:]):
				t.Errorf("%s: message %q carries the grantor's bytes", e.Lease.ID, e.Error.Message)
			case !strings.HasPrefix(w.message, "!") && e.Error.Message != w.message:
				t.Errorf("%s: message %q, want %q", e.Lease.ID, e.Error.Message, w.message)
			}
		}
	})
}

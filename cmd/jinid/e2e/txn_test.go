package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn/participant"
)

// labParticipant serves a Go participant inside lab host h on ip:9100;
// it counts what its application did.
type labParticipant struct {
	URL string

	mu                sync.Mutex
	prepared, commits int
	failCommits       int // answer 503 to this many commit calls first
}

func newLabParticipant(t *testing.T, h *netlab.Host, ip string, prepareTakes time.Duration) *labParticipant {
	t.Helper()
	p := &labParticipant{}
	inner := &participant.Handler{
		Prepare: func(ctx context.Context, _ string) (apitypes.Vote, error) {
			select {
			case <-time.After(prepareTakes):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			p.mu.Lock()
			p.prepared++
			p.mu.Unlock()
			return apitypes.VotePrepared, nil
		},
		Commit: func(context.Context, string) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.commits++
			return nil
		},
		Abort: func(context.Context, string) error { return errors.New("no abort expected") },
	}
	h2 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var cb apitypes.ParticipantCall
		json.Unmarshal(raw, &cb)
		p.mu.Lock()
		fail := cb.Op == apitypes.OpCommit && p.failCommits > 0
		if fail {
			p.failCommits--
		}
		p.mu.Unlock()
		if fail {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
		inner.ServeHTTP(w, r)
	})
	var ln net.Listener
	if err := h.Namespace().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "9100"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	jinidtest.Serve(t, ln, h2)
	p.URL = "http://" + ln.Addr().String() + "/tx"
	return p
}

func (p *labParticipant) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prepared, p.commits
}

// The transaction manager through the real daemon, with participants on
// three other hosts of the LAN: one takes 30 s to prepare (normal, not a
// failure), one answers 503 to its first commits. The client's commit
// returns COMMITTED once every participant was told; each rolled forward
// once.
func TestTransactionsOnALAN(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 30 s prepare")
	}
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, cl := lab.Host("gw"), lab.Host("client")
	gwl := gw.Attach(lan)
	cl.Attach(lan)
	var ps []*labParticipant
	for i, prepare := range []time.Duration{0, 30 * time.Second, 0} {
		h := lab.Host("p" + string(rune('a'+i)))
		l := h.Attach(lan)
		ps = append(ps, newLabParticipant(t, h, l.IPv4.String(), prepare))
	}
	ps[2].failCommits = 3
	d := jinidtest.LabDaemon(t, bin, gw)
	token := d.AdminToken(t)
	api := "http://" + gwl.IPv4.String() + ":4162"
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DialContext: jinidtest.DialFrom(cl)}}
	defer hc.CloseIdleConnections()
	call := func(path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if out != nil {
			json.Unmarshal(raw, out)
		}
		if resp.StatusCode/100 != 2 {
			t.Logf("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		return resp.StatusCode
	}
	var created struct{ ID, Manager string }
	if code := call("/v1/transactions", `{"leaseDuration":120000}`, &created); code != 200 {
		t.Fatalf("create: %d", code)
	}
	for _, p := range ps {
		if code := call("/v1/transactions/"+created.ID+"/participants", `{"participant":{"url":"`+p.URL+`"},"crashCount":1}`, nil); code != 204 {
			t.Fatalf("join %s: %d", p.URL, code)
		}
	}
	start := time.Now()
	var st struct{ State string }
	if code := call("/v1/transactions/"+created.ID+"/commit", `{"waitFor":100000}`, &st); code != 200 || st.State != "COMMITTED" {
		t.Fatalf("commit: %d %+v (after %s)", code, st, time.Since(start))
	}
	for i, p := range ps {
		if prepared, commits := p.counts(); prepared != 1 || commits != 1 {
			t.Errorf("participant %d: prepared %d, committed %d; want 1 and 1", i, prepared, commits)
		}
	}
	if ps[2].failCommits != 0 {
		t.Errorf("the 503 participant was not retried past its failures")
	}
	// The log explains the retries (rate-limited: three lines at most
	// for its three failures).
	if n := strings.Count(d.Log(), "did not answer commit"); n < 1 || n > 3 || !strings.Contains(d.Log(), ps[2].URL) {
		t.Errorf("%d log lines about the failing participant, want 1 to 3 naming it:\n%s", n, d.Log())
	}
	t.Logf("committed in %s; the manager is %s", time.Since(start), created.Manager)
}

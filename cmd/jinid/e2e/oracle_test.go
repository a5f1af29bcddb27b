package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

// tcpServer answers every connection on loopback with answer, then
// closes it.
func tcpServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	jinidtest.ServeConns(t, ln, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(answer))
		bufio.NewReader(c).ReadString('\n') // let the request arrive
	})
	return ln.Addr().String()
}

// TestRenewalFailuresTellOnlyTheCategory: the lease renewal service is no
// port scanner. Grantors that are a closed port, an SSH server's banner,
// an HTTP server answering garbage and one answering an error page give
// failure events that say only the category (Refused, BadAnswer), with
// the category's one message: none of the remote's bytes, no Go error
// text, and those of one category alike.
func TestRenewalFailuresTellOnlyTheCategory(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	c := jinidtest.Client(t, d.API)
	ctx := t.Context()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	grantors := map[string]string{
		"closed port": "http://" + closed.Addr().String(),
		"ssh banner":  "http://" + tcpServer(t, "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"),
		"garbage":     "http://" + tcpServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\nsecret-garbage"),
		"error page":  "http://" + tcpServer(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 27\r\n\r\nnginx/1.22 secret-internal"),
	}
	sink := jinidtest.NewSink(t, nil, "")
	set, err := c.RenewalCreate(ctx, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewalFailures(ctx, set.ID, sink.URL+"/failures", nil); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(2 * time.Second).UnixMilli()
	byGrantor := map[string]string{}
	for what, g := range grantors {
		byGrantor[g] = what
		if err := c.RenewFor(ctx, set.ID, apitypes.Lease{Grantor: g, ID: "lease", Expiration: end, Remaining: 2000}, 600_000, nil); err != nil {
			t.Fatal(err)
		}
	}
	evs := sink.Wait(t, "/failures", len(grantors))
	errs := map[string]apitypes.Error{}
	for _, ev := range evs {
		// Its numbers (the lease's expiration) may hold "500" by chance:
		// what is searched is the rest.
		lease, _ := ev["lease"].(map[string]any)
		bare := maps.Clone(ev)
		bare["lease"] = map[string]any{"grantor": lease["grantor"], "id": lease["id"]}
		raw, _ := json.Marshal(bare)
		for _, leak := range []string{"SSH", "Debian", "garbage", "nginx", "secret", "connection refused", "dial tcp", "malformed", "invalid character", "500"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("a failure event says %q: %s", leak, raw)
			}
		}
		var e apitypes.Error
		b, _ := json.Marshal(ev["error"])
		json.Unmarshal(b, &e)
		errs[byGrantor[fmt.Sprint(lease["grantor"])]] = e
	}
	t.Logf("failure errors: %+v", errs)
	if errs["closed port"].Code != "Refused" {
		t.Errorf("closed port: %+v, want Refused", errs["closed port"])
	}
	for _, what := range []string{"ssh banner", "garbage", "error page"} {
		if errs[what].Code != "BadAnswer" || !reflect.DeepEqual(errs[what], errs["ssh banner"]) {
			t.Errorf("%s: %+v, want BadAnswer, like the others", what, errs[what])
		}
	}
}

// mailboxState is what GET of a mailbox registration says of its
// delivery.
func mailboxState(t *testing.T, d *jinidtest.Daemon, id string) (target bool, pending int) {
	t.Helper()
	st, err := jinidtest.Client(t, d.API).MailboxGet(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := st["pending"].(float64)
	return st["target"] != nil, int(p)
}

// postEvents posts n events of about size bytes to a mailbox listener, as
// a generator does.
func postEvents(t *testing.T, listener string, n, size int) {
	t.Helper()
	for i := range n {
		body := fmt.Sprintf(`{"source":{"service":"gen","id":"1"},"eventID":1,"seqNum":%d,"type":"Filler","pad":%q}`, i+1, strings.Repeat("x", size))
		resp, err := http.Post(listener, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("posting event %d: HTTP %d", i+1, resp.StatusCode)
		}
	}
}

// TestMailboxLoopsAreBounded: two daemons' mailboxes pushing to each
// other pass each event on at most event.MaxHops times, then one of them
// stops pushing and keeps the events; a target that redirects to its own
// mailbox's listener is one refusal, not a loop. CPU and bytes written
// are logged (docs/performance.md).
func TestMailboxLoopsAreBounded(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	a := jinidtest.StartDaemon(t, bin, t.TempDir())
	b := jinidtest.StartDaemon(t, bin, t.TempDir())
	ctx := t.Context()
	ma, err := jinidtest.Client(t, a.API).MailboxRegister(ctx, 600_000, false)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := jinidtest.Client(t, b.API).MailboxRegister(ctx, 600_000, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := jinidtest.Client(t, a.API).MailboxEnable(ctx, ma.ID, mb.Listener.URL); err != nil {
		t.Fatal(err)
	}
	if err := jinidtest.Client(t, b.API).MailboxEnable(ctx, mb.ID, ma.Listener.URL); err != nil {
		t.Fatal(err)
	}
	pids := []int{a.Cmd.Process.Pid, b.Cmd.Process.Pid}
	var cpu0 time.Duration
	var w0 int64
	for _, pid := range pids {
		cpu0 += procCPU(t, pid)
		w0 += procWritten(t, pid)
	}
	start := time.Now()
	const events = 20
	postEvents(t, ma.Listener.URL, events, 1000)
	testenv.Until(t, "the loop to stop with every event kept", func() bool {
		ta, pa := mailboxState(t, a, ma.ID)
		tb, pb := mailboxState(t, b, mb.ID)
		return !ta && pa == events && pb == 0 || !tb && pb == events && pa == 0
	})
	var cpu1 time.Duration
	var w1 int64
	for _, pid := range pids {
		cpu1 += procCPU(t, pid)
		w1 += procWritten(t, pid)
	}
	t.Logf("%d events of 1 KB between two mailboxes pushing to each other: settled in %v; both daemons used %v of CPU and wrote %d KiB",
		events, time.Since(start).Round(time.Millisecond), cpu1-cpu0, (w1-w0)>>10)
	if w1-w0 > 64<<20 {
		t.Errorf("%d MiB written for %d events", (w1-w0)>>20, events)
	}

	// A target that redirects to the mailbox's own listener.
	var asked atomic.Int64
	m, err := jinidtest.Client(t, a.API).MailboxRegister(ctx, 600_000, false)
	if err != nil {
		t.Fatal(err)
	}
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, m.Listener.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	if err := jinidtest.Client(t, a.API).MailboxEnable(ctx, m.ID, redirect.URL); err != nil {
		t.Fatal(err)
	}
	postEvents(t, m.Listener.URL, 5, 100)
	testenv.Until(t, "delivery disabled at the redirect", func() bool {
		target, pending := mailboxState(t, a, m.ID)
		return !target && pending == 5
	})
	if n := asked.Load(); n != 1 {
		t.Fatalf("the redirecting target was asked %d times, want once", n)
	}
}

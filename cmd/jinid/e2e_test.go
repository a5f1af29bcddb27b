package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/fault"
)

// daemonProc is the real jinid binary running as a daemon.
type daemonProc struct {
	cmd  *exec.Cmd
	api  string
	logs *strings.Builder
	mu   *sync.Mutex
	// exited is closed once the process has exited and been waited for
	// (by the goroutine reading its log, after the last line); err is
	// then how it ended.
	exited chan struct{}
	err    error
}

// startDaemon runs jinid daemon on a loopback port with its store in dir
// and waits until it serves. A daemon the test leaves running is killed
// when it ends.
func startDaemon(t testing.TB, bin, dir string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"daemon", "--api-listen", "127.0.0.1:0", "--data-dir", dir, "--no-multicast", "--discovery-port", "0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, logs: &strings.Builder{}, mu: &sync.Mutex{}, exited: make(chan struct{})}
	t.Cleanup(d.kill)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`api=(http://\S+)`)
		for sc.Scan() {
			d.mu.Lock()
			d.logs.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		// Wait only once the log is read to its end: Wait closes the pipe.
		d.err = cmd.Wait()
		close(d.exited)
	}()
	select {
	case api := <-found:
		d.api = api
	case <-d.exited:
		t.Fatalf("daemon exited before serving (%v):\n%s", d.err, d.log())
	case <-time.After(20 * time.Second):
		d.kill()
		t.Fatalf("daemon did not start:\n%s", d.log())
	}
	return d
}

func (d *daemonProc) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

// kill stops the daemon with SIGKILL (if it still runs) and waits for it.
func (d *daemonProc) kill() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Kill()
	<-d.exited
}

// stop asks the daemon to stop (SIGINT) and waits for it to exit cleanly.
func (d *daemonProc) stop(t testing.TB) {
	t.Helper()
	d.cmd.Process.Signal(interruptSignal)
	select {
	case <-d.exited:
		if d.err != nil {
			t.Errorf("daemon exit: %v\n%s", d.err, d.log())
		}
	case <-time.After(15 * time.Second):
		d.kill()
		t.Errorf("daemon did not stop within 15 s:\n%s", d.log())
	}
}

// listener is a real HTTP listener collecting ServiceEvents.
type listener struct {
	srv *httptest.Server
	mu  sync.Mutex
	evs []map[string]any
	got chan struct{}
}

func newListener(t *testing.T) *listener {
	l := &listener{got: make(chan struct{}, 1)}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("listener got %q: %v", body, err)
		}
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.mu.Unlock()
		select {
		case l.got <- struct{}{}:
		default: // a waiter re-checks the count anyway
		}
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *listener) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		l.mu.Lock()
		if len(l.evs) >= n {
			out := append([]map[string]any(nil), l.evs...)
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
		select {
		case <-l.got:
		case <-deadline:
			t.Fatalf("listener got %d events, want %d", len(l.evs), n)
		}
	}
}

func TestEndToEndLookup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	d := startDaemon(t, bin, t.TempDir())
	defer d.stop(t)
	c, err := client.New(d.api, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := newListener(t)
	name := func(n string) apitypes.Attribute {
		return apitypes.Attribute{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": n}}
	}
	n, err := c.Notify(ctx, client.NotifyRequest{
		Template:    apitypes.Template{Types: []string{"com.example.Printer"}, Attributes: []apitypes.Attribute{name("lobby")}},
		Transitions: []string{apitypes.MatchNoMatch, apitypes.NoMatchMatch, apitypes.MatchMatch},
		Listener:    l.srv.URL + "/events", Handback: []byte("hb"), Duration: 60_000,
	})
	if err != nil {
		t.Fatal(err)
	}

	reg, err := c.Register(ctx, apitypes.Item{Types: []string{"com.example.Printer"}, Attributes: []apitypes.Attribute{name("lobby")}}, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Lease.Remaining <= 0 || reg.Lease.Remaining > 1500 || reg.Lease.Grantor != d.api {
		t.Fatalf("lease %+v", reg.Lease)
	}
	items, total, err := c.Query(ctx, apitypes.Template{Attributes: []apitypes.Attribute{name("lobby")}}, 10)
	if err != nil || total != 1 || items[0].ServiceID != reg.ServiceID {
		t.Fatalf("query: %+v %d %v", items, total, err)
	}
	if err := c.ChangeAttributes(ctx, reg.ServiceID, apitypes.AttributeChange{Add: []apitypes.Attribute{{Type: "com.example.Color", Fields: map[string]any{"color": "red"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, granted, err := c.Renew(ctx, reg.Lease.ID, 1500); err != nil || granted <= 0 {
		t.Fatalf("renew: %d %v", granted, err)
	}
	// Let the lease lapse: MATCH_NOMATCH.
	evs := l.wait(t, 3)
	want := []string{apitypes.NoMatchMatch, apitypes.MatchMatch, apitypes.MatchNoMatch}
	for i, ev := range evs {
		if ev["transition"] != want[i] || int64(ev["seqNum"].(float64)) != int64(i+1) || int64(ev["eventID"].(float64)) != n.EventID ||
			ev["handback"] != "aGI=" || ev["serviceID"] != reg.ServiceID || ev["type"] != "ServiceEvent" {
			t.Errorf("event %d: %v; want %s with seqNum %d", i, ev, want[i], i+1)
		}
	}
	if _, total, _ := c.Query(ctx, apitypes.Template{}, 10); total != 0 {
		t.Errorf("%d items after the lease lapsed", total)
	}
	if _, _, err := c.Renew(ctx, reg.Lease.ID, 1000); !fault.Is(err, fault.UnknownLease) {
		t.Errorf("renewing a lapsed lease: %v", err)
	}
	if err := c.Cancel(ctx, n.Lease.ID); err != nil {
		t.Errorf("cancelling the notify registration: %v", err)
	}
	_ = context.Background
}

// The client commands against a running daemon.
func TestClientCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	d := startDaemon(t, bin, t.TempDir())
	defer d.stop(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--server", d.api)...).CombinedOutput()
		if err != nil {
			t.Fatalf("jinid %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("lookup", "register", "--type", "com.example.Printer", "--attr", "net.jini.lookup.entry.Name:name=lobby,floor=2", "--duration", "10m")
	m := regexp.MustCompile(`serviceID (\S+)\nlease\s+(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("register printed %q", out)
	}
	sid, leaseID := m[1], m[2]
	if q := run("lookup", "query", "--attr", "net.jini.lookup.entry.Name:floor=2"); !strings.Contains(q, sid) {
		t.Fatalf("query printed %q", q)
	}
	if q := run("lookup", "query", "--attr", "net.jini.lookup.entry.Name:floor=3"); strings.Contains(q, sid) {
		t.Fatalf("query for another floor printed %q", q)
	}
	if l := run("lookup", "list", "--json"); !strings.Contains(l, `"totalMatches": 1`) {
		t.Fatalf("list printed %q", l)
	}
	if r := run("lease", "renew", leaseID, "--duration", "1h"); !strings.Contains(r, "renewed") {
		t.Fatalf("renew printed %q", r)
	}
	if r := run("lease", "cancel", leaseID); !strings.Contains(r, "cancelled") {
		t.Fatalf("cancel printed %q", r)
	}
	out2, err := exec.Command(bin, "lease", "cancel", leaseID, "--server", d.api).CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "UnknownLease") {
		t.Fatalf("cancelling again: %v %s", err, out2)
	}
	out3, err := exec.Command(bin, "lookup", "register", "--duration", "0s", "--server", d.api).CombinedOutput()
	if err == nil || !strings.Contains(string(out3), "want a positive duration") {
		t.Fatalf("bad duration: %v %s", err, out3)
	}
}

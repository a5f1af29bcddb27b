package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/api/client"
)

// watchLine is one line of `jinid discover --watch --json`: the fields
// these tests read, as a consumer of the output would parse them.
type watchLine struct {
	Event     string   `json:"event"`
	Reason    string   `json:"reason"`
	ServiceID string   `json:"serviceID"`
	StandIn   bool     `json:"serviceIDStandIn"`
	Host      string   `json:"host"`
	Port      int      `json:"port"`
	Groups    []string `json:"groups"`
	Interface string   `json:"interface"`
	ByGroup   bool     `json:"byGroup"`
	ByLocator bool     `json:"byLocator"`
	Locator   string   `json:"locator"`
	Kind      string   `json:"kind"`
}

// watched is one line with when it was read.
type watched struct {
	watchLine
	read time.Time
}

type watcherProc struct {
	lines chan watched
}

// startWatch runs `jinid discover --watch --json` in lab host h.
func startWatch(t *testing.T, bin string, h *netlab.Host, args ...string) *watcherProc {
	t.Helper()
	cmd := h.Command(context.Background(), bin, append([]string{"discover", "--watch", "--json"}, args...)...)
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watcherProc{lines: make(chan watched, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e watched
			if err := json.Unmarshal(sc.Bytes(), &e.watchLine); err != nil {
				t.Errorf("watch printed %q: %v", sc.Text(), err)
				continue
			}
			e.read = time.Now()
			w.lines <- e
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("watch did not end cleanly on SIGINT: %v\n%s", err, stderr.String())
		}
	})
	return w
}

// next waits for the next event, which must be of the given kind.
func (w *watcherProc) next(t *testing.T, kind string, within time.Duration) watched {
	t.Helper()
	select {
	case e := <-w.lines:
		if e.Event != kind {
			t.Fatalf("event %s (%+v), want %s", e.Event, e.watchLine, kind)
		}
		return e
	case <-time.After(within):
		t.Fatalf("no %s event within %s", kind, within)
	}
	return watched{}
}

func (w *watcherProc) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case e := <-w.lines:
		t.Fatalf("unexpected event %s (%+v)", e.Event, e.watchLine)
	case <-time.After(d):
	}
}

// TestWatchDiscardAndRediscovery: a jinid lookup service that dies is
// discarded within the window (3 announcement intervals after its last
// announcement), found again when it restarts, and its group changes
// through the API are seen as changed or discarded.
func TestWatchDiscardAndRediscovery(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, watcher := lab.Host("lus"), lab.Host("watcher")
	ll := lus.Attach(lan)
	watcher.Attach(lan)
	dir := t.TempDir()
	const interval = time.Second
	daemonArgs := []string{"--data-dir", dir, "--groups", "lab", "--announce-interval", interval.String()}
	d := jinidtest.LabDaemon(t, bin, lus, daemonArgs...)
	w := startWatch(t, bin, watcher, "--groups", "lab", "--announce-interval", interval.String())

	first := w.next(t, "discovered", 10*time.Second)
	if first.Kind != "jinid" || !first.ByGroup || first.ByLocator || !slices.Contains(first.Groups, "lab") || first.Interface == "" {
		t.Fatalf("discovered %+v", first.watchLine)
	}
	id := first.ServiceID
	w.none(t, 3*interval+time.Second) // announcing: kept

	// Killed, so no last announcement: silent, then unreachable.
	d.Process.Kill()
	d.Wait()
	killed := time.Now()
	e := w.next(t, "discarded", 10*time.Second)
	after := e.read.Sub(killed)
	t.Logf("discarded %v after the kill (window %v)", after, 3*interval)
	// Its last announcement came at most one interval before the kill.
	if e.ServiceID != id || e.Reason != "communication" || after < 2*interval || after > 3*interval+time.Second {
		t.Fatalf("discarded %s (reason %s) %v after the kill; want %s, communication, within 2s-4s", e.ServiceID, e.Reason, after, id)
	}

	// Restarted with its store: the same ServiceID, found again.
	jinidtest.LabDaemon(t, bin, lus, daemonArgs...)
	if e := w.next(t, "discovered", 10*time.Second); e.ServiceID != id {
		t.Fatalf("rediscovered %s, want %s", e.ServiceID, id)
	}

	// Its groups changed through the API (an administrator's): still of
	// interest, then not.
	c := jinidtest.LabClient(t, watcher, "http://"+ll.IPv4.String()+":4162", client.WithToken(jinidtest.AdminToken(t, dir)))
	if err := c.SetGroups(t.Context(), []string{"lab", "extra"}); err != nil {
		t.Fatal(err)
	}
	if e := w.next(t, "changed", 5*time.Second); e.ServiceID != id || !slices.Equal(sorted(e.Groups), []string{"extra", "lab"}) {
		t.Fatalf("changed %+v", e.watchLine)
	}
	if err := c.SetGroups(t.Context(), []string{"elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if e := w.next(t, "discarded", 5*time.Second); e.ServiceID != id || e.Reason != "no-interest" || !slices.Equal(e.Groups, []string{"elsewhere"}) {
		t.Fatalf("discarded %+v, want no-interest with the new groups", e.watchLine)
	}
}

// TestWatchLocatorNotDiscardedForSilence: a lookup service found by
// group and by locator that dies is kept, since what a locator wants is
// never passively discarded (LD.3.1); one found by group alone is
// discarded.
func TestWatchLocatorNotDiscardedForSilence(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	h1, h2, watcher := lab.Host("lus1"), lab.Host("lus2"), lab.Host("watcher")
	l1 := h1.Attach(lan)
	h2.Attach(lan)
	watcher.Attach(lan)
	d1 := jinidtest.LabDaemon(t, bin, h1, "--groups", "lab", "--announce-interval", "1s")
	d2 := jinidtest.LabDaemon(t, bin, h2, "--groups", "lab", "--announce-interval", "1s")
	w := startWatch(t, bin, watcher, "--groups", "lab", "--announce-interval", "1s", "--locator", "jini://"+l1.IPv4.String())
	info, err := jinidtest.LabClient(t, watcher, "http://"+l1.IPv4.String()+":4162").Lookup(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for range 2 {
		found[w.next(t, "discovered", 10*time.Second).ServiceID] = true
	}
	if !found[info.ServiceID] {
		t.Fatalf("lus1 (%s) not among the discovered: %v", info.ServiceID, found)
	}
	// Two announcement intervals: group discovery has heard lus1 by
	// then (locator discovery tried at once). The watcher shows no event
	// for the second engine finding it, so there is nothing to wait on.
	time.Sleep(2 * time.Second)
	for _, d := range []interface{ Kill() error }{d1.Process, d2.Process} {
		d.Kill()
	}
	d1.Wait()
	d2.Wait()
	e := w.next(t, "discarded", 10*time.Second)
	if e.ServiceID == info.ServiceID || e.Reason != "communication" {
		t.Fatalf("discarded %+v; want lus2 (by group only), not lus1 (wanted by locator)", e.watchLine)
	}
	w.none(t, 3*time.Second)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestWatchLocatorOnly runs the binary against a daemon on loopback, by
// locator alone (no multicast), until --timeout.
func TestWatchLocatorOnly(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	m := regexp.MustCompile(`unicast=\S*:(\d+)`).FindStringSubmatch(d.Log())
	if m == nil {
		t.Fatalf("no unicast port in the daemon's log:\n%s", d.Log())
	}
	start := time.Now()
	out, err := exec.Command(bin, "discover", "--watch", "--no-multicast", "--locator", "jini://127.0.0.1:"+m[1], "--timeout", "2s").Output()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("--timeout 2s took %v", took)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "  discovered  ") || !strings.Contains(lines[0], "127.0.0.1:"+m[1]) ||
		!strings.Contains(lines[0], "by=locator") || !strings.Contains(lines[0], "jinid "+d.API) {
		t.Fatalf("watch printed:\n%s", out)
	}
}

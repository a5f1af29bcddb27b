package main

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

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/manager"
	"github.com/jinid/jinid/internal/netlab"
)

// watched is one line of `jinid discover --watch --json`, with when it
// was read.
type watched struct {
	watchEvent
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
			if err := json.Unmarshal(sc.Bytes(), &e.watchEvent); err != nil {
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
		if e.Event.String() != kind {
			t.Fatalf("event %s (%+v), want %s", e.Event, e.watchEvent, kind)
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
		t.Fatalf("unexpected event %s (%+v)", e.Event, e.watchEvent)
	case <-time.After(d):
	}
}

// TestWatchDiscardAndRediscovery: a jinid lookup service that dies is
// discarded within the window (3 announcement intervals after its last
// announcement), found again when it restarts, and its group changes
// through the API are seen as changed or discarded.
func TestWatchDiscardAndRediscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	lab := netlab.New(t)
	bin := buildBinary(t)
	lan := lab.LAN()
	lus, watcher := lab.Host("lus"), lab.Host("watcher")
	ll := lus.Attach(lan)
	watcher.Attach(lan)
	dir := t.TempDir()
	const interval = time.Second
	daemonArgs := []string{"--data-dir", dir, "--groups", "lab", "--announce-interval", interval.String()}
	d := labDaemon(t, bin, lus, daemonArgs...)
	w := startWatch(t, bin, watcher, "--groups", "lab", "--announce-interval", interval.String())

	first := w.next(t, "discovered", 10*time.Second)
	if first.Kind != "jinid" || !first.ByGroup || first.ByLocator || !slices.Contains(first.Groups, "lab") || first.Interface == "" {
		t.Fatalf("discovered %+v", first.watchEvent)
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
	labDaemon(t, bin, lus, daemonArgs...)
	if e := w.next(t, "discovered", 10*time.Second); e.ServiceID != id {
		t.Fatalf("rediscovered %s, want %s", e.ServiceID, id)
	}

	// Its groups changed through the API: still of interest, then not.
	c := labClient(t, watcher, "http://"+ll.IPv4.String()+":4162")
	if err := c.SetGroups(t.Context(), []string{"lab", "extra"}); err != nil {
		t.Fatal(err)
	}
	if e := w.next(t, "changed", 5*time.Second); e.ServiceID != id || !slices.Equal(sorted(e.Groups), []string{"extra", "lab"}) {
		t.Fatalf("changed %+v", e.watchEvent)
	}
	if err := c.SetGroups(t.Context(), []string{"elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if e := w.next(t, "discarded", 5*time.Second); e.ServiceID != id || e.Reason != "no-interest" || !slices.Equal(e.Groups, []string{"elsewhere"}) {
		t.Fatalf("discarded %+v, want no-interest with the new groups", e.watchEvent)
	}
}

// TestWatchLocatorNotDiscardedForSilence: a lookup service found by
// group and by locator that dies is kept, since what a locator wants is
// never passively discarded (LD.3.1); one found by group alone is
// discarded.
func TestWatchLocatorNotDiscardedForSilence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	lab := netlab.New(t)
	bin := buildBinary(t)
	lan := lab.LAN()
	h1, h2, watcher := lab.Host("lus1"), lab.Host("lus2"), lab.Host("watcher")
	l1 := h1.Attach(lan)
	h2.Attach(lan)
	watcher.Attach(lan)
	d1 := labDaemon(t, bin, h1, "--groups", "lab", "--announce-interval", "1s")
	d2 := labDaemon(t, bin, h2, "--groups", "lab", "--announce-interval", "1s")
	w := startWatch(t, bin, watcher, "--groups", "lab", "--announce-interval", "1s", "--locator", "jini://"+l1.IPv4.String())
	info, err := labClient(t, watcher, "http://"+l1.IPv4.String()+":4162").Lookup(t.Context())
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
	time.Sleep(2 * time.Second) // both engines have lus1 by now
	for _, d := range []interface{ Kill() error }{d1.Process, d2.Process} {
		d.Kill()
	}
	d1.Wait()
	d2.Wait()
	e := w.next(t, "discarded", 10*time.Second)
	if e.ServiceID == info.ServiceID || e.Reason != "communication" {
		t.Fatalf("discarded %+v; want lus2 (by group only), not lus1 (wanted by locator)", e.watchEvent)
	}
	w.none(t, 3*time.Second)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestWatchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"discover", "--announce-interval", "5s", "--no-multicast", "--locator", "jini://127.0.0.1:1"}, "--announce-interval applies to --watch only"},
		{[]string{"discover", "--watch", "--announce-interval", "0s"}, "--announce-interval 0s: must be positive"},
		{[]string{"discover", "--watch", "--dns-sd"}, "--dns-sd cannot be combined with --watch"},
		{[]string{"discover", "--watch", "--no-multicast"}, "--no-multicast leaves nothing to do without --locator"},
		{[]string{"discover", "--watch", "--timeout", "-1s", "--no-multicast", "--locator", "jini://127.0.0.1:1"}, "--timeout -1s: must be positive"},
	} {
		_, _, err := run(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestWatchPrinter checks the text line of each kind of event.
func TestWatchPrinter(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)
	loc := discovery.Locator{Host: "10.0.0.2", Port: 4160}
	jinid := discovery.LookupService{ID: discovery.ServiceID{1}, Host: "10.0.0.1", Port: 4160, Groups: []string{"", "lab"}, Interface: "eth0",
		Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{APIURL: "http://10.0.0.1:4162"}}}
	java := discovery.LookupService{ID: discovery.ServiceID{2}, Host: "10.0.0.2", Port: 4160, Groups: []string{},
		Registrar: discovery.Registrar{Marshalled: make([]byte, 377)}}
	var b strings.Builder
	p := &eventPrinter{w: &b}
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discovered, At: at, LookupService: jinid}, ByGroup: true})
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Changed, At: at, LookupService: java, Locator: &loc}, ByLocator: true})
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Discarded, At: at, LookupService: jinid, Reason: discovery.ReasonCommunication}})
	p.print(manager.Event{Event: discovery.Event{Kind: discovery.Identified, At: at, LookupService: java, StandIn: discovery.ServiceID{0xa5}}, ByGroup: true})
	want := `2026-11-21T10:00:00.123Z  discovered  01000000-0000-0000-0000-000000000000  10.0.0.1:4160  groups=(public),lab  interface=eth0  by=group  jinid http://10.0.0.1:4162
2026-11-21T10:00:00.123Z  changed     02000000-0000-0000-0000-000000000000  10.0.0.2:4160  groups=(none)  by=locator  java (proxy 377 bytes)
2026-11-21T10:00:00.123Z  discarded   01000000-0000-0000-0000-000000000000  10.0.0.1:4160  groups=(public),lab  interface=eth0  reason=communication  jinid http://10.0.0.1:4162
2026-11-21T10:00:00.123Z  identified  02000000-0000-0000-0000-000000000000  10.0.0.2:4160  groups=(none)  by=group  stand-in=a5000000-0000-0000-0000-000000000000  java (proxy 377 bytes)
`
	if b.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", b.String(), want)
	}
}

// TestWatchLocatorOnly runs the binary against a daemon on loopback, by
// locator alone (no multicast), until --timeout.
func TestWatchLocatorOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	d := startDaemon(t, bin, t.TempDir())
	m := regexp.MustCompile(`unicast=\S*:(\d+)`).FindStringSubmatch(d.log())
	if m == nil {
		t.Fatalf("no unicast port in the daemon's log:\n%s", d.log())
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
		!strings.Contains(lines[0], "by=locator") || !strings.Contains(lines[0], "jinid "+d.api) {
		t.Fatalf("watch printed:\n%s", out)
	}
}

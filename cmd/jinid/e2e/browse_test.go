package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/internal/rig/testenv"
)

var updateBrowse = flag.Bool("update-browse", false, "rewrite testdata/browse.json")

// browseLab is a LAN of two jinids and a real Reggie, all in the group
// "lab", with services registered in them by a Java JoinManager service
// (in all three), over HTTP (in one jinid) and as a static service (in
// the other), and a host to browse from.
type browseLab struct {
	bin              string
	a, b             *jinidtest.LabProc
	client           *netlab.Host
	reggie           *riverpeer.Reggie
	ids              map[string]string // ServiceID: its role, for the golden file
	join             *riverpeer.Program
	joinID, printer  string
	aHost, bHost     *netlab.Host
	aLink, bLink, rl *netlab.Link
}

func newBrowseLab(t *testing.T) *browseLab {
	bin := jinidtest.Binary(t)
	riverpeer.Java(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	bl := &browseLab{bin: bin, ids: map[string]string{}}
	bl.aHost, bl.bHost = lab.Host("a"), lab.Host("b")
	rh, jh := lab.Host("reggie"), lab.Host("java")
	bl.client = lab.Host("client")
	bl.aLink, bl.bLink, bl.rl = bl.aHost.Attach(lan), bl.bHost.Attach(lan), rh.Attach(lan)
	jl := jh.Attach(lan)
	bl.client.Attach(lan)
	prefix := "198.18.0.0/16"

	services := t.TempDir()
	os.WriteFile(filepath.Join(services, "sensor.json"), []byte(`{"types":["org.example.Sensor"],
		"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"sensor-a"}}],"endpoint":"coap://198.18.1.20/temp"}`), 0o644)
	common := []string{"--groups", "lab", "--public-group=false", "--java-register-from", prefix, "--no-dns-sd", "--announce-interval", "1s"}
	bl.a = jinidtest.LabDaemon(t, bin, bl.aHost, append(common, "--services-dir", services)...)
	bl.b = jinidtest.LabDaemon(t, bin, bl.bHost, common...)
	bl.reggie = riverpeer.StartReggie(t, rh, bl.rl.IPv4, "multicastAnnouncementInterval=1000L")
	bl.ids[bl.reggie.ServiceID] = "reggie"
	bl.ids[bl.lookupID(t, bl.a)] = "jinid-a"
	bl.ids[bl.lookupID(t, bl.b)] = "jinid-b"

	out := bl.cli(t, bl.bHost, "lookup", "register", "--server", "unix://"+bl.b.Socket, "--type", "org.example.Printer",
		"--attr", "net.jini.lookup.entry.Name:name=printer-b", "--endpoint", "ipp://198.18.1.9/", "--duration", "10m", "-o", "json")
	var reg struct{ ServiceID string }
	json.Unmarshal([]byte(out), &reg)
	bl.printer = reg.ServiceID
	bl.ids[reg.ServiceID] = "printer-b"

	bl.join = riverpeer.Start(t, jh, nil, "JoinService", "--groups", "lab", "--name", "join-1", "--secs", "600",
		"--request-host", jl.IPv4.String())
	bl.joinID = strings.Fields(bl.join.WaitLine(t, regexp.MustCompile(`serviceID `), 30*time.Second))[2]
	bl.ids[bl.joinID] = "join-1"
	for _, id := range []string{bl.reggie.ServiceID} {
		bl.join.WaitLine(t, regexp.MustCompile(`joined `+id), 30*time.Second)
	}
	return bl
}

// lookupID is a daemon's own ServiceID.
func (bl *browseLab) lookupID(t *testing.T, p *jinidtest.LabProc) string {
	m := regexp.MustCompile(`jinid started.* lookup=(\S+)`).FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no ServiceID in the daemon's log:\n%s", p.Log())
	}
	return m[1]
}

// cli runs jinid in h (in this process's namespace when nil).
func (bl *browseLab) cli(t *testing.T, h *netlab.Host, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bl.bin, args...)
	if h != nil {
		cmd = h.Command(ctx, bl.bin, args...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jinid %v: %v\n%s%s", args, err, out, stderr.String())
	}
	return string(out)
}

type browsedService struct {
	ServiceID      string   `json:"serviceID"`
	Types          []string `json:"types"`
	Name           string   `json:"name"`
	Endpoint       string   `json:"endpoint"`
	LookupServices []struct {
		ServiceID, Address, Kind string
	} `json:"lookupServices"`
}

func (s browsedService) heldBy() []string {
	var out []string
	for _, l := range s.LookupServices {
		out = append(out, l.ServiceID)
	}
	slices.Sort(out)
	return out
}

// browse in the lab: every service once, with the lookup services that
// hold it, whichever way it was registered; -o json as the golden file
// has it (ServiceIDs, which change every run, by role).
func TestBrowse(t *testing.T) {
	t.Parallel()
	bl := newBrowseLab(t)
	all := []string{bl.reggie.ServiceID, bl.lookupID(t, bl.a), bl.lookupID(t, bl.b)}
	slices.Sort(all)
	var got struct {
		Services       []browsedService `json:"services"`
		LookupServices []map[string]any `json:"lookupServices"`
	}
	var raw string
	// The Java service joins the jinids as it discovers them: wait for
	// it to be everywhere.
	testenv.Until(t, "the JoinManager service in all three lookup services", func() bool {
		raw = bl.cli(t, bl.client, "browse", "--groups", "lab", "-o", "json")
		got.Services = nil
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("browse -o json: %v\n%s", err, raw)
		}
		i := slices.IndexFunc(got.Services, func(s browsedService) bool { return s.ServiceID == bl.joinID })
		return i >= 0 && slices.Equal(got.Services[i].heldBy(), all)
	})
	seen := map[string]int{}
	for _, s := range got.Services {
		seen[s.ServiceID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	want := map[string][]string{bl.joinID: all, bl.printer: {bl.lookupID(t, bl.b)}}
	for _, s := range got.Services {
		if w, ok := want[s.ServiceID]; ok && !slices.Equal(s.heldBy(), w) {
			t.Errorf("%s (%s) held by %v, want %v", s.Name, s.ServiceID, s.heldBy(), w)
		}
		if s.ServiceID == bl.joinID && (s.Name != "join-1" || !slices.Contains(s.Types, "com.example.Hello")) {
			t.Errorf("the Java service: %+v", s)
		}
		if s.ServiceID == bl.printer && (s.Name != "printer-b" || s.Endpoint != "ipp://198.18.1.9/") {
			t.Errorf("the HTTP service: %+v", s)
		}
	}
	if !slices.ContainsFunc(got.Services, func(s browsedService) bool { return s.Name == "sensor-a" }) {
		t.Errorf("no static service:\n%s", raw)
	}

	// The golden file: each service and each lookup service as browse
	// prints it, ServiceIDs (new every run) by role, sorted (browse
	// sorts by ServiceID).
	for _, s := range got.Services {
		if s.Name == "sensor-a" {
			bl.ids[s.ServiceID] = "sensor-a" // made of jinid-a's ServiceID
		}
	}
	var parts struct{ Services, LookupServices []json.RawMessage }
	json.Unmarshal([]byte(raw), &parts)
	var lines []string
	for _, m := range append(parts.Services, parts.LookupServices...) {
		lines = append(lines, bl.byRole(string(m)))
	}
	slices.Sort(lines)
	text := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "browse.json")
	if *updateBrowse {
		os.WriteFile(golden, []byte(text), 0o644)
	}
	wantRaw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(wantRaw) {
		t.Errorf("browse -o json differs from %s (run with -update-browse to accept):\n%s", golden, text)
	}

	// Table: one line per service. (A round that missed a lookup service
	// on a loaded machine, its answer past --settle, is run again.)
	var table string
	testenv.Until(t, fmt.Sprintf("a table of %d services", len(got.Services)), func() bool {
		start := time.Now()
		table = bl.cli(t, bl.client, "browse", "--groups", "lab")
		t.Logf("one browse of %d lookup services, %d services: %s (discovery's settle time included)", len(all), len(got.Services), time.Since(start))
		return strings.Count(table, "\n") == len(got.Services)+1
	})
	if !strings.Contains(table, "printer-b") || !strings.Contains(table, "join-1") {
		t.Errorf("table:\n%s", table)
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// byRole replaces each ServiceID by its role (<other> for one of none,
// which the golden file then shows).
func (bl *browseLab) byRole(s string) string {
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if r, ok := bl.ids[id]; ok {
			return "<" + r + ">"
		}
		return "<other>"
	})
}

// browse --watch sees a service registered and cancelled on another host
// within a read interval of the event; -t stamps each line with when it
// was seen.
func TestBrowseWatch(t *testing.T) {
	t.Parallel()
	bl := newBrowseLab(t)
	w := startBrowseWatch(t, bl.client, bl.bin)
	w.waitFor(t, "the HTTP service there before", "+", bl.printer)

	out := bl.cli(t, bl.aHost, "lookup", "register", "--server", "unix://"+bl.a.Socket, "--type", "org.example.Scanner",
		"--duration", "10m", "-o", "json")
	registered := time.Now()
	var reg struct{ ServiceID, Lease string }
	json.Unmarshal([]byte(out), &reg)
	seen := w.waitFor(t, "a registration", "+", reg.ServiceID)
	t.Logf("registered → + line: %s", seen.Sub(registered))
	bl.cli(t, bl.aHost, "lease", "cancel", "--server", "unix://"+bl.a.Socket, reg.Lease)
	cancelled := time.Now()
	gone := w.waitFor(t, "a cancellation", "-", reg.ServiceID)
	t.Logf("cancelled → - line: %s", gone.Sub(cancelled))
	// The read interval (0.5 s) and one read bound both; a loaded
	// machine may take longer, so this only logs them (the figures are in
	// docs/performance.md).
	w.interrupt(t)
}

// A jinid started again on another host (its data directory moved: the
// same lookup service, a new API URL) is followed by a running watch: it
// kept reading the old URL, and showed nothing of the lookup service
// again (a cluster whose holder changed looked the same).
func TestBrowseWatchFollowsMove(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	a, b, client := lab.Host("a"), lab.Host("b"), lab.Host("client")
	for _, h := range []*netlab.Host{a, b, client} {
		h.Attach(lan)
	}
	data := t.TempDir()
	common := []string{"--data-dir", data, "--groups", "lab", "--public-group=false", "--no-dns-sd", "--announce-interval", "1s"}
	first := jinidtest.LabDaemon(t, bin, a, common...)
	register := func(h *netlab.Host, p *jinidtest.LabProc, typ string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := h.Command(ctx, bin, "lookup", "register", "--server", "unix://"+p.Socket, "--type", typ,
			"--duration", "10m", "-o", "json").Output()
		if err != nil {
			t.Fatalf("registering %s: %v", typ, err)
		}
		var reg struct{ ServiceID string }
		json.Unmarshal(out, &reg)
		return reg.ServiceID
	}
	before := register(a, first, "org.example.Before")
	w := startBrowseWatch(t, client, bin)
	w.waitFor(t, "the service registered before", "+", before)

	first.Kill()
	moved := jinidtest.LabDaemon(t, bin, b, common...)
	after := register(b, moved, "org.example.After")
	w.waitFor(t, "a service registered after the move", "+", after)
	w.interrupt(t)
}

// browseWatch is a running "jinid browse --watch -t -o json", its lines
// read as they come.
type browseWatch struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	lines  chan browseLine
}

type browseLine struct {
	v  map[string]any
	at time.Time
}

func startBrowseWatch(t *testing.T, h *netlab.Host, bin string) *browseWatch {
	t.Helper()
	w := &browseWatch{stderr: &strings.Builder{}, lines: make(chan browseLine, 64)}
	w.cmd = h.Command(context.Background(), bin, "browse", "--watch", "-t", "--groups", "lab", "-o", "json")
	stdout, _ := w.cmd.StdoutPipe()
	w.cmd.Stderr = w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var v map[string]any
			json.Unmarshal(sc.Bytes(), &v)
			w.lines <- browseLine{v, time.Now()}
		}
		close(w.lines)
	}()
	return w
}

// waitFor waits for a line of the change (+, -, =) for a ServiceID, and
// checks that every line has its time.
func (w *browseWatch) waitFor(t *testing.T, what, change, sid string) time.Time {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("the watch ended before %s:\n%s", what, w.stderr.String())
			}
			if ts, _ := l.v["time"].(string); ts == "" {
				t.Fatalf("a line without its time: %v", l.v)
			} else if _, err := time.Parse(time.RFC3339, ts); err != nil {
				t.Fatalf("a line's time %q: %v", ts, err)
			}
			if l.v["change"] == change && l.v["serviceID"] == sid {
				return l.at
			}
		case <-deadline:
			t.Fatalf("no %s line for %s:\n%s", change, what, w.stderr.String())
		}
	}
}

// interrupt ends the watch as Ctrl-C does: cleanly.
func (w *browseWatch) interrupt(t *testing.T) {
	t.Helper()
	w.cmd.Process.Signal(syscall.SIGINT)
	for range w.lines {
	}
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("the watch, interrupted: %v\n%s", err, w.stderr.String())
	}
}

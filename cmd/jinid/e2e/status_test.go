package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// idOf is the lookup service ID a daemon's start line gives.
func idOf(t *testing.T, log string) string {
	t.Helper()
	m := regexp.MustCompile(`lookup=([0-9a-f-]{36})`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no lookup ID in the start line:\n%s", log)
	}
	return m[1]
}

// The metrics a daemon with multicast on exposes keep their names, types
// and help text (testdata/metrics.golden; -update rewrites it): a
// dashboard or an alert built on one does not break silently.
func TestMetricNames(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("gw")
	l := h.Attach(lan)
	// With access control on, the metrics and the status page need a
	// token of the read scope at least.
	// Java clients of the LAN may register: the helper services'
	// families are there too.
	d := jinidtest.LabDaemon(t, bin, h, "--anonymous", "none", "--java-register-from", "198.18.0.0/16")
	base := "http://" + l.IPv4.String() + ":4162"
	for _, path := range []string{"/metrics", "/"} {
		if a := raw(t, h, "GET", base+path, "", "", "", ""); a.status != 401 {
			t.Errorf("GET %s without a token: %+v, want 401", path, a)
		}
	}
	a := raw(t, h, "GET", base+"/metrics", d.AdminToken(t), "", "", "")
	status, body := a.status, a.body
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	var meta []string
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "# HELP jinid_") || strings.HasPrefix(line, "# TYPE jinid_") {
			meta = append(meta, line)
		}
	}
	got := strings.Join(meta, "")
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("metric names, types or help changed (rerun with -update if meant, and say so in docs/operations.md):\n got:\n%s\nwant:\n%s", got, want)
	}
	// Every sample belongs to a family so described.
	families := map[string]bool{}
	for _, m := range meta {
		families[strings.Fields(m)[2]] = true
	}
	for line := range strings.Lines(body) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), "{")
		name, _, _ = strings.Cut(name, " ")
		if !strings.HasPrefix(name, "jinid_") {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !families[name] && !families[base] {
			t.Errorf("sample %q has no HELP and TYPE", strings.TrimSpace(line))
		}
	}
}

// The status page, rendered by a real headless Chromium from a daemon on
// a LAN with two other lookup services: the DOM lists both, and the
// interface the daemon serves; a screenshot at a phone's width is kept
// in the test's artifacts (go test -artifacts).
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	chromium := browser(t)
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, a, b := lab.Host("gw"), lab.Host("a"), lab.Host("b")
	gl := gw.Attach(lan)
	a.Attach(lan)
	b.Attach(lan)
	jinidtest.LabDaemon(t, bin, gw)
	// Started after gw listens: their first announcements reach it, and
	// they repeat them every second.
	pa := jinidtest.LabDaemon(t, bin, a, "--announce-interval", "1s", "--groups", "lab")
	pb := jinidtest.LabDaemon(t, bin, b, "--announce-interval", "1s")
	ids := []string{idOf(t, pa.Log()), idOf(t, pb.Log())}
	url := "http://" + gl.IPv4.String() + ":4162/"
	// A service registered here, listed with its name and endpoint.
	reg, err := jinidtest.LabClient(t, gw, strings.TrimSuffix(url, "/")).Register(t.Context(), apitypes.Item{Types: []string{"com.example.Printer"},
		Endpoint: "ipp://10.0.0.9/q", Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "lobby"}}}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "both lookup services on the page", func() bool {
		page := raw(t, gw, "GET", url, "", "", "", "").body
		return strings.Contains(page, ids[0]) && strings.Contains(page, ids[1])
	})

	dir := t.ArtifactDir()
	shot := filepath.Join(dir, "status-page.png")
	// Chromium as root needs --no-sandbox; the profile is the test's.
	// Software compositing only: with a software GPU rasterizer,
	// screenshots of this page crashed Chromium 148 about one run in ten.
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-software-rasterizer",
		"--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=412,1400"}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	browse := func(extra ...string) []byte {
		cmd := gw.Command(ctx, chromium, append(append(args, extra...), url)...)
		cmd.WaitDelay = 5 * time.Second
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
		}
		return out
	}
	dom := string(browse("--dump-dom"))
	for _, id := range ids {
		if !regexp.MustCompile(`<tr class="lookup-service" data-id="` + id + `">`).MatchString(dom) {
			t.Errorf("the rendered DOM has no row for lookup service %s:\n%s", id, dom)
		}
	}
	if !strings.Contains(dom, `<tr class="registered" data-id="`+reg.ServiceID+`">`) || !strings.Contains(dom, "lobby") ||
		!strings.Contains(dom, "ipp://10.0.0.9/q") {
		t.Errorf("the rendered DOM has no row for the registered service %s:\n%s", reg.ServiceID, dom)
	}
	if !strings.Contains(dom, `<tr class="interface" data-name="eth0">`) {
		t.Errorf("the rendered DOM has no row for interface eth0:\n%s", dom)
	}
	if !strings.Contains(dom, `id="readiness">ready<`) {
		t.Errorf("the page does not say ready:\n%s", dom)
	}
	// A lookup service that stops says goodbye (it announces no groups):
	// it leaves the page at once, not when it would have gone silent.
	pb.Cmd.Process.Signal(syscall.SIGTERM)
	testenv.Until(t, "the stopped lookup service gone from the page", func() bool {
		page := raw(t, gw, "GET", url, "", "", "", "").body
		return strings.Contains(page, ids[0]) && !strings.Contains(page, ids[1])
	})
	browse("--screenshot=" + shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
	if dst := os.Getenv("JINID_STATUS_SCREENSHOT"); dst != "" {
		// For docs/operations.md: JINID_STATUS_SCREENSHOT=docs/status-page.png.
		raw, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// browser finds headless Chromium. Debian's /usr/bin/chromium is a
// launcher script that adds flags of its own (--enable-gpu-rasterization
// among them, under which headless screenshots crash now and then), so
// the browser it launches is run directly when it is there.
func browser(t *testing.T) string {
	t.Helper()
	launcher := testenv.LookPath(t, "chromium", "chromium")
	const debian = "/usr/lib/chromium/chromium"
	if fi, err := os.Stat(debian); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return debian
	}
	return launcher
}

package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// readyz is the daemon's readiness, asked through hc at api: its status
// code, the failing checks ("name: detail", joined by "; ") and
// Retry-After. A body that does not list its checks fails the test.
func readyz(t *testing.T, hc *http.Client, url string) (int, string, string) {
	t.Helper()
	resp, err := hc.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.Health
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Checks) == 0 {
		t.Fatalf("/readyz answered %q (%v): want its checks", raw, err)
	}
	var failing []string
	for _, c := range body.Checks {
		if !c.OK {
			failing = append(failing, c.Name+": "+c.Detail)
		}
	}
	if len(failing) != len(body.Failing) || (resp.StatusCode == 200) != (len(failing) == 0) {
		t.Fatalf("/readyz answered %d %q: the status, the failing list and the checks disagree", resp.StatusCode, raw)
	}
	return resp.StatusCode, strings.Join(failing, "; "), resp.Header.Get("Retry-After")
}

// The daemon's data directory on a small disk that fills up: writes are
// answered 503 with Retry-After (no errno, no path), readiness fails
// naming the disk while /healthz stays up, nothing acknowledged is lost,
// and once space is back writes work again and readiness recovers,
// without a restart; after one, everything acknowledged is there.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	disk := testenv.Tmpfs(t, "4m")
	dir := filepath.Join(disk, "data")
	d := jinidtest.StartDaemon(t, bin, dir)
	c := jinidtest.Client(t, d.API)
	ctx := t.Context()

	pad := apitypes.Item{Types: []string{"com.example.Disk"},
		Attributes: []apitypes.Attribute{{Type: "com.example.Pad", Fields: map[string]any{"pad": strings.Repeat("x", 30<<10)}}}}
	var acked []string
	register := func() error {
		reg, err := c.Register(ctx, pad, 3_600_000)
		if err == nil {
			acked = append(acked, reg.ServiceID)
		}
		return err
	}
	for range 5 {
		if err := register(); err != nil {
			t.Fatal(err)
		}
	}
	// The rest of the disk taken by something else.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	filler.Close()

	var refused error
	for i := 0; i < 500 && refused == nil; i++ {
		refused = register()
	}
	var e *client.Error
	if !errors.As(refused, &e) || e.Status != 503 || e.Err.Code != apitypes.Unavailable || e.Err.RetryAfter == 0 ||
		strings.Contains(e.Err.Message, disk) || strings.Contains(strings.ToLower(e.Err.Message), "errno") {
		t.Fatalf("a write on a full disk: %v", refused)
	}
	status, failing, retry := readyz(t, http.DefaultClient, d.API)
	if status != 503 || !strings.HasPrefix(failing, "store: ") || !strings.Contains(failing, "no space") || retry == "" {
		t.Fatalf("readiness on a full disk: %d %q Retry-After %q", status, failing, retry)
	}
	resp, err := http.Get(d.API + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz on a full disk: %d", resp.StatusCode)
	}
	full := len(acked)
	for _, id := range acked {
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("acknowledged %s lost on a full disk: %v", id, err)
		}
	}

	// Space again: within a probe (5 s), ready, and writes work.
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testenv.Until(t, "ready again once space is back", func() bool {
		status, _, _ := readyz(t, http.DefaultClient, d.API)
		return status == 200
	})
	recovered := time.Since(start)
	if err := register(); err != nil {
		t.Fatalf("a write once space is back: %v", err)
	}
	d.Stop(t)
	d = jinidtest.StartDaemon(t, bin, dir)
	defer d.Stop(t)
	c = jinidtest.Client(t, d.API)
	for _, id := range acked {
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("acknowledged %s lost after a restart: %v", id, err)
		}
	}
	t.Logf("%d items acknowledged before the disk was full, the next refused 503 (Retry-After %d s); ready again %v after space came back; all %d acknowledged kept across a restart",
		full, e.Err.RetryAfter, recovered.Round(100*time.Millisecond), len(acked))
}

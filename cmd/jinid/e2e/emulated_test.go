package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// The router daemon, cross-built for mips (softfloat) and armv7, runs
// under qemu-user: "jinid version" names its platform, and a
// --no-multicast daemon answers /healthz.
func TestEmulatedRouterBuilds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped with -short: cross-builds and emulates")
	}
	for _, c := range []struct{ name, qemu, goarch, env string }{
		{"mips", "qemu-mips", "mips", "GOMIPS=softfloat"},
		{"armv7", "qemu-arm", "arm", "GOARM=7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			qemu := testenv.LookPath(t, c.qemu, "qemu-user")
			bin := filepath.Join(t.TempDir(), "jinid-daemon")
			tags, err := exec.Command("sh", "../../../scripts/profile", "router").Output()
			if err != nil {
				t.Fatal(err)
			}
			build := exec.Command("go", "build", "-trimpath", "-tags", strings.TrimSpace(string(tags)), "-o", bin, "github.com/jinid/jinid/cmd/jinid")
			build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+c.goarch, c.env)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("cross-building for %s: %v\n%s", c.name, err, out)
			}
			out, err := exec.Command(qemu, bin, "version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), " linux/"+c.goarch) {
				t.Fatalf("%s jinid version: %v %q", c.qemu, err, out)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, qemu, bin, "daemon", "--no-multicast", "--api-listen", "127.0.0.1:0", "--discovery-port", "0",
				"--data-dir", t.TempDir(), "--api-socket", "none")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(stderr)
			api := ""
			for api == "" && sc.Scan() {
				if m := regexp.MustCompile(`api=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
					api = m[1]
				}
			}
			if api == "" {
				t.Fatalf("the emulated daemon never said where it listens")
			}
			go func() {
				for sc.Scan() {
				}
			}()
			resp, err := http.Get(api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("/healthz of the emulated %s daemon: %s", c.name, resp.Status)
			}
		})
	}
}

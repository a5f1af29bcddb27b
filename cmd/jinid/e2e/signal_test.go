package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// The real binary starts, serves /healthz, and exits 0 on SIGTERM and on
// SIGINT.
func TestDaemonStopsOnSignal(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "daemon", "--api-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-multicast", "--discovery-port", "0", "--log-format", "text")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			api := ""
			var logs []string
			for api == "" && sc.Scan() {
				logs = append(logs, sc.Text())
				if m := regexp.MustCompile(`api=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
					api = m[1]
				}
			}
			if api == "" {
				t.Fatalf("daemon never said where it listens; logs:\n%s", strings.Join(logs, "\n"))
			}
			resp, err := http.Get(api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz %d", resp.StatusCode)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				logs = append(logs, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit after %v: %v; logs:\n%s", sig, err, strings.Join(logs, "\n"))
			}
			if !strings.Contains(strings.Join(logs, "\n"), "jinid stopped") {
				t.Fatalf("no clean stop logged:\n%s", strings.Join(logs, "\n"))
			}
		})
	}
}

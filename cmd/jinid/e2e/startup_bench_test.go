package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// BenchmarkExecToReady measures a daemon's start: from exec until
// /readyz answers 200 on its unix socket (polled every 200 µs), with
// multicast off and a fresh store. JINID_TEST_BIN measures another
// build, such as the router's:
//
//	go build -tags "$(scripts/profile router)" -o /tmp/jinid-daemon ./cmd/jinid
//	JINID_TEST_BIN=/tmp/jinid-daemon go test -run NONE -bench ExecToReady ./cmd/jinid/e2e/
func BenchmarkExecToReady(b *testing.B) {
	bin := jinidtest.Binary(b)
	for b.Loop() {
		dir := b.TempDir()
		sock := filepath.Join(dir, "api.sock")
		hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
		cmd := exec.Command(bin, "daemon", "--no-multicast", "--api-listen", "127.0.0.1:0", "--discovery-port", "0",
			"--data-dir", filepath.Join(dir, "data"), "--api-socket", sock)
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := hc.Get("http://jinid/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				b.Fatalf("not ready within 10 s: %v", err)
			}
			time.Sleep(200 * time.Microsecond) // startup measured to a fraction of a millisecond
		}
		b.StopTimer()
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		b.StartTimer()
	}
}

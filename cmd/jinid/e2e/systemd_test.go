package e2e

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// Under systemd (Type=notify) the daemon says READY=1 once it serves,
// RELOADING=1 and READY=1 around a SIGHUP, and STOPPING=1 when asked to
// stop.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	sockPath := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd := exec.Command(bin, "daemon", "--api-listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--no-multicast",
		"--discovery-port", "0", "--api-socket", "none")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sockPath)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	next := func() string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 256)
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := next(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if a, b := next(), next(); a != "RELOADING=1" || b != "READY=1" {
		t.Fatalf("around a reload: %q, %q", a, b)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if got := next(); got != "STOPPING=1" {
		t.Fatalf("at the stop: %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// The unit file passes systemd-analyze verify and scores "OK" or better
// (exposure below 4.0) in systemd-analyze security.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	analyze := testenv.LookPath(t, "systemd-analyze", "systemd")
	bin := jinidtest.Binary(t)
	raw, err := os.ReadFile("../../../firmware/debian/jinid.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify wants the ExecStart binary where the unit says: point it at
	// the one just built.
	unit := filepath.Join(t.TempDir(), "jinid.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(raw), "/usr/bin/jinid ", bin+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for jinid.service: ([0-9.]+) (\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no exposure level:\n%s", out)
	}
	level, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("systemd-analyze security: %s %s", m[1], m[2])
	if level >= 4.0 {
		t.Errorf("exposure %s %s, want OK or better (below 4.0)", m[1], m[2])
	}
}

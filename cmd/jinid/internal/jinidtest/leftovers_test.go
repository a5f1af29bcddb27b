package jinidtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// The leak check sees a child started from the directory and not one
// that has been stopped.
func TestLeftovers(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	raw, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sleeper")
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// /proc/PID/exe is set once the exec has happened.
	testenv.Until(t, "the running child reported", func() bool { return len(Leftovers(os.Getpid(), dir)) > 0 })
	if left := Leftovers(os.Getpid(), dir); len(left) != 1 || !strings.HasSuffix(left[0], " "+bin) {
		t.Fatalf("leftovers %q, want the one child %s", left, bin)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if left := Leftovers(os.Getpid(), dir); len(left) != 0 {
		t.Fatalf("a stopped child reported: %q", left)
	}
}

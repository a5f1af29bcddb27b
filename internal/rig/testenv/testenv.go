// Package testenv decides what a test does when the machine lacks what
// it needs (root, a tool): it is skipped with one line saying what is
// missing and how to get it, or failed when CI=true, since CI installs
// everything and a missing piece there is a broken CI, not a pass; and
// how a test waits for a condition (Until).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing skips the test, or fails it under CI, saying why.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI must have it)", why)
	}
	t.Skip("skipped: " + why)
}

// LookPath returns the path of tool, or calls Missing; install says how
// to get it (a Debian package).
func LookPath(t testing.TB, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		Missing(t, tool+" is not installed (apt-get install "+install+")")
	}
	return p
}

// Tmpfs mounts a tmpfs of size (as mount's size=, "4m") for the test,
// unmounted when it ends: a disk that fills up. It needs root (else
// Missing).
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		Missing(t, fmt.Sprintf("mounting a tmpfs: %v %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

package jinid

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSizeBudgets: scripts/sizes, as CI runs it (STRICT=1), fails when a
// router daemon is over its budget (8 MB on mips, 7.5 MB on arm) and
// names it, and passes at the budget exactly; the real binaries are
// checked by .ci/run after make dist.
func TestSizeBudgets(t *testing.T) {
	for _, c := range []struct {
		target string
		size   int64
		over   bool
	}{
		{"mips", 8_000_000, false},
		{"mipsle", 8_000_001, true},
		{"armv7", 7_500_000, false},
		{"arm64", 7_500_001, true},
		{"amd64", 50_000_000, false}, // no budget
	} {
		dist := t.TempDir()
		dir := filepath.Join(dist, c.target)
		os.MkdirAll(dir, 0o755)
		for _, b := range []string{"jinid", "jinid-daemon", "jinid-tools"} {
			f, err := os.Create(filepath.Join(dir, b))
			if err != nil {
				t.Fatal(err)
			}
			// Sparse: the size is what counts. The full and tools
			// binaries have no budget of their own.
			size := c.size
			if b != "jinid-daemon" {
				size *= 2
			}
			f.Truncate(size)
			f.Close()
		}
		cmd := exec.Command("sh", "scripts/sizes", dist)
		cmd.Env = append(os.Environ(), "STRICT=1")
		out, err := cmd.CombinedOutput()
		if over := err != nil; over != c.over || strings.Contains(string(out), "over budget") != c.over {
			t.Errorf("%s daemon of %d bytes: %v\n%s", c.target, c.size, err, out)
		}
	}
}

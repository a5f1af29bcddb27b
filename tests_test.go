package jinid

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests wait for conditions (testenv.Until, a channel), not for time: a
// sleep is for when time itself is the subject (a pace, a random moment
// to crash, a check that nothing more comes), at most one per 1,000
// lines of tests, each saying why on its line or the one above.
func TestSleepsInTests(t *testing.T) {
	lines, sleeps := 0, 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || path == "tests_test.go" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ls := strings.Split(string(raw), "\n")
		lines += len(ls)
		for i, l := range ls {
			code, _, _ := strings.Cut(l, "//")
			if !strings.Contains(code, "time.Sleep(") {
				continue
			}
			sleeps++
			if !strings.Contains(l, "//") && (i == 0 || !strings.Contains(ls[i-1], "//")) {
				t.Errorf("%s:%d: a sleep without a comment saying why time is the subject", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines < 10_000 {
		t.Fatalf("only %d lines of tests: is the walk right?", lines)
	}
	t.Logf("%d sleeps in %d lines of tests", sleeps, lines)
	if sleeps*1000 > lines {
		t.Errorf("%d sleeps in %d lines of tests: more than one per 1,000; wait with testenv.Until", sleeps, lines)
	}
}

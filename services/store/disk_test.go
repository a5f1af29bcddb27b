package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// A full disk: writes answer Unavailable (try again later) and the store
// says it is unhealthy, without losing what was written; once space is
// back, a probe finds it out and writes work again, without a reopen.
func TestFullDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "2m")
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.ProbeEvery = 20 * time.Millisecond
	value := strings.Repeat("v", 16<<10)
	written := 0
	for ; written < 10_000; written++ {
		err = s.Update(func(tx *Tx) error { return tx.Put("b", fmt.Sprint(written), value) })
		if err != nil {
			break
		}
	}
	if !fault.Is(err, apitypes.Unavailable) || fault.As(err).RetryAfter == 0 || strings.Contains(err.Error(), dir) {
		t.Fatalf("after %d writes: %v, want Unavailable with a retry time and no path", written, err)
	}
	if ok, why := s.Health(); ok || !strings.Contains(why, "no space") {
		t.Fatalf("health %v %q", ok, why)
	}
	// What was acknowledged is there.
	for i := range written {
		var got string
		if ok, err := func() (bool, error) {
			var ok bool
			err := s.View(func(tx *Tx) error { var err error; ok, err = tx.Get("b", fmt.Sprint(i), &got); return err })
			return ok, err
		}(); !ok || err != nil || got != value {
			t.Fatalf("write %d lost: %v %v", i, ok, err)
		}
	}
	// Space again: healthy by itself, and writes work.
	os.Remove(filler)
	testenv.Until(t, "healthy again once space came back", func() bool { ok, _ := s.Health(); return ok })
	if err := s.Update(func(tx *Tx) error { return tx.Put("b", "after", "x") }); err != nil {
		t.Fatalf("a write after recovery: %v", err)
	}
}

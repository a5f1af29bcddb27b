package store

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/metrics"
)

// An instrumented store counts its commits with their time and reports
// its size; a snapshot is a store that opens with the same data.
func TestInstrumentAndSnapshot(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := metrics.New()
	st.Instrument(reg)
	for i := range 3 {
		if err := st.Update(func(tx *Tx) error { return tx.Put("probe", "k", i) }); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	reg.WritePrometheus(&b)
	for _, want := range []string{`(?m)^jinid_store_commit_duration_seconds_count 3$`, `(?m)^jinid_store_size_bytes [1-9][0-9]*$`} {
		if !regexp.MustCompile(want).MatchString(b.String()) {
			t.Errorf("metrics lack %s:\n%s", want, b.String())
		}
	}
	if st.Writing() != 0 {
		t.Error("a write said to run after all ended")
	}

	var snap bytes.Buffer
	n, err := st.WriteSnapshot(&snap)
	if err != nil || n != int64(snap.Len()) || n == 0 {
		t.Fatalf("snapshot: %d bytes (%d written), %v", n, snap.Len(), err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), snap.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	copyOf, err := Open(dir)
	if err != nil {
		t.Fatalf("the snapshot does not open as a store: %v", err)
	}
	defer copyOf.Close()
	var got int
	err = copyOf.View(func(tx *Tx) error {
		_, err := tx.Get("probe", "k", &got)
		return err
	})
	if err != nil || got != 2 {
		t.Fatalf("the snapshot holds %d (%v), want the last value 2", got, err)
	}
}

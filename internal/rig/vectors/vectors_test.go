package vectors

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// The embedded copy must stay the file the project shares.
func TestCopyMatchesShared(t *testing.T) {
	shared, err := os.ReadFile("../../../../shared/testdata/river-discovery-vectors.json")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("shared/testdata is not beside this checkout; nothing to compare")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, Raw()) {
		t.Fatal("internal/rig/vectors/river-discovery-vectors.json differs from shared/testdata: copy it again")
	}
}

func TestAllDecode(t *testing.T) {
	all := All()
	if len(all) < 20 {
		t.Fatalf("only %d vectors", len(all))
	}
	for _, v := range all {
		_ = v.Bytes()
		_ = v.Expected()
	}
}

//go:build !jinid_omit_tools

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
)

// inspect --pcap prints exactly what the inspect package's golden files
// hold for the same capture.
func TestInspectPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"inspect", "--pcap", path}, "capture.txt"},
		{[]string{"inspect", "--pcap", path, "--json"}, "capture.jsonl"},
		{[]string{"inspect", "--pcap", path, "-o", "parsable"}, "../../../testdata/output/inspect.parsable"},
		{[]string{"inspect", "--pcap", path, "-o", "yaml"}, "../../../testdata/output/inspect.yaml"},
	} {
		out, _, err := run(t, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("internal", "inspect", "testdata", tc.golden)
		if *update && strings.HasPrefix(tc.golden, "../") {
			os.WriteFile(golden, []byte(out), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%v printed:\n%s\nwant:\n%s", tc.args, out, want)
		}
	}
	// Standard input works the same.
	out, _, err := run(t, bytes.NewReader(pcaptest.Scenario(t)), "inspect", "--pcap", "-")
	if err != nil || !strings.Contains(out, "multicast-announcement v2 seq=42") {
		t.Fatalf("stdin: %v\n%s", err, out)
	}
}

package pcaptest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// DissectorFields are the fields jinid and the Wireshark dissector are
// compared on, by jinid's names (inspect -T fields): the dissector's are
// jini.kind, jini.version, jini.serviceid, jini.group, jini.host and
// jini.port.
var DissectorFields = []string{"kind", "version", "serviceID", "group", "host", "port"}

// TsharkFields runs Debian's tshark with the Lua dissector lua on the
// capture at path and returns, sorted, a line per message it decodes
// without error: the DissectorFields, tab-separated, several values
// joined by ",". tshark reassembles out-of-order segments, as jinid
// does.
func TsharkFields(t testing.TB, lua []byte, path string) []string {
	t.Helper()
	out := Tshark(t, lua, path, "-Y", "jini && !jini.error", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
		"-e", "jini.kind", "-e", "jini.version", "-e", "jini.serviceid", "-e", "jini.group", "-e", "jini.host", "-e", "jini.port")
	var lines []string
	for l := range strings.Lines(out) {
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	slices.Sort(lines)
	return lines
}

// Tshark runs Debian's tshark with the dissector lua, reading path,
// reassembling out-of-order segments as jinid does, with args (a display
// filter, -V for the packets' trees), and returns what it printed.
func Tshark(t testing.TB, lua []byte, path string, args ...string) string {
	t.Helper()
	testenv.LookPath(t, "tshark", "tshark")
	script := filepath.Join(t.TempDir(), "jini.lua")
	if err := os.WriteFile(script, lua, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tshark", append([]string{"-n", "-o", "tcp.reassemble_out_of_order:TRUE", "-X", "lua_script:" + script, "-r", path}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no personal plugins or preferences
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, &stderr)
	}
	if strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark's Lua: %s", &stderr)
	}
	return string(out)
}

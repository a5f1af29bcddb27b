package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/inspect"
	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// TestInspectThroughput (opt-in: JINID_PERF=1, a few minutes) decodes a
// capture of 1,000,000 packets of mixed discovery traffic with jinid
// inspect and with tshark and jinid's Lua dissector, one after the
// other, and prints the figures of docs/performance.md: packets a
// second, allocations a packet (in process), the largest resident size
// of each process.
func TestInspectThroughput(t *testing.T) {
	if os.Getenv("JINID_PERF") == "" {
		t.Skip("opt-in: JINID_PERF=1 decodes a 1,000,000-packet capture with jinid and with tshark")
	}
	testenv.LookPath(t, "tshark", "tshark")
	dir := t.TempDir()
	bin := filepath.Join(dir, "jinid")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/jinid/jinid/cmd/jinid").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	raw, n := millionPackets(t)
	path := filepath.Join(dir, "mixed.pcap")
	os.WriteFile(path, raw, 0o644)
	t.Logf("capture: %d packets, %.1f MB", n, float64(len(raw))/1e6)

	// Allocations, in process.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	records := 0
	if err := inspect.ReadCapture(bytes.NewReader(raw), inspect.NewDecoder(func(inspect.Record) { records++ })); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	t.Logf("in process: %d messages, %.1f allocations and %.0f bytes a packet", records,
		float64(after.Mallocs-before.Mallocs)/float64(n), float64(after.TotalAlloc-before.TotalAlloc)/float64(n))

	raw = nil
	runtime.GC()
	lua := filepath.Join(dir, "jini.lua")
	os.WriteFile(lua, inspect.Dissector, 0o644)
	// Each under GNU time, for its own peak resident size (this process's
	// would be counted in a child's own figure).
	testenv.LookPath(t, "time", "time")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"jinid inspect", []string{bin, "inspect", "-q", "--pcap", path, "-z", "lookup"}},
		{"tshark + jini.lua", []string{"tshark", "-n", "-q", "-o", "tcp.reassemble_out_of_order:TRUE", "-X", "lua_script:" + lua, "-r", path, "-Y", "jini", "-z", "io,stat,0"}},
	} {
		stats := filepath.Join(dir, "time.txt")
		cmd := exec.Command("/usr/bin/time", append([]string{"-o", stats, "-f", "%e %U %S %M"}, c.args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out.String())
		}
		b, _ := os.ReadFile(stats)
		var wall, user, sys float64
		var rss int
		fmt.Sscan(string(b), &wall, &user, &sys, &rss)
		t.Logf("%-18s %6.2f s  %9.0f packets/s  peak RSS %4d MB  CPU %.2f s", c.name, wall, float64(n)/wall, rss/1024, user+sys)
		if c.name == "jinid inspect" && !strings.Contains(out.String(), "=== Lookup services ===") {
			t.Errorf("jinid printed:\n%s", out.String())
		}
	}
}

// millionPackets is 1,000,000 packets of mixed traffic: v1 and v2
// announcements of 50 lookup services, v1 and v2 multicast requests,
// unicast exchanges (six packets each: handshake, request, a jinid's
// response, closes) and other UDP.
func millionPackets(t *testing.T) ([]byte, int) {
	c := pcaptest.NewCapture(t)
	v := func(name string) []byte { return vectors.Named(name).Bytes() }
	ann1, ann2, req1, req2 := v("v1.announcement#0"), v("v2.announcement#0"), v("v1.request#0"), v("v2.request.allgroups#0")
	resp := &unicast.Response{Version: 2, Format: discovery.PlaintextFormat, Host: "10.0.0.7", Port: 4160, Groups: []string{"lab"},
		Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{ServiceID: discovery.ServiceID{7}, APIURL: "http://10.0.0.7:4162"}}}
	rb, err := resp.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := unicast.NewRequest(2).Append(nil)
	n := 0
	for i := 0; n < 1_000_000; i++ {
		lus := fmt.Sprintf("10.0.%d.%d", i%50/250, 10+i%50)
		cl := fmt.Sprintf("10.1.%d.%d", i/250%250, i%250+1)
		port := 20000 + i%40000
		c.UDP(lus, 4160, "224.0.1.84", ann2)
		c.UDP(lus, 4160, "224.0.1.84", ann1)
		c.UDP(cl, 50000, "224.0.1.85", req2)
		c.UDP(cl, 50000, "224.0.1.85", req1)
		c.UDPTo(cl, 53000, "10.0.0.1", 53, []byte("not discovery"))
		c.TCP(cl, port, lus, 4160, true, false, nil)
		c.TCP(lus, 4160, cl, port, true, false, nil)
		c.TCP(cl, port, lus, 4160, false, false, q)
		c.TCP(lus, 4160, cl, port, false, false, rb)
		c.TCP(lus, 4160, cl, port, false, true, nil)
		c.TCP(cl, port, lus, 4160, false, true, nil)
		n += 11
	}
	return c.Bytes(), n
}

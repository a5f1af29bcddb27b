package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// BenchmarkBrowseBesideAvahi times `jinid browse` and `avahi-browse -a
// -r -t` on one LAN, in alternating rounds: two jinids, each with a
// static service and advertising its lookup service over DNS-SD (what
// avahi-browse lists), and a client host running avahi-daemon. Each
// lists everything it finds on the LAN and ends by itself. It reports
// the median of each, and their ratio (browse ÷ avahi-browse; the goal
// is at most 1). Run it with -benchtime=10x (ten rounds).
func BenchmarkBrowseBesideAvahi(b *testing.B) {
	bin := jinidtest.Binary(b)
	lab := netlab.New(b)
	lan := lab.LAN()
	client := lab.Host("client")
	client.Attach(lan)
	for _, name := range []string{"a", "b"} {
		h := lab.Host(name)
		h.Attach(lan)
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "printer.json"), []byte(`{"types":["org.example.Printer"],"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"printer-`+name+`"}}],"endpoint":"ipp://198.18.1.9/"}`), 0o644); err != nil {
			b.Fatal(err)
		}
		jinidtest.LabDaemon(b, bin, h, "--groups", "lab", "--services-dir", dir)
	}
	env, _ := startAvahi(b, client, false)
	testenv.Until(b, "avahi-browse to list both jinids", func() bool {
		c := client.Command(b.Context(), "avahi-browse", "-a", "-r", "-t", "-p")
		c.Env = env
		out, _ := c.Output()
		return strings.Count(string(out), "_jini._tcp") >= 2
	})
	timed := func(c *exec.Cmd, what string) time.Duration {
		start := time.Now()
		out, err := c.CombinedOutput()
		if err != nil {
			b.Fatalf("%s: %v\n%s", what, err, out)
		}
		return time.Since(start)
	}
	var ours, theirs []time.Duration
	b.ResetTimer()
	for range b.N {
		ours = append(ours, timed(client.Command(b.Context(), bin, "browse", "--groups", "lab"), "jinid browse"))
		c := client.Command(b.Context(), "avahi-browse", "-a", "-r", "-t")
		c.Env = env
		theirs = append(theirs, timed(c, "avahi-browse"))
	}
	b.StopTimer()
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(float64(median(ours).Milliseconds()), "browse-ms")
	b.ReportMetric(float64(median(theirs).Milliseconds()), "avahi-browse-ms")
	b.ReportMetric(float64(median(ours))/float64(median(theirs)), "ratio")
	b.Logf("jinid browse %v, avahi-browse -a -r -t %v (medians of %d rounds)", median(ours), median(theirs), b.N)
}

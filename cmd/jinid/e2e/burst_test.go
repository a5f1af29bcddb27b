package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
)

// burstRuns is how many times each LAN of TestWatchersStartingTogether
// starts its twenty watchers: a few in the suite, as many as
// JINID_BURST_RUNS says when measuring (docs/performance.md: 20).
func burstRuns() int {
	if n, err := strconv.Atoi(os.Getenv("JINID_BURST_RUNS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// Twenty `jinid discover --watch` started together, five on each of four
// hosts, each asking in versions 1 and 2 on every family its LAN has,
// all discover the daemon while they run (its announcements are two
// minutes apart: each was answered, or told by the announcement sent
// instead of a refused answer). On an IPv4, a dual-stack and an
// IPv6-only (link-local) LAN (issue 31). How long each took is logged,
// not asserted (docs/performance.md: within a second on an idle machine;
// 2-3 s under load, which a wall-clock bound here failed on).
func TestWatchersStartingTogether(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	for _, lanKind := range []string{"IPv4", "dual-stack", "IPv6-only"} {
		t.Run(lanKind, func(t *testing.T) {
			t.Parallel()
			lab := netlab.New(t)
			lan := lab.LAN()
			attach := func(h *netlab.Host) {
				switch lanKind {
				case "IPv6-only":
					h.AttachLinkLocal(lan)
				case "IPv4":
					h.Attach(lan)
					ipv4Only(t, h)
				default:
					h.Attach(lan)
				}
			}
			lus := lab.Host("lus")
			attach(lus)
			var hosts []*netlab.Host
			for i := range 4 {
				h := lab.Host(fmt.Sprintf("w%d", i+1))
				attach(h)
				hosts = append(hosts, h)
			}
			d := jinidtest.LabDaemon(t, bin, lus, "--groups", "burst", "--no-dns-sd")
			for run := range burstRuns() {
				took := startTogether(t, bin, hosts, 5)
				slices.Sort(took)
				t.Logf("%s LAN, run %d: 20 watchers discovered the daemon in %v (median), %v at most", lanKind, run+1, took[len(took)/2], took[len(took)-1])
			}
			if t.Failed() {
				t.Log(d.Log())
			}
		})
	}
}

// startTogether starts perHost watchers on each host at once and
// returns how long after its start each printed the daemon discovered.
func startTogether(t *testing.T, bin string, hosts []*netlab.Host, perHost int) []time.Duration {
	t.Helper()
	type watcher struct {
		h     *netlab.Host
		start time.Time
		out   bytes.Buffer
		err   error
	}
	var ws []*watcher
	for _, h := range hosts {
		for range perHost {
			ws = append(ws, &watcher{h: h})
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		// Each stops by itself after 6 s: its rounds of requests and
		// room for a loaded machine, far short of the daemon's next
		// scheduled announcement.
		cmd := w.h.Command(ctx, bin, "discover", "--watch", "--json", "--groups", "burst", "--timeout", "6s")
		cmd.Stdout = &w.out
		w.start = time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.err = cmd.Wait()
		}()
	}
	wg.Wait()
	var took []time.Duration
	for i, w := range ws {
		if w.err != nil {
			t.Fatalf("watcher %d in %s: %v", i, w.h.Name, w.err)
		}
		var at time.Time
		sc := bufio.NewScanner(&w.out)
		for sc.Scan() {
			var e struct {
				Time  time.Time `json:"time"`
				Event string    `json:"event"`
				Kind  string    `json:"kind"`
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("watcher %d printed %q: %v", i, sc.Text(), err)
			}
			if e.Event == "discovered" && e.Kind == "jinid" && at.IsZero() {
				at = e.Time
			}
		}
		if at.IsZero() {
			t.Fatalf("watcher %d in %s never discovered the daemon: %s", i, w.h.Name, strings.TrimSpace(w.out.String()))
		}
		took = append(took, at.Sub(w.start))
	}
	return took
}

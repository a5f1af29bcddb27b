package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/lease"
)

// BenchmarkDaemonIdleForeverLeases: the real daemon holding 10,000 client
// leases granted FOREVER (from grantors that are never called) in one
// renewal set. Nothing is ever due, so an idle daemon should use next to
// no CPU and write nothing. Reports the daemon's CPU (user + system, from
// /proc) and the bytes it wrote, per minute of idle, measured over
// JINID_IDLE_SECONDS (default 30) once the leases are in, and again after
// a restart. Run it with -benchtime=1x.
func BenchmarkDaemonIdleForeverLeases(b *testing.B) {
	const leases = 10_000
	idle := 30 * time.Second
	if v, err := strconv.Atoi(os.Getenv("JINID_IDLE_SECONDS")); err == nil && v > 0 {
		idle = time.Duration(v) * time.Second
	}
	bin := jinidtest.Binary(b)
	for b.Loop() {
		dir := b.TempDir()
		d := jinidtest.StartDaemon(b, bin, dir)
		ctx := context.Background()
		c := jinidtest.Client(b, d.API)
		set, err := c.RenewalCreate(ctx, lease.Forever)
		if err != nil {
			b.Fatal(err)
		}
		// Fill the set from a few workers: each renewFor is one fsync.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < leases; i += 8 {
					l := apitypes.Lease{Grantor: fmt.Sprintf("http://198.51.100.%d:4162", i%200+1), ID: fmt.Sprintf("forever-%d", i), Remaining: lease.Never}
					if err := c.RenewFor(ctx, set.ID, l, lease.Forever, nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		cpu, written := measureIdle(b, d, idle)
		b.ReportMetric(cpu, "cpu-ms/min")
		b.ReportMetric(written, "written-B/min")

		d.Stop(b)
		d = jinidtest.StartDaemon(b, bin, dir)
		if ls, err := jinidtest.Client(b, d.API).RenewalLeases(ctx, set.ID); err != nil || len(ls) != leases {
			b.Fatalf("after the restart: %d leases, %v", len(ls), err)
		}
		cpu, written = measureIdle(b, d, idle)
		b.ReportMetric(cpu, "cpu-ms/min-after-restart")
		b.ReportMetric(written, "written-B/min-after-restart")
		d.Stop(b)
	}
}

// measureIdle leaves the daemon alone for a second to settle, then for
// idle, and returns the CPU milliseconds and bytes written per minute of
// that.
func measureIdle(b *testing.B, d *jinidtest.Daemon, idle time.Duration) (cpuMsPerMin, bytesPerMin float64) {
	b.Helper()
	time.Sleep(time.Second) // settled after start, before measuring
	pid := d.Cmd.Process.Pid
	cpu0, w0 := procCPU(b, pid), procWritten(b, pid)
	time.Sleep(idle) // the idle time measured
	cpu1, w1 := procCPU(b, pid), procWritten(b, pid)
	perMin := float64(time.Minute) / float64(idle)
	return float64((cpu1 - cpu0).Milliseconds()) * perMin, float64(w1-w0) * perMin
}

// procCPU is a process's user + system CPU time (/proc/PID/stat fields
// 14 and 15, in clock ticks of 10 ms).
func procCPU(b testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name may hold spaces: count fields after its ')'.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procWritten is the bytes a process caused to be written to storage
// (/proc/PID/io write_bytes).
func procWritten(b testing.TB, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	b.Fatal("no write_bytes in /proc/PID/io")
	return 0
}

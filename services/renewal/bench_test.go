package renewal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// BenchmarkHundredThousandLeases: 100,000 client leases from 10 grantors
// in one renewal service, each grantor's leases expiring around 10
// distinct times (within ±200 ms of each), renewed for a minute at a time
// on a fake clock. Reports the renewAll calls one lease period takes (the
// target: about the number of distinct due-times per grantor, 100, not
// one per lease), the CPU that period costs, and the heap per lease.
func BenchmarkHundredThousandLeases(b *testing.B) {
	const (
		grantors  = 10
		perGrant  = 10_000
		dueTimes  = 10
		period    = time.Minute
		totalSize = grantors * perGrant
	)
	for b.Loop() {
		dir := b.TempDir()
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			// tmpfs: measure the engine, not 100,000 fsyncs at set-up.
			if d, err := os.MkdirTemp("/dev/shm", "jinid-bench"); err == nil {
				dir = d
				defer os.RemoveAll(d)
			}
		}
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		var names []string
		for gi := range grantors {
			names = append(names, fmt.Sprintf("http://grantor%d:4162", gi))
		}
		fake := newFakeGrantors(b, clk, period.Milliseconds(), names...)
		st, err := store.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		g := lease.New(st, clk, slog.New(slog.DiscardHandler))
		s, err := New(Config{Store: st, Grantor: g, Dispatcher: &sent{ch: make(chan event.Delivery, 1)}, Renewer: fake, Clock: clk, SafetyMargin: 10 * time.Second,
			MaxLeasesPerSet: totalSize})
		if err != nil {
			b.Fatal(err)
		}
		g.Start(context.Background())
		s.Start(context.Background())
		c, err := s.Create(lease.Forever, "")
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		now := clk.Now().UnixMilli()
		for gi := range grantors {
			for i := range perGrant {
				due := now + 30_000 + int64(i%dueTimes)*5_000 + int64(i%401) - 200
				id := fmt.Sprintf("g%d-l%d", gi, i)
				fake.exp[id] = due
				if err := s.RenewFor(c.ID, ClientLease{Grantor: names[gi], ID: id, Expiration: due}, lease.Forever, period.Milliseconds()); err != nil {
					b.Fatal(err)
				}
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)

		// The first round of renewals gathers each grantor's due groups;
		// then measure one renewal cycle: a lease renewed for a minute is
		// renewed again the safety margin (10 s) before that minute ends.
		settle := func() {
			for s.inflight.Load() > 0 {
				runtime.Gosched()
			}
		}
		clk.AdvanceSettling(period, settle)
		fake.set(func() { fake.calls = nil })
		start := time.Now()
		cpu0 := cpuTime()
		for range int((period - 10*time.Second) / time.Second) {
			clk.AdvanceSettling(time.Second, settle)
		}
		cpu := cpuTime() - cpu0
		wall := time.Since(start)
		fake.mu.Lock()
		calls, renewed := len(fake.calls), 0
		for _, cl := range fake.calls {
			renewed += len(cl.rs)
		}
		fake.mu.Unlock()
		if renewed != totalSize {
			b.Fatalf("%d leases renewed in a period, want %d", renewed, totalSize)
		}
		b.ReportMetric(float64(calls), "calls/period")
		b.ReportMetric(float64(renewed)/float64(calls), "leases/call")
		b.ReportMetric(float64(cpu.Milliseconds()), "cpu-ms/period")
		b.ReportMetric(float64(wall.Milliseconds()), "wall-ms/period")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/totalSize, "heap-B/lease")
		s.Shutdown(context.Background())
		g.Shutdown(context.Background())
		st.Close()
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

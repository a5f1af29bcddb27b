package group

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
)

const scaleN = 1000

// scaleLAN puts n lookup services in group "a" on a simulated LAN.
func scaleLAN(n int) (*discoverytest.LAN, []*discoverytest.SimLUS) {
	lan := discoverytest.NewLAN()
	ls := make([]*discoverytest.SimLUS, n)
	for i := range ls {
		ls[i] = lan.Add(discoverytest.SimLUS{Host: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Groups: []string{"a"}})
	}
	return lan, ls
}

// counter counts events by kind.
type counter struct{ discovered, discarded, changed atomic.Int64 }

func (c *counter) on(e discovery.Event) {
	switch e.Kind {
	case discovery.Discovered:
		c.discovered.Add(1)
	case discovery.Discarded:
		c.discarded.Add(1)
	case discovery.Changed:
		c.changed.Add(1)
	}
}

// TestThousandAnnouncing: 1,000 lookup services announcing every 10 ms
// of (fake) time are all discovered once and none is discarded while
// they announce; when half stop, exactly those are discarded, when the
// window after their last announcement ends.
func TestThousandAnnouncing(t *testing.T) {
	lan, ls := scaleLAN(scaleN)
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	var c counter
	const interval = 100 * time.Millisecond // of the simulated lookup services' announcements, as configured
	d, err := New(Config{Groups: []string{"a"}, Network: lan, Clock: clk, OnEvent: c.on, AnnouncementInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	// Each lookup service announces every 10 ms, staggered across it.
	tick := func(alive int) {
		for step := range 10 {
			for i := step; i < alive; i += 10 {
				d.HandleAnnouncement(lan.Announcement(ls[i], discovery.ProtocolV2), "sim0")
			}
			clk.Advance(time.Millisecond)
		}
	}
	// At most MaxPendingContacts wait to be contacted: those beyond are
	// contacted at a later announcement.
	testenv.Until(t, "1000 discovered", func() bool { tick(scaleN); return c.discovered.Load() == scaleN })
	for range 200 { // 2 s of announcements: 200,000
		tick(scaleN)
	}
	if c.discovered.Load() != scaleN || c.discarded.Load() != 0 || c.changed.Load() != 0 {
		t.Fatalf("while announcing: %d discovered, %d discarded, %d changed", c.discovered.Load(), c.discarded.Load(), c.changed.Load())
	}
	if n := len(lan.Dials); n != scaleN {
		t.Fatalf("%d lookup services contacted, want each once (%d)", n, scaleN)
	}
	// Half stop (and go down).
	for _, l := range ls[scaleN/2:] {
		lan.Set(l, func(l *discoverytest.SimLUS) { l.Down = true })
	}
	window := DefaultDiscardMultiple * interval
	// The last announcements of the stopped ones came 0-9 ms into the last
	// full tick: the first window ends 10 ms after this.
	for range int(window/(10*time.Millisecond)) - 2 {
		tick(scaleN / 2)
	}
	if c.discarded.Load() != 0 {
		t.Fatalf("%d discarded before the window ended", c.discarded.Load())
	}
	for range 3 {
		tick(scaleN / 2)
	}
	testenv.Until(t, "500 discarded", func() bool { return c.discarded.Load() == scaleN/2 })
	if got := len(d.Discovered()); got != scaleN/2 {
		t.Fatalf("%d still discovered, want %d", got, scaleN/2)
	}
}

// setupScale returns an engine with scaleN lookup services discovered.
func setupScale(b *testing.B, c *counter) (*Discovery, *discoverytest.LAN, []*discoverytest.SimLUS) {
	lan, ls := scaleLAN(scaleN)
	d, err := New(Config{Groups: []string{"a"}, Network: lan, OnEvent: c.on})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Shutdown(context.Background()) })
	for _, l := range ls {
		d.HandleAnnouncement(lan.Announcement(l, discovery.ProtocolV2), "sim0")
	}
	testenv.Until(b, "discovery", func() bool { return c.discovered.Load() == scaleN })
	return d, lan, ls
}

// BenchmarkAnnouncementKnown is the cost of one announcement from one of
// 1,000 discovered lookup services (the steady state: nothing changes).
// cpu-at-100k/s is the share of one core that 1,000 lookup services
// announcing every 10 ms would take.
func BenchmarkAnnouncementKnown(b *testing.B) {
	var c counter
	d, lan, ls := setupScale(b, &c)
	anns := make([]discovery.Announcement, scaleN)
	for i, l := range ls {
		anns[i] = lan.Announcement(l, discovery.ProtocolV2)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		a := &anns[i%scaleN]
		a.Sequence++
		d.HandleAnnouncement(*a, "sim0")
		i++
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp*100_000/1e9*100, "cpu%-at-100k/s")
}

// BenchmarkChangedEvents: every announcement changes the groups of one of
// 1,000 lookup services, so each makes a changed event; events/s counts
// those delivered to the callback.
func BenchmarkChangedEvents(b *testing.B) {
	var c counter
	d, lan, ls := setupScale(b, &c)
	anns := make([]discovery.Announcement, scaleN)
	for i, l := range ls {
		anns[i] = lan.Announcement(l, discovery.ProtocolV2)
	}
	groups := [][]string{{"a", "b"}, {"a"}}
	b.ResetTimer()
	start := time.Now()
	i := 0
	for b.Loop() {
		a := &anns[i%scaleN]
		a.Sequence++
		a.Groups = groups[(i/scaleN)%2]
		d.HandleAnnouncement(*a, "sim0")
		i++
	}
	testenv.Until(b, "events delivered", func() bool { return c.changed.Load() == int64(i) })
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkMemoryPerLookupService: heap held per discovered lookup
// service (a jinid one: descriptor, groups, timer).
func BenchmarkMemoryPerLookupService(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var c counter
		lan, ls := scaleLAN(scaleN)
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := New(Config{Groups: []string{"a"}, Network: lan, OnEvent: c.on})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			d.HandleAnnouncement(lan.Announcement(l, discovery.ProtocolV2), "sim0")
		}
		testenv.Until(b, "discovery", func() bool { return c.discovered.Load() == scaleN })
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/scaleN, "B/lookup-service")
		d.Shutdown(context.Background())
	}
}

// BenchmarkRealTime1000At10ms runs 1,000 simulated lookup services
// announcing every 10 ms on the real clock for one second per iteration
// and reports the CPU the whole process used for it, as a share of one
// core.
func BenchmarkRealTime1000At10ms(b *testing.B) {
	var c counter
	d, lan, ls := setupScale(b, &c)
	anns := make([]discovery.Announcement, scaleN)
	for i, l := range ls {
		anns[i] = lan.Announcement(l, discovery.ProtocolV2)
	}
	var cpu, wall time.Duration
	var sent int
	for b.Loop() {
		ru0 := rusage()
		start := time.Now()
		tk := time.NewTicker(time.Millisecond)
		for step := range 1000 { // 1 s: every lookup service 100 times
			<-tk.C
			for i := step % 10; i < scaleN; i += 10 {
				a := &anns[i]
				a.Sequence++
				d.HandleAnnouncement(*a, "sim0")
				sent++
			}
		}
		tk.Stop()
		wall += time.Since(start)
		cpu += rusage() - ru0
	}
	if c.discarded.Load() != 0 {
		b.Fatalf("%d discarded while announcing", c.discarded.Load())
	}
	b.ReportMetric(float64(sent)/wall.Seconds(), "announcements/s")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu%")
}

func rusage() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

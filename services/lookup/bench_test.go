package lookup

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/jinid/jinid/internal/clock"
)

// BenchmarkMemory100k registers 100,000 services and reports the heap
// they hold and the store's size, per registration. Run it alone:
//
//	go test -run=NONE -bench=Memory100k -benchtime=1x ./lookup/
func BenchmarkMemory100k(b *testing.B) {
	dir := b.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// tmpfs: measure memory, not 100,000 fsyncs.
		d, err := os.MkdirTemp("/dev/shm", "jinid-bench")
		if err == nil {
			dir = d
			defer os.RemoveAll(d)
		}
	}
	const n = 100_000
	for b.Loop() {
		f := open(b, dir, clock.Real{})
		f.r.cfg.ItemsBytes = 1 << 30 // room for 100,000 (the default bounds them to 16 MiB)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			it := printer(fmt.Sprintf("printer-%d", i))
			if _, err := f.r.Register(it, 3_600_000, ""); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		fi, _ := os.Stat(f.st.Path())
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/registration")
		b.ReportMetric(float64(fi.Size())/n, "disk-B/registration")
		f.close()
		os.Remove(f.st.Path())
	}
}

// BenchmarkQuery1000 is a template lookup among 1,000 registrations, in
// the registrar (no HTTP).
func BenchmarkQuery1000(b *testing.B) {
	f := open(b, b.TempDir(), clock.Real{})
	for i := range 1000 {
		if _, err := f.r.Register(printer(fmt.Sprintf("printer-%d", i)), 3_600_000, ""); err != nil {
			b.Fatal(err)
		}
	}
	tmpl := Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "printer-500"})}}
	b.ReportAllocs()
	for b.Loop() {
		if _, total, _ := f.r.Query(tmpl, 10); total != 1 {
			b.Fatal(total)
		}
	}
}

// BenchmarkQueryScaling is a lookup by type and Name among 1,000 and
// 100,000 registrations (one match), in the registrar: with the index
// its cost follows what it matches, where a scan followed the registry's
// size. Run it alone (100,000 registrations take a while):
//
//	go test -run=NONE -bench=QueryScaling ./services/lookup/
func BenchmarkQueryScaling(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			if d, err := os.MkdirTemp("/dev/shm", "jinid-bench"); err == nil {
				dir = d // tmpfs: the setup is registrations, not fsyncs
				defer os.RemoveAll(d)
			}
			f := open(b, dir, clock.Real{})
			defer f.close()
			f.r.cfg.ItemsBytes = 1 << 30 // room for 100,000
			for i := range n {
				if _, err := f.r.Register(printer(fmt.Sprintf("printer-%d", i)), 3_600_000, ""); err != nil {
					b.Fatal(err)
				}
			}
			tmpl := Template{Types: []string{"com.example.Printer"},
				Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": fmt.Sprintf("printer-%d", n/2)})}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, total, _ := f.r.Query(tmpl, 10); total != 1 {
					b.Fatal(total)
				}
			}
		})
	}
}

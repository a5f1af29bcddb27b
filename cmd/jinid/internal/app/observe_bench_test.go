package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/status"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/lookup"
)

// BenchmarkObserve measures the status page (gathered and rendered) and
// a /metrics scrape of a daemon holding 10,000 registrations, with 1,000
// lookup services heard on the LAN. The store is on a tmpfs (root) so
// that filling it takes seconds, not minutes of fsyncs.
func BenchmarkObserve(b *testing.B) {
	dir := testenv.Tmpfs(b, "64m")
	d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: dir, NoMulticast: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Shutdown(context.Background()) })
	for i := range 10_000 {
		it := lookup.Item{Types: []string{"com.example.Printer", fmt.Sprintf("com.example.Model%d", i%50)}}
		if _, err := d.registrar.Register(it, 3_600_000, ""); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	for i := range 1000 {
		d.obs.heard.Note(now, fmt.Sprintf("%08x-0000-4000-8000-000000000000", i), fmt.Sprintf("10.0.%d.%d:4160", i/250, i%250+1),
			[]string{"", "lab"}, 2, "br-lan")
	}
	for i := range status.JournalSize {
		d.obs.journal.Add("lookup service discovered", fmt.Sprintf("lookup service %d", i))
	}
	b.Run("status-page", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			status.Render(&buf, d.statusPage(""))
		}
		b.ReportMetric(float64(buf.Len()), "bytes/page")
	})
	b.Run("metrics-scrape", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			d.obs.metrics.WritePrometheus(&buf)
		}
		b.ReportMetric(float64(buf.Len()), "bytes/scrape")
	})
	b.Run("snapshot", func(b *testing.B) {
		var n int64
		for b.Loop() {
			n, _ = d.store.WriteSnapshot(io.Discard)
		}
		b.ReportMetric(float64(n), "bytes/snapshot")
	})
}

// BenchmarkSnapshotRouter measures a snapshot on OpenWrt-like settings:
// 200 registrations (a type and a Name attribute each), the store on a
// tmpfs, the snapshot at the default interval; it reports the bytes
// each snapshot and a day of them write to flash.
func BenchmarkSnapshotRouter(b *testing.B) {
	dir := testenv.Tmpfs(b, "16m")
	d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: dir, NoMulticast: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Shutdown(context.Background()) })
	for i := range 200 {
		it := lookup.Item{Types: []string{"com.example.Printer"},
			Attributes: []lookup.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": fmt.Sprintf("printer %d", i)}}}}
		if _, err := d.registrar.Register(it, 3_600_000, ""); err != nil {
			b.Fatal(err)
		}
	}
	var n int64
	for b.Loop() {
		n, _ = d.store.WriteSnapshot(io.Discard)
	}
	b.ReportMetric(float64(n), "bytes/snapshot")
	b.ReportMetric(float64(n)*float64(24*time.Hour/DefaultSnapshotInterval), "bytes/day")
}

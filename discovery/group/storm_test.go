package group

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// stalled is a network whose lookup services never answer: each
// unicast discovery holds until its context ends.
type stalled struct{ calls atomic.Int64 }

func (s *stalled) Request([]string, []discovery.ServiceID) error { return nil }

func (s *stalled) Unicast(ctx context.Context, _ string, _, _ int) (*unicast.Response, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// lines counts log lines.
type lines struct{ n atomic.Int64 }

func (l *lines) Enabled(context.Context, slog.Level) bool  { return true }
func (l *lines) Handle(context.Context, slog.Record) error { l.n.Add(1); return nil }
func (l *lines) WithAttrs([]slog.Attr) slog.Handler        { return l }
func (l *lines) WithGroup(string) slog.Handler             { return l }

// A storm of announcements with new ServiceIDs, from lookup services
// that never answer: no goroutine per announcement, a bounded number
// waiting, each contact bounded in time, the rest dropped and counted,
// and a few log lines, not one per failure.
func TestAnnouncementStorm(t *testing.T) {
	net := &stalled{}
	log := &lines{}
	d, err := New(Config{Groups: nil, Network: net, MaxContacts: 16, MaxPendingContacts: 64,
		ContactTimeout: 20 * time.Millisecond, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	before := runtime.NumGoroutine()
	const storm = 100_000
	peak := 0
	for i := range storm {
		id := discovery.ServiceID{byte(i >> 16), byte(i >> 8), byte(i), 1}
		d.HandleAnnouncement(discovery.Announcement{Version: discovery.ProtocolV2, ServiceID: id, Host: "198.18.1.9", Port: 4160,
			Groups: []string{"lab"}}, "eth0")
		if i%1000 == 0 {
			peak = max(peak, runtime.NumGoroutine())
		}
	}
	if peak > before+16+32 { // the workers, and timers firing
		t.Errorf("%d goroutines at the peak of the storm, %d before: one per announcement?", peak, before)
	}
	if d.DroppedContacts() < storm/2 {
		t.Errorf("%d announcements dropped of %d: the queue is not bounded", d.DroppedContacts(), storm)
	}
	// Each contact ends by its timeout; then the workers end too.
	testenv.Until(t, "the contacts and their workers to end after the storm", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.workers == 0 && len(d.contacting) == 0
	})
	if n := log.n.Load(); n > 10 {
		t.Errorf("%d log lines for %d failed or dropped contacts", n, storm)
	}
	t.Logf("%d contacts tried, %d dropped, %d log lines", net.calls.Load(), d.DroppedContacts(), log.n.Load())
}

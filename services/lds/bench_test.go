package lds

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

const (
	fanLUS  = 100
	fanRegs = 1000 // each interested in one lookup service's group: 10 per lookup service
)

// fanout is 1,000 registrations over 100 simulated lookup services, each
// lookup service in a group of its own that 10 registrations want.
type fanout struct {
	lan  *discoverytest.LAN
	ls   []*discoverytest.SimLUS
	s    *Service
	g    *lease.Grantor
	st   *store.Store
	regs []Registration
}

func newFanout(tb testing.TB, sender Sender, clk clock.Clock) *fanout {
	f := &fanout{lan: discoverytest.NewLAN()}
	st, err := store.Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	f.st = st
	f.g = lease.New(st, clk, slog.New(slog.DiscardHandler))
	f.s, err = New(Config{Store: st, Grantor: f.g, Dispatcher: sender, Clock: clk,
		Group:   group.Config{Network: f.lan},
		Locator: locator.Config{Dial: f.lan.Dial, LookupSRV: f.lan.LookupSRV}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.g.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	f.s.Start(context.Background())
	tb.Cleanup(func() { f.s.Shutdown(context.Background()); f.g.Shutdown(context.Background()); st.Close() })
	for i := range fanLUS {
		f.ls = append(f.ls, f.lan.Add(discoverytest.SimLUS{Host: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Groups: []string{fmt.Sprintf("g%d", i)}}))
	}
	return f
}

func (f *fanout) register(tb testing.TB, listener string) {
	for j := range fanRegs {
		r, err := f.s.Register(RegisterRequest{Groups: []string{fmt.Sprintf("g%d", j%fanLUS)}, Listener: listener, Duration: lease.Forever})
		if err != nil {
			tb.Fatal(err)
		}
		f.regs = append(f.regs, r)
	}
}

// examined counts the registrations reconcile looks at, to show the
// fan-out follows the indexes.
func TestAnnouncementFansOutOnlyToItsRegistrations(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	rec := &recorder{ch: make(chan got, 10*fanRegs)}
	f := newFanout(t, rec, clk)
	f.register(t, listener)
	for _, l := range f.ls {
		f.s.g.HandleAnnouncement(f.lan.Announcement(l, discovery.ProtocolV2), "sim0")
	}
	for range fanRegs {
		select {
		case <-rec.ch:
		case <-time.After(10 * time.Second):
			t.Fatal("not every registration heard of its lookup service")
		}
	}
	// One lookup service leaves its group: the 10 registrations that
	// want it are examined and told, not the 1,000.
	before := f.s.examined.Load()
	f.lan.Set(f.ls[7], func(l *discoverytest.SimLUS) { l.Groups = []string{"elsewhere"} })
	f.s.g.HandleAnnouncement(f.lan.Announcement(f.ls[7], discovery.ProtocolV2), "sim0")
	for range fanRegs / fanLUS {
		select {
		case e := <-rec.ch:
			if !e.discarded || e.ids[0] != f.ls[7].ID {
				t.Fatalf("event %+v", e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("missing discards")
		}
	}
	testenv.Until(t, "the registrations examined", func() bool { return f.s.examined.Load()-before >= fanRegs/fanLUS })
	if n := f.s.examined.Load() - before; n != fanRegs/fanLUS {
		t.Fatalf("%d registrations examined for one announcement, want %d", n, fanRegs/fanLUS)
	}
}

// BenchmarkAnnouncementToListener: 1,000 registrations over 100 lookup
// services; each round every lookup service leaves its group (or comes
// back), so every registration gets one event: through the store (one
// fsync per announcement) and the event dispatcher to an HTTP listener on
// loopback. Reports events/s and the latency from the announcement to the
// listener.
func BenchmarkAnnouncementToListener(b *testing.B) {
	var mu sync.Mutex
	var sent map[discovery.ServiceID]time.Time
	var lat []time.Duration
	arrived := make(chan struct{}, 10*fanRegs)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Registrars []apitypes.Registrar `json:"registrars"`
		}
		json.Unmarshal(body, &ev)
		now := time.Now()
		id, _ := discovery.ParseServiceID(ev.Registrars[0].ServiceID)
		mu.Lock()
		lat = append(lat, now.Sub(sent[id]))
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer srv.Close()
	disp := event.New(event.Config{})
	defer disp.Shutdown(context.Background())
	f := newFanout(b, disp, clock.Real{})
	f.register(b, srv.URL)
	round := func(groups func(i int) []string) {
		mu.Lock()
		sent = map[discovery.ServiceID]time.Time{}
		mu.Unlock()
		for i, l := range f.ls {
			f.lan.Set(l, func(l *discoverytest.SimLUS) { l.Groups = groups(i) })
			a := f.lan.Announcement(l, discovery.ProtocolV2)
			mu.Lock()
			sent[l.ID] = time.Now()
			mu.Unlock()
			f.s.g.HandleAnnouncement(a, "sim0")
		}
		for range fanRegs {
			<-arrived
		}
	}
	in := func(i int) []string { return []string{fmt.Sprintf("g%d", i)} }
	out := func(int) []string { return []string{"elsewhere"} }
	round(in) // discovered: the setup
	mu.Lock()
	lat = lat[:0]
	mu.Unlock()
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			round(out)
		} else {
			round(in)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

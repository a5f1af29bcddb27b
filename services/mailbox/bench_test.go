package mailbox_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/services/mailbox"
)

// benchEvents posts n events from 64 concurrent senders over loopback
// HTTP to one registration's mailbox listener, each stamped with when it
// was sent, and returns how long acknowledging all took.
func benchEvents(b *testing.B, r *rig, reg registration, n int) time.Duration {
	const senders = 64
	tr := &http.Transport{MaxIdleConnsPerHost: senders}
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	_, path, _ := strings.Cut(strings.TrimPrefix(reg.Listener.URL, "http://"), "/")
	url := r.srv.URL + "/" + path
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				body := fmt.Sprintf(`{"source":{"service":"bench","id":"s%d"},"eventID":1,"seqNum":%d,"type":"T","handback":null,"sent":%d}`, s, i, time.Now().UnixNano())
				resp, err := hc.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 204 {
					b.Errorf("HTTP %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func p99(lat []time.Duration) (time.Duration, time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// BenchmarkAccept: durable events per second the mailbox acknowledges
// (each on disk, group-committed) from 64 concurrent senders on loopback.
func BenchmarkAccept(b *testing.B) {
	r := &rig{t: b, dir: b.TempDir(), cfg: mailbox.Config{MaxPerRegistration: 10_000_000, MaxEvents: 10_000_000}}
	r.open()
	defer r.close()
	reg := r.registerB(b, true)
	const n = 50_000
	var total time.Duration
	for b.Loop() {
		total += benchEvents(b, r, reg, n)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "events/s")
}

// BenchmarkToPush: events from 64 senders pushed to a target on loopback;
// latency from sending to the target receiving it.
func BenchmarkToPush(b *testing.B) {
	r := &rig{t: b, dir: b.TempDir(), cfg: mailbox.Config{MaxPerRegistration: 10_000_000, MaxEvents: 10_000_000}}
	r.open()
	defer r.close()
	tg := newLatencyTarget(b)
	reg := r.registerB(b, false)
	r.do("PUT", "/v1/mailbox/registrations/"+reg.ID+"/delivery", map[string]any{"target": map[string]string{"url": tg.srv.URL}}, nil)
	const n = 20_000
	for b.Loop() {
		benchEvents(b, r, reg, n)
		tg.await(n)
	}
	med, p := p99(tg.latencies())
	b.ReportMetric(float64(med.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p.Microseconds())/1000, "p99-ms")
}

// BenchmarkToPull: events sent one at a time (every 2 ms) to a client
// waiting in next; latency from sending to next returning it.
func BenchmarkToPull(b *testing.B) {
	r := &rig{t: b, dir: b.TempDir(), cfg: mailbox.Config{}}
	r.open()
	defer r.close()
	reg := r.registerB(b, true)
	var out struct {
		Iterator string `json:"iterator"`
	}
	r.do("POST", "/v1/mailbox/registrations/"+reg.ID+"/iterators", nil, &out)
	const n = 1000
	var lat []time.Duration
	for b.Loop() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range n {
				resp, err := http.Get(r.srv.URL + "/v1/mailbox/registrations/" + reg.ID + "/iterators/" + out.Iterator + "/next?timeout=5000")
				if err != nil {
					b.Error(err)
					return
				}
				var e struct {
					Sent int64 `json:"sent"`
				}
				json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				lat = append(lat, time.Since(time.Unix(0, e.Sent)))
			}
		}()
		pace := time.NewTicker(2 * time.Millisecond)
		for i := range n {
			<-pace.C // 500 events a second
			body := fmt.Sprintf(`{"source":{"service":"bench","id":"s"},"eventID":1,"seqNum":%d,"type":"T","handback":null,"sent":%d}`, i, time.Now().UnixNano())
			resp, err := http.Post(reg.Listener.URL, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		pace.Stop()
		<-done
	}
	med, p := p99(lat)
	b.ReportMetric(float64(med.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p.Microseconds())/1000, "p99-ms")
}

func (r *rig) registerB(b *testing.B, pull bool) registration {
	var reg registration
	if status, code := r.do("POST", "/v1/mailbox/registrations", map[string]any{"leaseDuration": 600_000, "pull": pull}, &reg); status != 200 {
		b.Fatalf("register: HTTP %d %s", status, code)
	}
	return reg
}

// BenchmarkToPushPaced: events sent one at a time (every 2 ms) with push
// delivery on; latency from sending to the target receiving it.
func BenchmarkToPushPaced(b *testing.B) {
	r := &rig{t: b, dir: b.TempDir(), cfg: mailbox.Config{}}
	r.open()
	defer r.close()
	tg := newLatencyTarget(b)
	reg := r.registerB(b, false)
	r.do("PUT", "/v1/mailbox/registrations/"+reg.ID+"/delivery", map[string]any{"target": map[string]string{"url": tg.srv.URL}}, nil)
	const n = 1000
	pace := time.NewTicker(2 * time.Millisecond)
	defer pace.Stop()
	for b.Loop() {
		for i := range n {
			<-pace.C // 500 events a second
			body := fmt.Sprintf(`{"source":{"service":"bench","id":"s"},"eventID":1,"seqNum":%d,"type":"T","handback":null,"sent":%d}`, i, time.Now().UnixNano())
			resp, err := http.Post(reg.Listener.URL, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		tg.await(n)
	}
	med, p := p99(tg.latencies())
	b.ReportMetric(float64(med.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p.Microseconds())/1000, "p99-ms")
}

// latencyTarget is a push target recording, for each event, the time
// from its "sent" stamp to its arrival.
type latencyTarget struct {
	srv *httptest.Server
	mu  sync.Mutex
	lat []time.Duration
	got chan struct{}
}

func newLatencyTarget(b *testing.B) *latencyTarget {
	tg := &latencyTarget{got: make(chan struct{}, 1<<20)}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e struct {
			Sent int64 `json:"sent"`
		}
		json.NewDecoder(req.Body).Decode(&e)
		tg.mu.Lock()
		tg.lat = append(tg.lat, time.Since(time.Unix(0, e.Sent)))
		tg.mu.Unlock()
		tg.got <- struct{}{}
	}))
	b.Cleanup(tg.srv.Close)
	return tg
}

// await waits for n deliveries.
func (tg *latencyTarget) await(n int) {
	for range n {
		<-tg.got
	}
}

func (tg *latencyTarget) latencies() []time.Duration {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.lat)
}

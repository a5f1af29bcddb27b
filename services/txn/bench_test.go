package txn

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkCommit: transactions with three PREPARED participants
// (answering at once, in memory) committed on the store journal, one
// client at a time and 32 at once; reports store writes per committed
// transaction (each write is one fsync) and the commit latency.
func BenchmarkCommit(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			st, reg := openStore(b)
			j := NewStoreJournal(st)
			e := New(Config{Caller: newFakes(b), Journal: j})
			defer e.Shutdown(b.Context())
			before := commitCount(b, reg)
			RunClients(b, clients, func() {
				id := e.Create()
				for p := range 3 {
					e.Join(id, Participant{URL: fmt.Sprint("p", p), CrashCount: 1})
				}
				if err := e.Commit(b.Context(), id, -1); err != nil {
					b.Error(err)
				}
			})
			b.ReportMetric(float64(commitCount(b, reg)-before)/float64(b.N), "writes/txn")
		})
	}
}

// BenchmarkOpenTransactionMemory: the heap an ACTIVE transaction with
// three participants holds.
func BenchmarkOpenTransactionMemory(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		e := New(Config{Caller: newFakes(b), Journal: &journal{}})
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for range n {
			id := e.Create()
			for p := range 3 {
				e.Join(id, Participant{URL: fmt.Sprintf("http://198.51.100.%d:9100/tx", p), CrashCount: 1})
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/txn")
		runtime.KeepAlive(e)
		e.Shutdown(b.Context())
	}
}

// RunClients calls one b.N times, from clients goroutines at once, and
// reports transactions per second and one's latency p50 and p99. (Exported
// for the package's external benchmarks, in this test file only.)
func RunClients(b *testing.B, clients int, one func()) {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	next := make(chan struct{})
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			for range next {
				start := time.Now()
				one()
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		})
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txn/s")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

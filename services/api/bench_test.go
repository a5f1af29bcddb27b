package api_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

func item(i int) apitypes.Item {
	return apitypes.Item{Types: []string{"com.example.Printer"}, Attributes: []apitypes.Attribute{
		{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": fmt.Sprintf("printer-%d", i)}}}}
}

// BenchmarkRegister: registrations through the API on loopback, each on
// disk (fsync) before it is answered.
func BenchmarkRegister(b *testing.B) {
	e := newEnv(b)
	ctx := b.Context()
	i := 0
	for b.Loop() {
		if _, err := e.c.Register(ctx, item(i), 3_600_000); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
}

// BenchmarkQuery: template lookups through the API among 1,000
// registrations, one match each.
func BenchmarkQuery(b *testing.B) {
	e := newEnv(b)
	ctx := b.Context()
	for i := range 1000 {
		if _, err := e.c.Register(ctx, item(i), 3_600_000); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		_, total, err := e.c.Query(ctx, apitypes.Template{Attributes: []apitypes.Attribute{item(i % 1000).Attributes[0]}}, 10)
		if err != nil || total != 1 {
			b.Fatal(total, err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkRenewBatch: lease renewals in batches of 1,000 (one request,
// one transaction each).
func BenchmarkRenewBatch(b *testing.B) {
	e := newEnv(b)
	ctx := b.Context()
	var rs []client.Renewal
	for i := range 1000 {
		r, err := e.c.Register(ctx, item(i), 3_600_000)
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, client.Renewal{ID: r.Lease.ID, Duration: 3_600_000})
	}
	for b.Loop() {
		res, err := e.c.RenewAll(ctx, rs)
		if err != nil || res[999].Error != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rs))/b.Elapsed().Seconds(), "renewals/s")
}

// BenchmarkRegisterClients is registrations over HTTP from 1, 16 and 64
// clients at once (goroutines with a client each, and so a connection
// each, as separate programs have), on the embedded store (or etcd's,
// JINID_TEST_STORE=etcd): group commit shares the commits among them
// (docs/performance.md, issue 49).
func BenchmarkRegisterClients(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprint(clients), func(b *testing.B) {
			e := newEnv(b)
			ctx := b.Context()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				// Its connection kept between requests, as a program's
				// HTTP client keeps it.
				c, err := client.New(e.srv.URL, &http1.Client{Timeout: time.Minute, MaxIdlePerHost: 1})
				if err != nil {
					b.Fatal(err)
				}
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := c.Register(ctx, item(int(i)), 3_600_000); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registrations/s")
		})
	}
}

package txn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn"
	txnpart "github.com/jinid/jinid/services/txn/participant"
	"github.com/jinid/jinid/services/txn/txntest"
)

// BenchmarkCommitHTTP: the whole path on loopback — a client creates a
// transaction through the API, joins three Go participants (each its
// own HTTP server, voting PREPARED), and commits with waitFor; one
// client at a time and 32 at once. Reports committed transactions per
// second, store writes (fsyncs) per committed transaction and the
// client's latency for the whole transaction.
func BenchmarkCommitHTTP(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			m := txntest.Start(b, txn.ServiceConfig{})
			var urls []string
			for range 3 {
				p := httptest.NewServer(&txnpart.Handler{
					Prepare: func(context.Context, string) (apitypes.Vote, error) { return apitypes.VotePrepared, nil },
					Commit:  func(context.Context, string) error { return nil },
					Abort:   func(context.Context, string) error { return nil },
				})
				defer p.Close()
				urls = append(urls, p.URL)
			}
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			post := func(path, body string, out any) {
				resp, err := hc.Post(m.URL+path, "application/json", bytes.NewReader([]byte(body)))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode/100 != 2 {
					b.Errorf("%s: %d %s", path, resp.StatusCode, raw)
				}
				if out != nil {
					json.Unmarshal(raw, out)
				}
			}
			before := m.Writes()
			txn.RunClients(b, clients, func() {
				var created struct{ ID string }
				post("/v1/transactions", `{"leaseDuration":60000}`, &created)
				for _, u := range urls {
					post("/v1/transactions/"+created.ID+"/participants", `{"participant":{"url":"`+u+`"},"crashCount":1}`, nil)
				}
				post("/v1/transactions/"+created.ID+"/commit", `{"waitFor":10000}`, nil)
			})
			// The decision is the only write (the lease is in memory).
			b.ReportMetric(float64(m.Writes()-before)/float64(b.N), "writes/txn")
		})
	}
}

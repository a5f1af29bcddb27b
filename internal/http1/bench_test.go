package http1

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkServer: one kept-alive client's GETs, served by this package
// and, for comparison, by net/http's Server.
func BenchmarkServer(b *testing.B) {
	h := testHandler()
	for _, c := range []struct {
		name  string
		serve func(net.Listener) func()
	}{
		{"http1", func(ln net.Listener) func() {
			s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
			go s.Serve(ln)
			return func() { s.Shutdown(context.Background()) }
		}},
		{"net-http", func(ln net.Listener) func() {
			s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
			go s.Serve(ln)
			return func() { s.Shutdown(context.Background()) }
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			stop := c.serve(ln)
			defer stop()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			url := "http://" + ln.Addr().String() + "/small"
			b.ReportAllocs()
			for b.Loop() {
				resp, err := hc.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkClient: POSTs of 1 KB, as event deliveries are, by this
// package's client (a connection each, and kept) and by net/http's.
func BenchmarkClient(b *testing.B) {
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer hts.Close()
	body := strings.Repeat("e", 1024)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for _, c := range []struct {
		name string
		hc   Doer
	}{
		{"http1-new", &Client{Timeout: 5 * time.Second}},
		{"http1-kept", &Client{Timeout: 5 * time.Second, MaxIdlePerHost: 2}},
		{"net-http", &http.Client{Timeout: 5 * time.Second, Transport: tr}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, hts.URL, strings.NewReader(body))
				resp, err := c.hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

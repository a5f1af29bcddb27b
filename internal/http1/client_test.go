package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// TestClientAgainstTheStandardServer: net/http's server is the oracle.
func TestClientAgainstTheStandardServer(t *testing.T) {
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("X-Conn", r.Header.Get("Connection"))
			io.Copy(w, r.Body)
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/huge-header":
			w.Header().Set("X-Big", strings.Repeat("h", 2000))
		case "/slow":
			<-r.Context().Done()
		}
	}))
	defer hts.Close()
	c := &Client{Timeout: 5 * time.Second, MaxResponseHeaderBytes: 1024}

	req, _ := http.NewRequest("POST", hts.URL+"/echo", strings.NewReader(strings.Repeat("b", 50_000)))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) != 50_000 || resp.Header.Get("X-Conn") != "close" {
		t.Errorf("echo: %d bytes, Connection %q; want 50000 and close", len(b), resp.Header.Get("X-Conn"))
	}

	req, _ = http.NewRequest("GET", hts.URL+"/redirect", nil)
	resp, err = c.Do(req)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Errorf("redirect: %v %v, want the 302 itself", resp, err)
	} else {
		resp.Body.Close()
	}

	req, _ = http.NewRequest("GET", hts.URL+"/huge-header", nil)
	if _, err := c.Do(req); err == nil || !strings.Contains(err.Error(), "over 1024 bytes") {
		t.Errorf("huge header: %v, want refused", err)
	}

	req, _ = http.NewRequest("GET", strings.Replace(hts.URL, "http:", "https:", 1)+"/echo", nil)
	if _, err := c.Do(req); !errors.Is(err, ErrNoTLS) {
		t.Errorf("https: %v, want ErrNoTLS", err)
	}

	short := &Client{Timeout: 50 * time.Millisecond}
	req, _ = http.NewRequest("GET", hts.URL+"/slow", nil)
	_, err = short.Do(req)
	var ue *url.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ue) || !ue.Timeout() {
		t.Errorf("slow: %v, want a timeout url.Error", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, "GET", hts.URL+"/slow", nil)
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestClientAndServer: the two halves speak to each other, and the dial
// hook is where every connection comes from.
func TestClientAndServer(t *testing.T) {
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second})
	var dialed []string
	c := &Client{Timeout: 5 * time.Second, Dial: func(ctx context.Context, n, a string) (net.Conn, error) {
		dialed = append(dialed, a)
		return (&net.Dialer{}).DialContext(ctx, n, a)
	}}
	for _, path := range []string{"/small", "/big"} {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("%s: %d %d bytes", path, resp.StatusCode, len(b))
		}
	}
	if len(dialed) != 2 || dialed[0] != addr {
		t.Errorf("dialed %v, want %s twice", dialed, addr)
	}
}

// TestClientKeepsConnections: with MaxIdlePerHost, a host's exchanges
// share a connection; one the server closed meanwhile is replaced
// without the caller seeing it; an answer saying "Connection: close", or
// a body left mostly unread, ends its connection.
func TestClientKeepsConnections(t *testing.T) {
	s := &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
	addr := serve(t, s)
	dials := 0
	c := &Client{Timeout: 5 * time.Second, MaxIdlePerHost: 2, Dial: func(ctx context.Context, n, a string) (net.Conn, error) {
		dials++
		return (&net.Dialer{}).DialContext(ctx, n, a)
	}}
	defer c.CloseIdleConnections()
	exchange := func(method, path, body string, readAll bool) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if readAll {
			io.ReadAll(resp.Body)
		} else {
			resp.Body.Read(make([]byte, 1))
		}
		resp.Body.Close()
	}
	for range 5 {
		exchange("POST", "/echo", "event", true)
	}
	if dials != 1 {
		t.Errorf("5 exchanges took %d connections, want 1", dials)
	}
	// The server drops its idle connections (a restart, its idle
	// timeout): the next POST goes through on a new one.
	testenv.Until(t, "the server's connection idle", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.state != stateIdle {
				return false
			}
		}
		return len(s.conns) == 1
	})
	s.closeConns(false)
	exchange("POST", "/echo", "after", true)
	if dials != 2 {
		t.Errorf("after the server closed the kept connection: %d dials, want 2", dials)
	}
	exchange("GET", "/close", "", true) // answers Connection: close
	exchange("GET", "/small", "", true)
	if dials != 3 {
		t.Errorf("after Connection: close: %d dials, want 3", dials)
	}
	exchange("GET", "/big", "", false) // 12 KB, 1 byte read
	exchange("GET", "/small", "", true)
	if dials != 4 {
		t.Errorf("after a body left unread: %d dials, want 4", dials)
	}
}

// countingConn counts the bytes read from the network.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// An answer's body is read no further than MaxResponseBodyBytes: a body
// of exactly that is read whole, one byte more fails with
// ErrBodyTooLarge, and a huge one costs the client little more than the
// bound (its connection closed, not kept).
func TestClientBoundsTheBody(t *testing.T) {
	const limit = 100 << 10
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		chunk := make([]byte, 32<<10)
		for n > 0 {
			k, err := w.Write(chunk[:min(n, len(chunk))])
			if err != nil {
				return
			}
			n -= k
		}
	}))
	defer hts.Close()
	var read atomic.Int64
	c := &Client{Timeout: 10 * time.Second, MaxResponseBodyBytes: limit, MaxIdlePerHost: 1,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return countingConn{conn, &read}, err
		}}
	get := func(n int) (int, error) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/?n=%d", hts.URL, n), nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return len(b), err
	}
	if n, err := get(limit); n != limit || err != nil {
		t.Fatalf("a body of the bound: %d bytes, %v", n, err)
	}
	if n, err := get(limit + 1); n != limit || !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("one byte more: %d bytes, %v", n, err)
	}
	read.Store(0)
	if _, err := get(143 << 20); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("143 MiB: %v", err)
	}
	if n := read.Load(); n > limit+256<<10 {
		t.Fatalf("read %d bytes of a 143 MiB answer with a bound of %d", n, limit)
	}
}

// A kept connection the server closes as a request arrives (read, never
// answered): the server may have acted on it, so it is sent again only
// if that does no harm, as net/http decides (its client is the oracle):
// GET, and a POST marked with an Idempotency-Key; a plain POST fails.
func TestClientRetriesOnlyWhatIsReplayable(t *testing.T) {
	for _, c := range []struct {
		name   string
		method string
		mark   bool
		want   int // requests the server reads: 1 kept, 1 dropped, 1 again
	}{
		{"GET", "GET", false, 3},
		{"POST", "POST", false, 2},
		{"POST with an Idempotency-Key", "POST", true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			ours, oracle := &Client{Timeout: 5 * time.Second, MaxIdlePerHost: 1}, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
			defer ours.CloseIdleConnections()
			defer oracle.CloseIdleConnections()
			for _, client := range []struct {
				name string
				do   func(*http.Request) (*http.Response, error)
			}{
				{"http1", ours.Do},
				{"net/http", oracle.Do},
			} {
				addr, reads := dropsSecond(t)
				send := func() error {
					req, _ := http.NewRequest(c.method, "http://"+addr+"/x", strings.NewReader("body"))
					if c.mark {
						req.Header["Idempotency-Key"] = nil
					}
					resp, err := client.do(req)
					if err != nil {
						return err
					}
					io.ReadAll(resp.Body)
					return resp.Body.Close()
				}
				if err := send(); err != nil {
					t.Fatalf("%s: the first request: %v", client.name, err)
				}
				err := send()
				if got := reads.Load(); got != int64(c.want) || (err == nil) != (c.want == 3) {
					t.Errorf("%s: the server read %d requests, want %d; the second request: %v", client.name, got, c.want, err)
				}
			}
		})
	}
}

// dropsSecond serves requests, but its first connection's second one
// is read and then dropped unanswered; it counts the requests read.
func dropsSecond(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var reads atomic.Int64
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn, first bool) {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					reads.Add(1)
					if first && n == 2 {
						return // read, never answered
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}(c, first)
		}
	}()
	return ln.Addr().String(), &reads
}

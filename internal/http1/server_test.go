package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/rig/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs s on a loopback listener until the test ends.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// raw sends text on a new connection and returns all it reads until the
// server closes (or 5 s pass).
func raw(t *testing.T, addr, text string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	return string(got)
}

func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("x"), 3*bodyBuffer))
	})
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("POST /ignore", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ignored") })
	mux.HandleFunc("GET /close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("GET /panic", func(w http.ResponseWriter, r *http.Request) { panic("on purpose") })
	mux.HandleFunc("GET /addr", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Context().Value(http.LocalAddrContextKey), " ", r.RemoteAddr != "")
	})
	return mux
}

// TestAgainstTheStandardClient: net/http's client is the oracle of
// framing. Every answer parses, bodies arrive whole, and a kept
// connection carries the next request.
func TestAgainstTheStandardClient(t *testing.T) {
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second})
	var conns int
	tr := &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		conns++
		return (&net.Dialer{}).DialContext(ctx, n, a)
	}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	tests := []struct {
		method, path, body string
		code               int
		want               string
		chunked            bool
	}{
		{"GET", "/small", "", 200, "hello", false},
		{"GET", "/big", "", 200, strings.Repeat("x", 3*bodyBuffer), true},
		{"GET", "/empty", "", 204, "", false},
		{"POST", "/echo", strings.Repeat("e", 100_000), 200, strings.Repeat("e", 100_000), true},
		{"POST", "/ignore", "unread", 200, "ignored", false},
		{"GET", "/nothing", "", 404, "404 page not found\n", false},
		{"HEAD", "/small", "", 200, "", false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "http://"+addr+tt.path, strings.NewReader(tt.body))
		if tt.body == "" {
			req.Body = nil
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tt.code || string(b) != tt.want {
			t.Errorf("%s %s: %d %.40q %v, want %d %.40q", tt.method, tt.path, resp.StatusCode, b, err, tt.code, tt.want)
		}
		if chunked := len(resp.TransferEncoding) > 0; chunked != tt.chunked {
			t.Errorf("%s %s: chunked %v, want %v", tt.method, tt.path, chunked, tt.chunked)
		}
		if resp.Header.Get("Date") == "" {
			t.Errorf("%s %s: no Date", tt.method, tt.path)
		}
	}
	if conns != 1 {
		t.Errorf("%d connections for %d requests, want 1 kept alive", conns, len(tests))
	}
}

// TestLargeBodyRefused: a handler that refuses a body it has not read
// gets its answer to the client, not a connection reset (the body keeps
// coming after the answer).
func TestLargeBodyRefused(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024)); err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		}
	}), ReadHeaderTimeout: 5 * time.Second})
	for range 5 {
		resp, err := http.Post("http://"+addr+"/", "application/octet-stream", bytes.NewReader(make([]byte, 4<<20)))
		if err != nil {
			t.Fatalf("posting 4 MB: %v, want the 413", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
			t.Fatalf("status %d, Connection: close %v; want 413 and close", resp.StatusCode, resp.Close)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestRefusals: what cannot be served gets a status naming why and the
// connection closes; nothing reaches the handler.
func TestRefusals(t *testing.T) {
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 1024})
	tests := []struct{ name, send, want string }{
		{"malformed", "GARBAGE\r\n\r\n", "HTTP/1.1 400 "},
		{"no host", "GET /small HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
		{"header too large", "GET /small HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", 8000) + "\r\n\r\n", "HTTP/1.1 431 "},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 505 "},
		{"unknown expectation", "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx", "HTTP/1.1 417 "},
		{"bad chunking", "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 400 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := raw(t, addr, tt.send)
			if !strings.HasPrefix(got, tt.want) || !strings.Contains(got, "Connection: close") {
				t.Errorf("got %.80q, want %q and Connection: close", got, tt.want)
			}
		})
	}
}

// TestFraming checks what the standard client does not show: HTTP/1.0
// bodies end with the connection, 100 Continue is sent when the handler
// reads, a handler's "Connection: close" is honoured, a panic cuts the
// connection and is logged.
func TestFraming(t *testing.T) {
	logged := &testenv.Buffer{}
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logged, nil))})
	t.Run("HTTP/1.0", func(t *testing.T) {
		got := raw(t, addr, "GET /big HTTP/1.0\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") || strings.Contains(got, "chunked") || !strings.HasSuffix(got, strings.Repeat("x", 3*bodyBuffer)) {
			t.Errorf("got %.200q", got)
		}
	})
	t.Run("continue", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("first line %q, want 100 Continue", line)
		}
		br.ReadString('\n')
		io.WriteString(c, "body")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "body" {
			t.Errorf("echo %q", b)
		}
	})
	t.Run("handler closes", func(t *testing.T) {
		got := raw(t, addr, "GET /close HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n")
		if strings.Count(got, "HTTP/1.1 200") != 1 || !strings.HasSuffix(got, "bye") {
			t.Errorf("got %q, want one answer ending the connection", got)
		}
	})
	t.Run("pipelined", func(t *testing.T) {
		got := raw(t, addr, "GET /small HTTP/1.1\r\nHost: a\r\n\r\nGET /addr HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if strings.Count(got, "HTTP/1.1 200") != 2 || !strings.Contains(got, "127.0.0.1:") || !strings.HasSuffix(got, " true") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("panic", func(t *testing.T) {
		if got := raw(t, addr, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n"); got != "" {
			t.Errorf("got %q, want the connection cut", got)
		}
		if !strings.Contains(logged.String(), "on purpose") {
			t.Errorf("log %q, want the panic", logged.String())
		}
	})
}

// TestShutdown: an exchange under way finishes, idle connections close,
// and when the context ends first the handler's context is cancelled.
func TestShutdown(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
			io.WriteString(w, "finished")
		case <-r.Context().Done():
		}
	})
	for _, expire := range []bool{false, true} {
		s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		idle, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()
		got := make(chan string, 1)
		go func() { got <- raw(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n") }()
		select {
		case <-started:
		case a := <-got:
			t.Fatalf("answered %q before the handler started", a)
		}

		ctx, cancel := context.WithCancel(context.Background())
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(ctx) }()
		idle.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("idle connection read %v, want EOF (closed by Shutdown)", err)
		}
		if expire {
			cancel()
			if err := <-shut; !errors.Is(err, context.Canceled) {
				t.Errorf("Shutdown = %v, want context.Canceled", err)
			}
			if a := <-got; a != "" {
				t.Errorf("cut exchange answered %q", a)
			}
		} else {
			release <- struct{}{}
			if a := <-got; !strings.HasSuffix(a, "finished") {
				t.Errorf("exchange answered %q, want it finished", a)
			}
			if err := <-shut; err != nil {
				t.Errorf("Shutdown = %v", err)
			}
		}
		cancel()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v", err)
		}
		if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve after Shutdown = %v", err)
		}
	}
}

// TestTimeouts: a client that never finishes its header, or idles past
// IdleTimeout, loses the connection.
func TestTimeouts(t *testing.T) {
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 50 * time.Millisecond, IdleTimeout: 50 * time.Millisecond})
	for _, send := range []string{"GET /small HTTP/1.1\r\nHost:", "GET /small HTTP/1.1\r\nHost: a\r\n\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c) // ends when the server closes
		c.Close()
		if err != nil {
			t.Errorf("%q: %v, want the server to close", send, err)
		}
	}
}

// FuzzServe feeds a connection any bytes: the server answers or closes,
// never panics or hangs.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
		"HEAD /big HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	h := testHandler()
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &Server{Handler: h, ReadHeaderTimeout: time.Second, MaxHeaderBytes: 4096}
		client, server := net.Pipe()
		s.mu.Lock()
		s.conns = map[*conn]struct{}{}
		c := &conn{srv: s, rwc: server}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
		go func() {
			client.Write(in)
			client.Close()
		}()
		io.Copy(io.Discard, client)
		s.Close()
	})
}

// TestRefusesWhatNetHTTPRefuses: raw requests net/http's server answers
// 400, this one does too (net/http is the oracle), and closes.
func TestRefusesWhatNetHTTPRefuses(t *testing.T) {
	addr := serve(t, &Server{Handler: testHandler(), ReadHeaderTimeout: 5 * time.Second})
	oracle := httptest.NewServer(testHandler())
	defer oracle.Close()
	for name, send := range map[string]string{
		"a space before a header's colon (smuggling)": "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
		"a header name with a control character":      "GET /small HTTP/1.1\r\nHost: a\r\nX-A\x01b: 1\r\n\r\n",
		"a request line whose target is no URI":       "GET x HTTP/1.1\r\nHost: a\r\n\r\n",
		"a Host with a space":                         "GET /small HTTP/1.1\r\nHost: a b\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			want := raw(t, oracle.Listener.Addr().String(), send)
			if !strings.HasPrefix(want, "HTTP/1.1 400 ") {
				t.Fatalf("net/http answered %.60q: the case is no refusal", want)
			}
			got := raw(t, addr, send)
			if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, "Connection: close") || strings.Count(got, "HTTP/1.1 ") != 1 {
				t.Errorf("got %.120q, want one 400 and Connection: close", got)
			}
		})
	}
}

package http1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
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

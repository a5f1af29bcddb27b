package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultMaxResponseHeaderBytes bounds an answer's header when the
// Client says nothing.
const DefaultMaxResponseHeaderBytes = 64 << 10

// ErrNoTLS is the error of an https URL for a Client without DialTLS.
var ErrNoTLS = errors.New("https is not available: this client has no TLS (jinid's router build sends http only)")

// Client sends requests over HTTP/1.1, one connection per exchange: the
// requests jinid sends go to many hosts and seldom twice a second to one,
// so a pool would mostly hold idle connections. It follows no redirects
// and uses no proxy.
type Client struct {
	// Dial opens a connection; nil uses a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTLS opens a connection for an https URL, handshake done; nil
	// refuses those with ErrNoTLS.
	DialTLS func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds an exchange, reading the answer's body included;
	// 0 is no bound but the request's context.
	Timeout time.Duration
	// MaxResponseHeaderBytes bounds an answer's status line and header;
	// 0 means DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int64
}

// Do sends req and reads the answer's header; the caller reads and
// closes the body, which holds the connection. Errors are *url.Error, as
// http.Client's: errors.Is and errors.As reach the cause (a net.OpError,
// context.DeadlineExceeded, ErrNoTLS).
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.do(req)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		op := req.Method
		if op == "" {
			op = http.MethodGet
		}
		return nil, &url.Error{Op: op[:1] + strings.ToLower(op[1:]), URL: redacted(req.URL), Err: err}
	}
	return resp, nil
}

// redacted is u without its password, for errors and logs.
func redacted(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

func (c *Client) do(req *http.Request) (*http.Response, error) {
	u := req.URL
	if u == nil || u.Host == "" {
		return nil, errors.New("no host in the URL")
	}
	dial, port := c.Dial, "80"
	switch u.Scheme {
	case "http":
	case "https":
		if c.DialTLS == nil {
			return nil, ErrNoTLS
		}
		dial, port = c.DialTLS, "443"
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), port)
	}

	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if c.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		cancel()
		return nil, err
	}
	// The exchange's deadline and its cancellation reach the connection,
	// the answer's body included.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	end := func() {
		stop()
		cancel()
		conn.Close()
	}
	fail := func(err error) (*http.Response, error) {
		// The connection's deadline is the context's: whichever
		// fires first, the context's error says what happened.
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		} else if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
			err = context.DeadlineExceeded
		}
		end()
		return nil, err
	}

	out := *req
	out.Close = true // one exchange per connection: say so
	bw := bufio.NewWriterSize(conn, 4096)
	if err := out.Write(bw); err != nil {
		return fail(fmt.Errorf("sending the request: %w", err))
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("sending the request: %w", err))
	}

	maxHeader := c.MaxResponseHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxResponseHeaderBytes
	}
	lr := &io.LimitedReader{R: conn, N: maxHeader}
	br := bufio.NewReaderSize(lr, 4096)
	var resp *http.Response
	for range 5 {
		lr.N = maxHeader
		resp, err = http.ReadResponse(br, req)
		if err != nil {
			if lr.N <= 0 {
				err = fmt.Errorf("the answer's header is over %d bytes", maxHeader)
			}
			return fail(fmt.Errorf("reading the answer: %w", err))
		}
		// Interim answers (100 Continue, 103 Early Hints) come before
		// the one that counts.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close()
	}
	if resp.StatusCode < 200 {
		return fail(errors.New("reading the answer: no final status after 5 interim answers"))
	}
	lr.N = 1<<63 - 1
	resp.Body = &responseBody{rc: resp.Body, end: end}
	return resp, nil
}

// responseBody is an answer's body; closing it closes the connection.
type responseBody struct {
	rc  io.ReadCloser
	end func()
}

func (b *responseBody) Read(p []byte) (int, error) { return b.rc.Read(p) }

func (b *responseBody) Close() error {
	b.end()
	return nil
}

// Doer sends a request and returns the answer: *http.Client is one, and
// so is *Client. Code that sends requests takes a Doer, so the binary
// decides which is linked.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

var _ Doer = (*Client)(nil)

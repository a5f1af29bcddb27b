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
	"sync"
	"time"
)

// DefaultMaxResponseHeaderBytes bounds an answer's header when the
// Client says nothing.
const DefaultMaxResponseHeaderBytes = 64 << 10

// ErrNoTLS is the error of an https URL for a Client without DialTLS.
var ErrNoTLS = errors.New("https is not available: this client has no TLS (jinid's router build sends http only)")

// Client sends requests over HTTP/1.1. It keeps up to MaxIdlePerHost
// connections to a host open between exchanges (an event listener gets
// many in a row; a connection each would cost a handshake and leave a
// TIME_WAIT socket behind every one), and follows no redirects and uses
// no proxy. The zero value is usable: a connection per exchange.
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
	// MaxResponseBodyBytes bounds an answer's body: reading past it
	// fails with ErrBodyTooLarge (and the connection is closed, not
	// kept); 0 is no bound.
	MaxResponseBodyBytes int64
	// MaxIdlePerHost is how many connections to one host are kept for
	// the next exchanges; 0 keeps none. IdleTimeout is how long one is
	// kept unused (0: 30 s); maxIdle bounds them over all hosts.
	MaxIdlePerHost int
	IdleTimeout    time.Duration
	// PoolTag, if set, parts the kept connections by the request's
	// context: a connection dialed under one tag serves only requests
	// of the same tag (a dialer that lets some requests further than
	// others keeps their connections apart).
	PoolTag func(context.Context) string
	// Admit, if set, is asked before every exchange, on a kept
	// connection too: an error fails the request unsent.
	Admit func(context.Context) error

	mu   sync.Mutex
	idle map[string][]*pconn // by scheme and address, newest last
}

// maxIdle bounds the idle connections a Client keeps in all.
const maxIdle = 32

// pconn is a connection that may carry several exchanges.
type pconn struct {
	conn  net.Conn
	lr    *io.LimitedReader
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
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

// CloseIdleConnections closes the connections kept for later exchanges.
func (c *Client) CloseIdleConnections() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, pcs := range idle {
		for _, pc := range pcs {
			pc.conn.Close()
		}
	}
}

// replayable reports whether req may be sent again after a failure in
// which the server may have acted on it (net/http's rule, its oracle).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false // cannot be sent again
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
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
	if c.Admit != nil {
		if err := c.Admit(req.Context()); err != nil {
			return nil, err
		}
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
	key := u.Scheme + "://" + addr
	if c.PoolTag != nil {
		key = c.PoolTag(req.Context()) + key
	}

	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if c.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	// A kept connection may fail under a request with no answer byte
	// (the server closed it as the request went out). The server may
	// have acted on it, so it is sent again on a new connection only if
	// acting twice does no harm there, as net/http decides: GET, HEAD,
	// OPTIONS and TRACE, and requests with an Idempotency-Key header
	// (even one with no value, which is not sent: a caller's mark that
	// its receiver takes the request twice as once).
	for pc := c.take(key); pc != nil; pc = c.take(key) {
		resp, err, sent := c.exchange(ctx, cancel, pc, req)
		if err == nil {
			return resp, nil
		}
		if sent || !replayable(req) {
			cancel()
			return nil, err
		}
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				cancel()
				return nil, gerr
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		cancel()
		return nil, err
	}
	pc := &pconn{conn: conn, key: key, lr: &io.LimitedReader{R: conn}, bw: bufio.NewWriterSize(conn, 4096)}
	pc.br = bufio.NewReaderSize(pc.lr, 4096)
	resp, err, _ := c.exchange(ctx, cancel, pc, req)
	if err != nil {
		cancel()
	}
	return resp, err
}

// take returns a kept connection to key, if one is there and fresh.
func (c *Client) take(key string) *pconn {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pcs := c.idle[key]; len(pcs) > 0; pcs = c.idle[key] {
		pc := pcs[len(pcs)-1]
		c.idle[key] = pcs[:len(pcs)-1]
		if time.Since(pc.since) < c.idleTimeout() && pc.open() {
			return pc
		}
		pc.conn.Close()
	}
	return nil
}

// open reports whether a kept connection is still open: the server has
// not closed it while it was idle (a restart, its idle timeout). Looking
// before sending, as net/http's read loop does, lets any request go on
// a new connection when the server has; a request sent on a connection
// that then fails may have been acted on.
func (pc *pconn) open() bool {
	if pc.br.Buffered() > 0 {
		return false // bytes the server sent unasked: not one to reuse
	}
	return quiet(pc.conn)
}

func (c *Client) idleTimeout() time.Duration {
	if c.IdleTimeout > 0 {
		return c.IdleTimeout
	}
	return 30 * time.Second
}

// keep puts pc back for a later exchange, if there is room.
func (c *Client) keep(pc *pconn) {
	pc.conn.SetDeadline(time.Time{})
	pc.since = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, pcs := range c.idle {
		n += len(pcs)
	}
	if len(c.idle[pc.key]) >= c.MaxIdlePerHost || n >= maxIdle {
		pc.conn.Close()
		return
	}
	if c.idle == nil {
		c.idle = map[string][]*pconn{}
	}
	c.idle[pc.key] = append(c.idle[pc.key], pc)
}

// exchange sends req on pc and reads the answer's header. sent says
// whether the server may have acted on it (an answer's first byte came):
// if not, a failed exchange on a kept connection may be tried again.
// cancel ends ctx: the answer's body calls it when closed; on an error
// the caller does.
func (c *Client) exchange(ctx context.Context, cancel context.CancelFunc, pc *pconn, req *http.Request) (_ *http.Response, _ error, sent bool) {
	conn := pc.conn
	// The exchange's deadline and its cancellation reach the connection,
	// the answer's body included.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error, bool) {
		// The connection's deadline is the context's: whichever
		// fires first, the context's error says what happened.
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		} else if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
			err = context.DeadlineExceeded
		}
		stop()
		conn.Close()
		if ctx.Err() != nil {
			sent = true // no retry after the deadline
		}
		return nil, err, sent
	}

	out := *req
	out.Close = c.MaxIdlePerHost == 0 // say so when there is no reuse
	if err := out.Write(pc.bw); err != nil {
		return fail(fmt.Errorf("sending the request: %w", err))
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(fmt.Errorf("sending the request: %w", err))
	}

	maxHeader := c.MaxResponseHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxResponseHeaderBytes
	}
	var resp *http.Response
	for range 5 {
		pc.lr.N = maxHeader
		if _, err := pc.br.Peek(1); err != nil {
			return fail(fmt.Errorf("reading the answer: %w", err))
		}
		sent = true
		var err error
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			if pc.lr.N <= 0 {
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
	pc.lr.N = 1<<63 - 1
	reuse := !out.Close && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Body = &responseBody{rc: resp.Body, left: c.MaxResponseBodyBytes, limited: c.MaxResponseBodyBytes > 0, end: func(eof bool) {
		// Kept only if the exchange ended whole before its deadline.
		intact := stop() && ctx.Err() == nil
		cancel()
		if eof && reuse && intact {
			c.keep(pc)
		} else {
			conn.Close()
		}
	}}
	return resp, nil, true
}

// responseBody is an answer's body. Read to its end, it gives the
// connection back for another exchange; closed before, it closes it.
type responseBody struct {
	rc      io.ReadCloser
	end     func(eof bool)
	eof     bool
	done    bool
	limited bool
	left    int64 // of the bound, when limited
	over    bool
}

// ErrBodyTooLarge is what reading an answer's body past the client's
// MaxResponseBodyBytes gives.
var ErrBodyTooLarge = errors.New("the answer's body is larger than the client reads")

func (b *responseBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrBodyTooLarge
	}
	if b.limited && int64(len(p)) > b.left+1 {
		// One byte past the bound tells a body that ends there from
		// one that goes on.
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if b.limited {
		if b.left -= int64(n); b.left < 0 {
			b.over = true
			return n - 1, ErrBodyTooLarge
		}
	}
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

func (b *responseBody) Close() error {
	if !b.done {
		b.done = true
		if !b.eof && !b.over {
			// A short rest is read to keep the connection.
			if n, err := io.CopyN(io.Discard, b.rc, 4<<10); errors.Is(err, io.EOF) && n < 4<<10 {
				b.eof = true
			}
		}
		b.end(b.eof)
	}
	return nil
}

// Doer sends a request and returns the answer: *http.Client is one, and
// so is *Client. Code that sends requests takes a Doer, so the binary
// decides which is linked.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

var _ Doer = (*Client)(nil)

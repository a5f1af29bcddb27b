// Package http1 serves and sends HTTP/1.1 on net/http's own message types
// (http.Handler, http.Request, http.Response) without net/http's Server
// and Transport.
//
// Why not those two: whichever binary calls http.Server.Serve links the
// TLS client and server handshakes, X.509 verification and the unencrypted
// HTTP/2 hand-off, and http.Client links the same through its Transport:
// 1.7 MB of the 10 MB mips router daemon (docs/performance.md, "Router
// builds"), for features jinid's router build does not offer. What jinid
// needs of HTTP is its JSON API on a LAN and the requests it sends to
// listeners and grantors: HTTP/1.1, keep-alive for the API, one
// connection per exchange outbound.
//
// What stays with net/http is the part where hostile input is parsed:
// http.ReadRequest and http.ReadResponse, the header and chunked-body
// readers, ServeMux. This package frames, times out and bounds the
// exchange around them.
package http1

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxHeaderBytes bounds a request's header when the Server says
// nothing (as net/http's, 1 MB).
const DefaultMaxHeaderBytes = 1 << 20

// bodyBuffer is how much of an answer is held back to send it with a
// Content-Length; a longer one goes out chunked.
const bodyBuffer = 4 << 10

// maxDrain is how much of a request body the handler left unread is read
// and dropped to keep the connection; past it, the connection is closed.
const maxDrain = 256 << 10

// Server serves HTTP/1.1 (and 1.0) on listeners. Its fields are those of
// http.Server it has; set them before Serve.
type Server struct {
	Handler http.Handler
	// ConnContext derives the context of a connection's requests.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// ReadHeaderTimeout bounds reading a request's header (and a TLS
	// handshake), ReadTimeout the whole request, WriteTimeout writing
	// the answer, IdleTimeout the wait for the next request on a kept
	// connection (ReadHeaderTimeout when 0); 0 is no bound.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// HandshakeTimeout, if set, bounds a TLS handshake apart from the
	// header (ReadHeaderTimeout otherwise): a peer that says nothing
	// holds its connection only this long.
	HandshakeTimeout time.Duration
	// MaxHeaderBytes bounds a request line and header; 0 means
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// Logger is told of handler panics; nil logs nothing.
	Logger *slog.Logger

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup // connections
}

// connState is where a connection is in its exchange.
type connState int

const (
	stateNew    connState = iota // accepted, nothing read
	stateActive                  // a request is being read or served
	stateIdle                    // waiting for the next request
)

// Serve accepts connections on ln and serves each until ln fails or the
// server is shut down; it returns http.ErrServerClosed then. It closes
// ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.shuttingDown() {
				return http.ErrServerClosed
			}
			// Out of file descriptors and the like pass: wait and
			// try again, as net/http does, rather than spin or quit.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accepting on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		c := &conn{srv: s, rwc: rwc}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			rwc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// isTemporary reports the accept errors that pass (EMFILE and kin), the
// ones net/http retries.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting, closes the connections that wait for a
// request and waits for the others to finish their exchange. If ctx ends
// first it closes them all, waits for their goroutines and returns
// ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	// A connection turns idle when its exchange ends; look again until
	// none is left.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.closeConns(false)
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			s.closeConns(true)
			<-done
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close closes the listeners and every connection at once and waits for
// their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.closeConns(true)
	s.wg.Wait()
	return nil
}

// closeConns closes the connections waiting for a request, or all.
func (s *Server) closeConns(all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if all || c.state != stateActive {
			c.closeLocked()
		}
	}
}

// conn is one connection's exchanges.
type conn struct {
	srv *Server
	rwc net.Conn

	linger bool // close with lingeringClose

	// under srv.mu
	state  connState
	closed bool
	cancel context.CancelFunc // the current request's
}

func (c *conn) closeLocked() {
	if !c.closed {
		c.closed = true
		c.rwc.Close()
	}
	if c.cancel != nil {
		c.cancel()
	}
}

// lingerTime and lingerBytes bound what lingeringClose reads.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 4 << 20
)

// lingeringClose ends a connection whose client may still be sending (a
// body too large to read): it sends FIN where it can, then reads and
// drops what comes for a moment, so that the close is no reset that
// destroys the answer in flight (net/http's closeWriteAndWait does the
// same).
func (c *conn) lingeringClose() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.rwc.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c.rwc, lingerBytes)
}

// setState moves c to st; it fails when the server is closing and st is
// active (the exchange must not start).
func (c *conn) setState(st connState) bool {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if st == stateActive && (c.srv.closing || c.closed) {
		return false
	}
	c.state = st
	return true
}

func (c *conn) setCancel(cancel context.CancelFunc) {
	c.srv.mu.Lock()
	c.cancel = cancel
	c.srv.mu.Unlock()
}

func (c *conn) serve() {
	s := c.srv
	defer func() {
		if c.linger {
			c.lingeringClose()
		}
		s.mu.Lock()
		c.closeLocked()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()

	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, c.rwc.LocalAddr())
	if s.ConnContext != nil {
		ctx = s.ConnContext(ctx, c.rwc)
	}
	var tlsState *tls.ConnectionState
	if tc, ok := c.rwc.(*tls.Conn); ok {
		c.rwc.SetDeadline(deadline(cmp.Or(s.HandshakeTimeout, s.ReadHeaderTimeout)))
		if err := tc.HandshakeContext(ctx); err != nil {
			return
		}
		st := tc.ConnectionState()
		tlsState = &st
	}

	maxHeader := int64(s.MaxHeaderBytes)
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	// The limit covers the header alone; net/http allows 4 KB of slack
	// for the bufio read-ahead, so does this.
	lr := &io.LimitedReader{R: c.rwc, N: maxHeader + 4096}
	br := bufio.NewReaderSize(lr, 4096)
	bw := bufio.NewWriterSize(c.rwc, 4096)
	idle := s.IdleTimeout
	if idle == 0 {
		idle = s.ReadHeaderTimeout
	}
	for first := true; ; first = false {
		// Until a request's first byte comes, the connection is one
		// Shutdown may close.
		lr.N = maxHeader + 4096
		if first {
			c.rwc.SetReadDeadline(deadline(s.ReadHeaderTimeout))
		} else {
			c.setState(stateIdle)
			c.rwc.SetReadDeadline(deadline(idle))
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		if !c.setState(stateActive) {
			return
		}
		start := time.Now()
		c.rwc.SetReadDeadline(deadline(s.ReadHeaderTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			c.refuse(bw, lr, err)
			return
		}
		lr.N = 1<<63 - 1
		if s.ReadTimeout > 0 {
			c.rwc.SetReadDeadline(start.Add(s.ReadTimeout))
		} else {
			c.rwc.SetReadDeadline(time.Time{})
		}
		c.rwc.SetWriteDeadline(deadline(s.WriteTimeout))
		if code, why := check(req); code != 0 {
			writeError(bw, code, why)
			return
		}
		if !c.exchange(ctx, req, tlsState, br, bw) {
			return
		}
	}
}

// deadline is now+d, or none for 0.
func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// refuse answers a request that could not be read, if it was a request
// at all.
func (c *conn) refuse(bw *bufio.Writer, lr *io.LimitedReader, err error) {
	var ne net.Error
	switch {
	case lr.N <= 0:
		writeError(bw, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne) && ne.Timeout():
		// Gone, or silent past its deadline: nobody to answer. (A
		// request line whose URI does not parse is a *url.Error, which
		// is a net.Error too: it gets its 400.)
	default:
		writeError(bw, http.StatusBadRequest, "malformed request")
	}
}

// check refuses what ReadRequest takes but this server does not serve,
// and what net/http's server refuses after ReadRequest: header names
// that are not tokens ("Transfer-Encoding : chunked", whose space would
// let a Content-Length smuggle a second request past a proxy that reads
// it otherwise), header values with control characters, a malformed
// Host.
func check(req *http.Request) (int, string) {
	switch {
	case req.ProtoMajor != 1:
		return http.StatusHTTPVersionNotSupported, "HTTP/1.x only"
	case req.ProtoMinor >= 1 && req.Host == "":
		// (ReadRequest moved the header into req.Host.)
		return http.StatusBadRequest, "missing Host header"
	case !validHost(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	for k, vs := range req.Header {
		if !validHeaderName(k) {
			return http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				return http.StatusBadRequest, "invalid header value"
			}
		}
	}
	if e := req.Header.Get("Expect"); e != "" && !strings.EqualFold(e, "100-continue") {
		return http.StatusExpectationFailed, "unsupported Expect"
	}
	return 0, ""
}

// validHeaderName reports whether k is a token (RFC 9110, 5.1), as
// net/http's server wants. (golang.org/x/net/http/httpguts says the same
// but links x/text's tables through idna: too much for the router build
// for three loops.)
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v holds no control character but
// horizontal tab (RFC 9110, 5.5).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether a Host header holds only what a host and
// port may (as net/http's server checks it: no spaces, no controls).
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80 ||
			strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0) {
			return false
		}
	}
	return true
}

// writeError sends a plain-text error and asks to close.
func writeError(bw *bufio.Writer, code int, msg string) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(msg), msg)
	bw.Flush()
}

// exchange serves one request; it reports whether the connection may
// carry another.
func (c *conn) exchange(connCtx context.Context, req *http.Request, tlsState *tls.ConnectionState, br *bufio.Reader, bw *bufio.Writer) bool {
	ctx, cancel := context.WithCancel(connCtx)
	defer cancel()
	c.setCancel(cancel)
	defer c.setCancel(nil)

	req = req.WithContext(ctx)
	req.RemoteAddr = c.rwc.RemoteAddr().String()
	req.TLS = tlsState
	w := &response{conn: c, req: req, bw: bw, header: http.Header{}, declared: -1}
	body := &requestBody{rc: req.Body, w: w, expect: req.Header.Get("Expect") != "" && req.ContentLength != 0}
	req.Body = body

	if !c.handle(w, req) {
		return false
	}
	// A body left unread beyond what will be drained ends the
	// connection: the answer says so, so that the client opens a new one
	// for its next request rather than reuse this one (net/http does the
	// same when a handler's MaxBytesReader stops reading).
	if !body.eof && !body.expect && (req.ContentLength < 0 || req.ContentLength-body.read > maxDrain) {
		w.closeAfter = true
	}
	w.finish()
	err := bw.Flush()
	// A body left unread may still be coming: closing now would answer
	// it with a reset, which can destroy the answer in flight.
	c.linger = !body.eof && err == nil
	if err != nil || w.closeAfter || req.Close || c.srv.shuttingDown() {
		return false
	}
	// What the handler left unread of the body is read and dropped, a
	// bounded amount, to find the next request.
	if !body.eof {
		if body.expect && !w.continued {
			return false // the client waits for a 100 Continue never sent
		}
		n, err := io.CopyN(io.Discard, body.rc, maxDrain+1)
		if n > maxDrain || (err != nil && !errors.Is(err, io.EOF)) {
			return false
		}
	}
	c.linger = false
	return true
}

// handle runs the handler; a panic closes the connection (the answer, if
// begun, stays cut short) and is logged unless it is
// http.ErrAbortHandler.
func (c *conn) handle(w *response, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p == http.ErrAbortHandler || c.srv.Logger == nil {
				return
			}
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.srv.Logger.Error("panic serving a request", "remote", req.RemoteAddr, "path", req.URL.Path,
				"panic", fmt.Sprint(p), "stack", string(buf))
		}
	}()
	c.srv.Handler.ServeHTTP(w, req)
	return true
}

// requestBody is a request's body that tells whether it was read to the
// end, sends "100 Continue" when first read if the client waits for it,
// and has the connection closed after the answer if it was malformed.
type requestBody struct {
	rc     io.ReadCloser
	w      *response
	expect bool // the client waits for 100 Continue
	eof    bool
	read   int64 // bytes read so far
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.expect && !b.w.continued && !b.w.committed {
		b.w.continued = true
		b.w.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := b.w.bw.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		b.eof = true
	case err != nil:
		b.w.closeAfter = true
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// response is the http.ResponseWriter of one exchange: it holds up to
// bodyBuffer bytes back to send them with a Content-Length, and goes
// chunked (or, for HTTP/1.0, to the connection's end) past that or on
// Flush.
type response struct {
	conn   *conn
	req    *http.Request
	bw     *bufio.Writer
	header http.Header

	status      int
	wroteHeader bool
	committed   bool // status line and header sent
	continued   bool // 100 Continue sent
	chunked     bool
	closeAfter  bool
	declared    int64 // the handler's Content-Length, -1 for none
	written     int64
	buf         []byte
}

var _ http.Flusher = (*response)(nil)

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.wroteHeader {
		return
	}
	if code < 200 {
		// An interim answer (103 Early Hints, ...) goes out now.
		if code == http.StatusContinue || code == http.StatusSwitchingProtocols || w.committed {
			return
		}
		fmt.Fprintf(w.bw, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
		w.header.Write(w.bw)
		w.bw.WriteString("\r\n")
		return
	}
	w.wroteHeader = true
	w.status = code
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.declared = n
		} else {
			w.header.Del("Content-Length")
		}
	}
}

// bodyAllowed tells whether the status may carry a body.
func (w *response) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.committed {
		if len(w.buf)+len(p) <= bodyBuffer {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		if err := w.commit(false); err != nil {
			return 0, err
		}
	}
	return w.send(p)
}

// send writes p as the framing wants.
func (w *response) send(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.chunked {
		fmt.Fprintf(w.bw, "%x\r\n", len(p))
		if _, err := w.bw.Write(p); err != nil {
			return 0, err
		}
		_, err := w.bw.WriteString("\r\n")
		return len(p), err
	}
	return w.bw.Write(p)
}

// Flush sends what is held back and what the connection buffers.
func (w *response) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		if w.commit(false) != nil {
			return
		}
	}
	w.bw.Flush()
}

// SetWriteDeadline and SetReadDeadline are for http.ResponseController.
func (w *response) SetWriteDeadline(t time.Time) error { return w.conn.rwc.SetWriteDeadline(t) }
func (w *response) SetReadDeadline(t time.Time) error  { return w.conn.rwc.SetReadDeadline(t) }

// commit sends the status line and header, then what is held back. final
// says the handler is done: the held bytes are the whole body.
func (w *response) commit(final bool) error {
	w.committed = true
	h := w.header
	head := w.req.Method == http.MethodHead
	switch {
	case !w.bodyAllowed():
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
	case w.declared >= 0:
	case final && !head, final && head && w.written > 0:
		h.Set("Content-Length", strconv.FormatInt(w.written, 10))
	case final && head:
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		h.Del("Content-Length")
		h.Set("Transfer-Encoding", "chunked")
	default:
		w.closeAfter = true // HTTP/1.0: the body ends with the connection
	}
	if _, ok := h["Content-Type"]; !ok && len(w.buf) > 0 {
		h.Set("Content-Type", http.DetectContentType(w.buf))
	}
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if strings.EqualFold(h.Get("Connection"), "close") || w.conn.srv.shuttingDown() {
		w.closeAfter = true
	}
	if w.closeAfter || w.req.Close {
		h.Set("Connection", "close")
	} else if !w.req.ProtoAtLeast(1, 1) {
		h.Set("Connection", "keep-alive")
	}
	fmt.Fprintf(w.bw, "HTTP/1.1 %d %s\r\n", w.status, statusText(w.status))
	if err := h.Write(w.bw); err != nil {
		return err
	}
	if _, err := w.bw.WriteString("\r\n"); err != nil {
		return err
	}
	held := w.buf
	w.buf = nil
	_, err := w.send(held)
	return err
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "status code " + strconv.Itoa(code)
}

// finish ends the answer after the handler returned.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.chunked {
		w.bw.WriteString("0\r\n\r\n")
	}
	if w.declared >= 0 && w.written < w.declared && w.req.Method != http.MethodHead {
		w.closeAfter = true // the client waits for bytes that never come
	}
}

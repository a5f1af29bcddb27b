package jeri

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/internal/metrics"
)

// Defaults of a server's caps.
const (
	// DefaultMaxConns and DefaultMaxPerSource: JGDMS multiplexes the
	// calls a program makes at once on its connections (64 threads
	// renewing at once used one, TestJavaBusyProgram), opening more
	// when they are busy; 16 a source is twice what was refused before
	// (8), and each connection holds a message buffer (64 KiB) beside
	// what MaxBuffered bounds, so a flood from two addresses stays
	// within the daemon's memory bound (TestFloodJavaPort: 32 a source
	// passed it by a megabyte under CI's load).
	DefaultMaxConns     = 256
	DefaultMaxPerSource = 16
	// DefaultMaxRequest bounds one call's bytes: a registration with a
	// 100 kB service object fits many times over.
	DefaultMaxRequest = 1 << 20
	// DefaultMaxCalls bounds the calls one connection has running.
	DefaultMaxCalls = 16
	// DefaultMaxBuffered bounds the bytes one connection's calls hold,
	// from the first byte of each until its handler returns: a client
	// cannot make jinid hold more than this for it by opening sessions
	// and never ending them (256 sessions of a megabyte each, else).
	DefaultMaxBuffered = 4 << 20
	// DefaultMaxBufferedTotal bounds the same over every connection.
	DefaultMaxBufferedTotal = 32 << 20
	// DefaultProgress: a connection with a call not yet whole must send
	// at least MinProgress bytes every DefaultProgress, or finish it;
	// else it is closed (one byte of a call, then silence, holds
	// nothing for long).
	DefaultProgress = 10 * time.Second
	// MinProgress is the bytes a call not yet whole must bring each
	// progress interval.
	MinProgress = 1024
	// DefaultIdle closes a connection with no session for this long;
	// Java closes its own after 15 s.
	DefaultIdle = 2 * time.Minute
	// handshakeTimeout bounds the wait for a client's connection
	// header.
	handshakeTimeout = 10 * time.Second
	// rationWait bounds how long a reply waits for a client to grant
	// ration before the connection is given up.
	rationWait = 30 * time.Second
)

// Handler answers one call: the bytes a client sent on a session, up to
// its end of file. It must always answer; the reply goes back on the
// session. ctx ends when the connection does.
type Handler func(ctx context.Context, req []byte, conn Conn) []byte

// Conn says which connection a call came on.
type Conn struct {
	Local, Remote net.Addr
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Handler Handler
	// MaxConns, MaxPerSource: connections at once, in all and from one
	// address. MaxRequest: bytes of one call. MaxCalls: calls running at
	// once on one connection. Idle: a connection with nothing running
	// is closed after this long. Zero means the defaults.
	MaxConns, MaxPerSource int
	MaxRequest             int
	MaxCalls               int
	Idle                   time.Duration
	// MaxBuffered and MaxBufferedTotal bound the bytes held for calls,
	// from a session's first byte until its handler returns, on one
	// connection and on all; a call that would pass either is a protocol
	// error and its connection is closed. Progress is the interval in
	// which a call not yet whole must bring MinProgress bytes.
	MaxBuffered, MaxBufferedTotal int
	Progress                      time.Duration
	// Allow, if set, says whether a connection from remote may be served
	// at all (it may do something on this daemon): one it refuses is
	// closed before anything is read from it.
	Allow func(remote net.Addr) bool
	// SourceBits4 and SourceBits6: the per-source cap counts addresses by
	// these prefix lengths (an IPv6 host has a /64 of its own); zero
	// means connlimit's defaults.
	SourceBits4, SourceBits6 int
	// MaxConnsKey and MaxPerSourceKey name the settings of MaxConns and
	// MaxPerSource, for the log line of a connection refused.
	MaxConnsKey, MaxPerSourceKey string
	// Metrics, if set, counts the connections refused, by cap.
	Metrics *metrics.Registry
	Logger  *slog.Logger
}

// Server is the server side of the mux protocol on a listener.
type Server struct {
	cfg  ServerConfig
	ln   *connlimit.Limited
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	// buffered is what every connection's calls hold.
	buffered atomic.Int64
	// bufs keeps the buffers of calls that never reached a handler
	// (cut off, aborted, outgrown), by size (a power of two), for the
	// next call: a flood cut off and reconnecting at once then reuses
	// memory instead of leaving garbage for a collector that may be
	// short of CPU.
	bufs [32]sync.Pool

	// ProtocolErrors counts connections closed for breaking the
	// protocol; Disallowed, those not served for their source.
	ProtocolErrors, Disallowed atomic.Int64
	logged                     atomic.Int64 // unix seconds of the last warning
	refusedLogged              atomic.Int64 // of the last connection refused
	refused                    *metrics.Counter
}

// NewServer returns a server for ln; it owns ln from now on.
func NewServer(ln net.Listener, cfg ServerConfig) *Server {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxPerSource <= 0 {
		cfg.MaxPerSource = DefaultMaxPerSource
	}
	if cfg.MaxRequest <= 0 {
		cfg.MaxRequest = DefaultMaxRequest
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = DefaultMaxCalls
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = DefaultMaxBuffered
	}
	if cfg.MaxBufferedTotal <= 0 {
		cfg.MaxBufferedTotal = DefaultMaxBufferedTotal
	}
	if cfg.Progress <= 0 {
		cfg.Progress = DefaultProgress
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:   cfg,
		ctx:   ctx,
		stop:  cancel,
		conns: make(map[net.Conn]struct{}),
		refused: cfg.Metrics.Counter("jinid_java_connections_refused_total",
			"Java clients' Jini ERI connections closed on accept for a cap: in all (total) or from one source (source).", "cap"),
	}
	s.ln = connlimit.Listener(ln, connlimit.Config{Max: cfg.MaxConns, PerSource: cfg.MaxPerSource, Loopback: cfg.MaxPerSource,
		SourceBits4: cfg.SourceBits4, SourceBits6: cfg.SourceBits6, OnRefuse: s.onRefuse})
	return s
}

// onRefuse counts a connection refused and says so, now and then: a
// Java program cut off by a cap fails its calls with nothing else to
// tell why.
func (s *Server) onRefuse(src netip.Addr, perSource bool) {
	which, most, key := "total", s.cfg.MaxConns, s.cfg.MaxConnsKey
	if perSource {
		which, most, key = "source", s.cfg.MaxPerSource, s.cfg.MaxPerSourceKey
	}
	s.refused.Inc(which)
	now := time.Now().Unix()
	if last := s.refusedLogged.Load(); now-last >= 10 && s.refusedLogged.CompareAndSwap(last, now) {
		s.cfg.Logger.Warn("a Java client's connection refused: over the cap of connections "+map[string]string{"total": "in all", "source": "from one source"}[which],
			"source", src, "cap", most, "setting", key, "refusedSoFar", s.ln.Refused.Load())
	}
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Refused counts connections closed for a cap.
func (s *Server) Refused() int64 { return s.ln.Refused.Load() }

// Buffered is the bytes held for calls on every connection now.
func (s *Server) Buffered() int64 { return s.buffered.Load() }

// Start begins accepting.
func (s *Server) Start(context.Context) error {
	s.wg.Add(1)
	go s.accept()
	return nil
}

// Shutdown stops accepting, closes every connection and waits for the
// calls running on them.
func (s *Server) Shutdown(context.Context) error {
	s.stop()
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.warn("accepting Jini ERI connection", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		if s.cfg.Allow != nil && !s.cfg.Allow(c.RemoteAddr()) {
			// Nothing to do here for this source: nothing is read.
			s.Disallowed.Add(1)
			c.Close()
			continue
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.ServeConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// warn logs at most once every 10 seconds: what a remote host triggers
// must not flood the log.
func (s *Server) warn(msg string, args ...any) {
	now := time.Now().Unix()
	if last := s.logged.Load(); now-last >= 10 && s.logged.CompareAndSwap(last, now) {
		s.cfg.Logger.Warn(msg, args...)
	}
}

// ServeConn runs the server side of the mux protocol on c until the
// client goes away, breaks the protocol or idles, and closes c.
func (s *Server) ServeConn(c net.Conn) {
	sc := &serverConn{s: s, c: c, info: Conn{Local: c.LocalAddr(), Remote: c.RemoteAddr()}}
	sc.cond = sync.NewCond(&sc.mu)
	sc.calls = make(chan struct{}, s.cfg.MaxCalls)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	err := sc.serve(ctx)
	sc.mu.Lock()
	sc.closed = true
	sc.cond.Broadcast()
	sc.mu.Unlock()
	cancel()
	sc.wg.Wait()
	c.Close()
	// What calls not yet whole held (running ones gave theirs back).
	sc.mu.Lock()
	s.buffered.Add(-int64(sc.held))
	sc.held = 0
	for i := range sc.sessions {
		if ss := &sc.sessions[i]; ss.state == sessionReceiving {
			s.reuse(ss.req)
			ss.req = nil
		}
	}
	sc.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil {
		if errors.Is(err, ErrProtocol) {
			s.ProtocolErrors.Add(1)
		}
		s.warn("Jini ERI connection closed", "peer", sc.info.Remote, "err", err)
	}
}

type sessionState int

const (
	sessionIdle sessionState = iota
	sessionReceiving
	sessionRunning
)

type session struct {
	state sessionState
	req   []byte
	// ration left for sending to the client, if it limits it.
	ration int64
	// aborted: the client gave up on the call; its reply is dropped.
	aborted bool
}

type serverConn struct {
	s    *Server
	c    net.Conn
	info Conn
	wg   sync.WaitGroup

	wmu sync.Mutex // one message on the wire at a time

	mu       sync.Mutex
	cond     *sync.Cond // ration granted, or closed
	sessions [256]session
	running  int
	buffered int   // bytes of calls not yet whole
	held     int   // bytes of calls, whole or not, until their handlers return
	limited  bool  // the client limits what we send
	initial  int64 // its initial ration per session
	closed   bool

	calls chan struct{}
}

func (sc *serverConn) serve(ctx context.Context) error {
	sc.c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	r := bufio.NewReaderSize(sc.c, 4096)
	h, err := readHeader(r)
	if err != nil {
		return err
	}
	sc.limited, sc.initial = h.ration > 0, h.ration
	// Ration 0: unlimited. What a client may send is bounded by
	// MaxRequest per call and MaxCalls per connection instead.
	if err := sc.write(appendHeader(nil, 0)); err != nil {
		return err
	}
	var buf []byte
	// While a call is not yet whole, the next MinProgress bytes must
	// come by due; each time they have, due moves Progress on. (A read
	// deadline that passes ends the connection: a read cut short leaves
	// nothing to go on with.)
	var due time.Time
	need := MinProgress
	for {
		sc.mu.Lock()
		running, receiving := sc.running > 0, sc.buffered > 0
		sc.mu.Unlock()
		switch {
		case receiving:
			if due.IsZero() {
				due, need = time.Now().Add(sc.s.cfg.Progress), MinProgress
			}
			sc.c.SetReadDeadline(due)
		case running:
			// The client waits for replies.
			due = time.Time{}
			sc.c.SetReadDeadline(time.Time{})
		default:
			due = time.Time{}
			sc.c.SetReadDeadline(time.Now().Add(sc.s.cfg.Idle))
		}
		var m message
		m, buf, err = readMessage(r, buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if receiving {
					err = fmt.Errorf("%w: a call not yet whole brought under %d bytes in %v", ErrProtocol, MinProgress, sc.s.cfg.Progress)
					msg := err.Error()
					sc.write(appendMessage(nil, opError, 0, uint16(len(msg)), []byte(msg)))
					return err
				}
				if !running {
					sc.write(appendMessage(nil, opShutdown, 0, 4, []byte("idle")))
					return nil
				}
			}
			return err
		}
		if m.op&0x80 != 0 && !due.IsZero() {
			if need -= len(m.body); need <= 0 {
				due, need = time.Now().Add(sc.s.cfg.Progress), MinProgress
			}
		}
		if err := sc.handle(ctx, m); err != nil {
			if errors.Is(err, ErrProtocol) {
				msg := err.Error()
				sc.write(appendMessage(nil, opError, 0, uint16(len(msg)), []byte(msg)))
			}
			return err
		}
	}
}

func (sc *serverConn) handle(ctx context.Context, m message) error {
	switch {
	case m.op&0x80 != 0:
		return sc.data(ctx, m)
	case m.op&0xF0 == opIncrement:
		sc.mu.Lock()
		sc.sessions[m.session].ration += increment(m)
		sc.cond.Broadcast()
		sc.mu.Unlock()
		return nil
	case m.op&0xFE == opAbort:
		sc.mu.Lock()
		ss := &sc.sessions[m.session]
		state := ss.state
		switch state {
		case sessionReceiving:
			sc.release(cap(ss.req))
			sc.s.reuse(ss.req)
			sc.buffered -= len(ss.req)
			*ss = session{}
		case sessionRunning:
			ss.aborted = true
			sc.cond.Broadcast()
		}
		sc.mu.Unlock()
		if state == sessionReceiving {
			return sc.write(appendMessage(nil, opClose, m.session, 0, nil))
		}
		return nil
	}
	switch m.op {
	case opNoOperation, opAck, opPingAck:
		return nil
	case opPing:
		return sc.write(appendMessage(nil, opPingAck, 0, m.n, nil))
	case opError:
		return fmt.Errorf("client reported an error: %q", truncate(m.body))
	}
	return fmt.Errorf("%w: message type 0x%02x from a client", ErrProtocol, m.op)
}

func (sc *serverConn) data(ctx context.Context, m message) error {
	flags := m.op & 0x1F
	if flags&(dataClose|dataAckRequired) != 0 {
		return fmt.Errorf("%w: data flags 0x%02x from a client", ErrProtocol, flags)
	}
	sc.mu.Lock()
	ss := &sc.sessions[m.session]
	if flags&dataOpen != 0 {
		if ss.state != sessionIdle {
			sc.mu.Unlock()
			return fmt.Errorf("%w: session %d opened while in use", ErrProtocol, m.session)
		}
		*ss = session{state: sessionReceiving, ration: sc.initial}
	} else if ss.state != sessionReceiving {
		sc.mu.Unlock()
		return fmt.Errorf("%w: data on session %d, which is not open", ErrProtocol, m.session)
	}
	if len(ss.req)+len(m.body) > sc.s.cfg.MaxRequest {
		sc.mu.Unlock()
		return fmt.Errorf("%w: call on session %d larger than %d bytes", ErrProtocol, m.session, sc.s.cfg.MaxRequest)
	}
	if need := len(ss.req) + len(m.body); need > cap(ss.req) {
		// What a call holds is its buffer's capacity, not its length,
		// so the growth is what is counted (append's doubling once held
		// up to twice what was counted). It doubles, to a power of two
		// (which can be reused), so each byte is copied a bounded number
		// of times; it grows just enough where the budget has no room
		// for that.
		grown := min(1<<bits.Len(uint(max(need, 2*cap(ss.req))-1)), sc.s.cfg.MaxRequest)
		if err := sc.reserve(grown - cap(ss.req)); err != nil {
			if grown = need; sc.reserve(grown-cap(ss.req)) != nil {
				sc.mu.Unlock()
				return err
			}
		}
		req := append(sc.s.buffer(grown), ss.req...)
		sc.s.reuse(ss.req)
		ss.req = req
	}
	ss.req = append(ss.req, m.body...)
	sc.buffered += len(m.body)
	if flags&dataEOF == 0 {
		sc.mu.Unlock()
		return nil
	}
	req := ss.req
	ss.req, ss.state = nil, sessionRunning
	sc.buffered -= len(req)
	sc.running++
	sc.mu.Unlock()

	// At most MaxCalls run at once; past that, reading waits, and the
	// client's sends wait behind it.
	select {
	case sc.calls <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	sc.wg.Add(1)
	go func() {
		defer sc.wg.Done()
		defer func() { <-sc.calls }()
		reply := sc.run(ctx, req)
		sc.mu.Lock()
		sc.release(cap(req))
		sc.mu.Unlock()
		if err := sc.reply(m.session, reply); err != nil {
			// The reply could not be sent whole: the connection is of no
			// more use, and the client learns so when it closes.
			sc.c.Close()
		}
	}()
	return nil
}

// run runs the handler on one call. A handler that panics (a bug a
// client's call reached) answers that call with an exception, and the
// daemon goes on serving the others: no client can stop it so.
func (sc *serverConn) run(ctx context.Context, req []byte) (reply []byte) {
	defer func() {
		if p := recover(); p != nil {
			sc.s.warn("a Java call failed inside jinid; the client was told", "remote", sc.info.Remote, "panic", fmt.Sprint(p),
				"stack", string(debug.Stack()))
			reply = throwHere(NewException("java.rmi.ServerException", "jinid failed to serve the call; see its log"))
		}
	}()
	return sc.s.cfg.Handler(ctx, req, sc.info)
}

// reply sends a call's reply on its session, within the ration the
// client grants, and ends the session (eof and close). The session is
// free again before its last message goes out: a client may open it anew
// the moment it reads that message.
func (sc *serverConn) reply(session byte, b []byte) error {
	for {
		sc.mu.Lock()
		ss := &sc.sessions[session]
		if ss.aborted {
			sc.endLocked(session)
			sc.mu.Unlock()
			return sc.write(appendMessage(nil, opClose, session, 0, nil))
		}
		n := min(len(b), fragment)
		if sc.limited {
			deadline := time.Now().Add(rationWait)
			for ss.ration <= 0 && len(b) > 0 && !sc.closed && !ss.aborted {
				if time.Now().After(deadline) {
					sc.endLocked(session)
					sc.mu.Unlock()
					return errors.New("client granted no ration")
				}
				waitCond(sc.cond, rationWait)
			}
			if sc.closed {
				sc.endLocked(session)
				sc.mu.Unlock()
				return net.ErrClosed
			}
			if ss.aborted {
				sc.mu.Unlock()
				continue
			}
			n = int(min(int64(n), ss.ration))
			ss.ration -= int64(n)
		}
		last := n == len(b)
		op := byte(opData)
		if last {
			op |= dataEOF | dataClose
			sc.endLocked(session)
		}
		sc.mu.Unlock()
		err := sc.write(appendMessage(nil, op, session, uint16(n), b[:n]))
		if err != nil || last {
			return err
		}
		b = b[n:]
	}
}

// reserve counts n more bytes held for calls against the connection's
// budget and the server's; the caller holds mu.
func (sc *serverConn) reserve(n int) error {
	if sc.held+n > sc.s.cfg.MaxBuffered {
		return fmt.Errorf("%w: calls holding more than %d bytes on one connection", ErrProtocol, sc.s.cfg.MaxBuffered)
	}
	if total := sc.s.buffered.Add(int64(n)); total > int64(sc.s.cfg.MaxBufferedTotal) {
		sc.s.buffered.Add(-int64(n))
		return fmt.Errorf("%w: calls on every connection hold %d bytes, the most they may", ErrProtocol, sc.s.cfg.MaxBufferedTotal)
	}
	sc.held += n
	return nil
}

// buffer returns an empty buffer of capacity n, one kept by reuse if
// there is one.
func (s *Server) buffer(n int) []byte {
	if k := bits.Len(uint(n)) - 1; n > 0 && n == 1<<k {
		if b, ok := s.bufs[k].Get().([]byte); ok {
			return b[:0]
		}
	}
	return make([]byte, 0, n)
}

// reuse keeps b for a later call's buffer. Only for the buffer of a call
// that never reached a handler: what a handler decodes may point into
// its bytes.
func (s *Server) reuse(b []byte) {
	if n := cap(b); n > 0 && n&(n-1) == 0 {
		s.bufs[bits.Len(uint(n))-1].Put(b[:0]) //nolint:staticcheck // a slice header's box is nothing beside the buffer
	}
}

// release gives back n bytes reserve counted; the caller holds mu.
func (sc *serverConn) release(n int) {
	sc.held -= n
	sc.s.buffered.Add(-int64(n))
}

// endLocked frees a session whose call is over.
func (sc *serverConn) endLocked(id byte) {
	sc.sessions[id] = session{}
	sc.running--
}

// waitCond waits on c (whose lock is held) for at most d.
func waitCond(c *sync.Cond, d time.Duration) {
	t := time.AfterFunc(d, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	t.Stop()
}

func (sc *serverConn) write(b []byte) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.c.SetWriteDeadline(time.Now().Add(rationWait))
	_, err := sc.c.Write(b)
	return err
}

func truncate(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

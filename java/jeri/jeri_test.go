package jeri

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/java/javaio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo answers method 1 with its long argument plus one, method 2 with
// a long string of n bytes.
type echo struct{}

func (echo) Invoke(_ context.Context, c *Call) Reply {
	switch c.Method {
	case 1:
		v, err := c.Args.ReadLong()
		if err != nil {
			return Throw(UnmarshalError("%v", err))
		}
		return Return(func(e *javaio.Encoder) error { e.WriteLong(v + 1); return nil })
	case 3:
		panic("a bug a call reached")
	case 2:
		n, err := c.Args.ReadInt()
		if err != nil {
			return Throw(UnmarshalError("%v", err))
		}
		return Return(func(e *javaio.Encoder) error { return e.WriteObject(strings.Repeat("x", int(n))) })
	}
	return Throw(UnrecognizedMethod(c.Method))
}

var objID = Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func startServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher()
	d.Export(objID, echo{})
	if cfg.Handler == nil {
		cfg.Handler = d.Handle
	}
	s := NewServer(ln, cfg)
	s.Start(t.Context())
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func dial(t *testing.T, s *Server) *ClientConn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cc, err := NewClientConn(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func request(id Uuid, method int64, args func(e *javaio.Encoder)) []byte {
	e := javaio.NewEncoder(true)
	e.WriteLong(method)
	if args != nil {
		args(e)
	}
	return append(append(id[:], 0, 0), e.Bytes()...)
}

func TestCalls(t *testing.T) {
	s := startServer(t, ServerConfig{})
	cc := dial(t, s)
	for i := range 300 { // more calls than session IDs
		reply, err := cc.Call(t.Context(), request(objID, 1, func(e *javaio.Encoder) { e.WriteLong(int64(i)) }))
		if err != nil {
			t.Fatal(err)
		}
		if reply[0] != objectHere || reply[1] != statusReturn {
			t.Fatalf("reply %x", reply)
		}
		d, err := javaio.NewDecoder(reply[2:])
		if err != nil {
			t.Fatal(err)
		}
		if v, err := d.ReadLong(); err != nil || v != int64(i)+1 {
			t.Fatalf("call %d: %d %v", i, v, err)
		}
	}
}

// A handler that panics answers its call with an exception; the server
// and the connection go on serving.
func TestPanicAnswered(t *testing.T) {
	s := startServer(t, ServerConfig{})
	cc := dial(t, s)
	reply, err := cc.Call(t.Context(), request(objID, 3, nil))
	if err != nil {
		t.Fatal(err)
	}
	if exc := thrown(t, reply); exc.Class.Name != "java.rmi.ServerException" {
		t.Fatalf("threw %s", exc.Class.Name)
	}
	reply, err = cc.Call(t.Context(), request(objID, 1, func(e *javaio.Encoder) { e.WriteLong(1) }))
	if err != nil || reply[1] != statusReturn {
		t.Fatalf("the next call: %x %v", reply, err)
	}
}

func thrown(t *testing.T, reply []byte) *javaio.Object {
	t.Helper()
	if len(reply) < 2 || reply[0] != objectHere || reply[1] != statusThrow {
		t.Fatalf("reply %x is not a throw", reply)
	}
	v, err := javaio.Decode(reply[2:])
	if err != nil {
		t.Fatal(err)
	}
	return v.(*javaio.Object)
}

// A Java call has no timeout: whatever is wrong with a call, the client
// gets an answer.
func TestEveryCallIsAnswered(t *testing.T) {
	s := startServer(t, ServerConfig{})
	cc := dial(t, s)
	reply, err := cc.Call(t.Context(), request(Uuid{9}, 1, nil))
	if err != nil || !bytes.Equal(reply, []byte{noSuchObject}) {
		t.Fatalf("unknown object: %x %v", reply, err)
	}
	reply, err = cc.Call(t.Context(), request(objID, 77, nil))
	if err != nil {
		t.Fatal(err)
	}
	exc := thrown(t, reply)
	msg, _ := exc.Get("detailMessage")
	if !exc.Class.IsA("java.rmi.UnmarshalException") || !strings.Contains(msg.(string), "unrecognized method hash 000000000000004d") {
		t.Fatalf("unknown method: %s", javaio.Dump(exc))
	}
	for name, req := range map[string][]byte{
		"short":       {1, 2, 3},
		"no stream":   append(objID[:], 0, 0, 1, 2),
		"no hash":     append(objID[:], 0, 0, 0xac, 0xed, 0, 5),
		"integrity":   append(objID[:], 0, 1, 0xac, 0xed, 0, 5),
		"bad version": append(objID[:], 7, 0),
	} {
		reply, err := cc.Call(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "bad version" {
			if !bytes.Equal(reply, []byte{objectHere, versionMismatch}) {
				t.Fatalf("%s: %x", name, reply)
			}
			continue
		}
		thrown(t, reply)
	}
}

// rawClient speaks the mux protocol byte by byte, for tests of what a
// client may do wrong.
type rawClient struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, s *Server, ration uint16) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	hdr := []byte("Jmux\x01\x00\x00\x00")
	binary.BigEndian.PutUint16(hdr[5:], ration)
	if _, err := c.Write(hdr); err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{t: t, c: c, r: bufio.NewReader(c)}
	if _, err := readHeader(rc.r); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *rawClient) send(b ...byte) {
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// closed reads until the server closes the connection and returns the
// last message, which says why.
func (rc *rawClient) closed() message {
	var last message
	for {
		m, _, err := readMessage(rc.r, nil)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, ErrProtocol) {
				return last
			}
			rc.t.Fatalf("waiting for the server to close: %v", err)
		}
		last = m
	}
}

// Garbage and truncated frames close only the connection they came on.
func TestBadFramesCloseOnlyThatConnection(t *testing.T) {
	s := startServer(t, ServerConfig{MaxRequest: 4096})
	good := dial(t, s)
	cases := map[string][]byte{
		"unknown type":         {0x7f, 0, 0, 0},
		"data without open":    {0x84, 3, 0, 1, 0},
		"close from a client":  {0x30, 0, 0, 0},
		"shutdown from client": {0x02, 0, 0, 0},
		"data close flag":      {0x9c, 0, 0, 0},
		"reopen":               {0x90, 5, 0, 1, 0, 0x90, 5, 0, 1, 0},
		"too large":            append([]byte{0x90, 1, 0x10, 0x01}, make([]byte, 4097)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			rc := dialRaw(t, s, 0)
			rc.send(b...)
			if m := rc.closed(); m.op != opError {
				t.Fatalf("last message 0x%02x, want an Error message", m.op)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		rc := dialRaw(t, s, 0)
		rc.send(0x94, 0, 0, 40, 1, 2, 3)
		rc.c.(*net.TCPConn).CloseWrite()
		rc.closed()
	})
	t.Run("not jmux", func(t *testing.T) {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Fatalf("an HTTP request got %d bytes, %v", n, err)
		}
	})
	if _, err := good.Call(t.Context(), request(objID, 1, func(e *javaio.Encoder) { e.WriteLong(1) })); err != nil {
		t.Fatalf("a good connection failed after the bad ones: %v", err)
	}
	if s.ProtocolErrors.Load() < int64(len(cases)) {
		t.Errorf("%d protocol errors counted", s.ProtocolErrors.Load())
	}
}

// A client that limits its ration (as Java does, 32 KB) never gets more
// than it granted.
func TestServerObeysClientRation(t *testing.T) {
	s := startServer(t, ServerConfig{})
	rc := dialRaw(t, s, 1) // 256 bytes per session
	const n = 5000
	e := javaio.NewEncoder(true)
	e.WriteLong(2)
	e.WriteInt(n)
	req := append(objID[:], 0, 0)
	req = append(req, e.Bytes()...)
	rc.send(appendMessage(nil, opData|dataOpen|dataEOF, 0, uint16(len(req)), req)...)
	var reply []byte
	granted := int64(256)
	for {
		m, _, err := readMessage(rc.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.op&0x80 == 0 {
			t.Fatalf("message 0x%02x", m.op)
		}
		granted -= int64(len(m.body))
		if granted < 0 {
			t.Fatalf("server sent %d bytes beyond the ration", -granted)
		}
		reply = append(reply, m.body...)
		if m.op&dataEOF != 0 {
			break
		}
		if granted == 0 {
			rc.send(appendIncrement(nil, 0, 1000)...)
			granted += 1000
		}
	}
	d, err := javaio.NewDecoder(reply[2:])
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.ReadObject()
	if err != nil || len(v.(string)) != n {
		t.Fatalf("reply: %v", err)
	}
}

func TestIncrementEncoding(t *testing.T) {
	for _, n := range []int64{1, 0xFFFF, 0x10000, 1 << 20, 123456789} {
		b := appendIncrement(nil, 3, n)
		var sum int64
		for len(b) > 0 {
			m, _, err := readMessage(bytes.NewReader(b[:4]), nil)
			if err != nil || m.op&0xF0 != opIncrement || m.session != 3 {
				t.Fatalf("%x: %v", b, err)
			}
			sum += increment(m)
			b = b[4:]
		}
		if sum != n {
			t.Errorf("%d encoded as %d", n, sum)
		}
	}
}

// The call a Java client made first against Reggie (getMemberGroups) is
// read and routed to its method.
func TestCapturedRequest(t *testing.T) {
	raw, err := os.ReadFile("../javaio/testdata/jeri/00-getMemberGroups-req.bin")
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	d := NewDispatcher()
	d.Export(Uuid(raw[:16]), objectFunc(func(_ context.Context, c *Call) Reply {
		got = c.Method
		return Return(nil)
	}))
	reply := d.Handle(t.Context(), raw, Conn{})
	if got != 0x76ebba987a1da390 || !bytes.Equal(reply, []byte{1, 1, 0xac, 0xed, 0, 5}) {
		t.Fatalf("method %x, reply %x", got, reply)
	}
}

type objectFunc func(context.Context, *Call) Reply

func (f objectFunc) Invoke(ctx context.Context, c *Call) Reply { return f(ctx, c) }

func FuzzServeConn(f *testing.F) {
	f.Add([]byte("Jmux\x01\x00\x80\x00\x94\x00\x00\x20"))
	f.Add(append([]byte("Jmux\x01\x00\x00\x00\x94\x00\x00\x1c"), request(objID, 1, func(e *javaio.Encoder) { e.WriteLong(3) })...))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDispatcher()
		d.Export(objID, echo{})
		s := NewServer(nopListener{}, ServerConfig{Handler: d.Handle, Idle: time.Second})
		a, z := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.ServeConn(a)
		}()
		go io.Copy(io.Discard, z)
		z.Write(b)
		z.Close()
		<-done
		s.Shutdown(context.Background())
	})
}

type nopListener struct{}

func (nopListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (nopListener) Close() error              { return nil }
func (nopListener) Addr() net.Addr            { return &net.TCPAddr{} }

// Java reuses session 0 for every call, opening it again the moment it
// has read the reply: the session must be free by then.
func TestSessionReusedAtOnce(t *testing.T) {
	s := startServer(t, ServerConfig{})
	rc := dialRaw(t, s, 0)
	req := request(objID, 1, func(e *javaio.Encoder) { e.WriteLong(1) })
	for i := range 500 {
		rc.send(appendMessage(nil, opData|dataOpen|dataEOF, 0, uint16(len(req)), req)...)
		for {
			m, _, err := readMessage(rc.r, nil)
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if m.op == opError {
				t.Fatalf("call %d: %s", i, m.body)
			}
			if m.op&0x80 != 0 && m.op&dataEOF != 0 {
				break
			}
		}
	}
}

// FuzzClientCall: whatever a server answers (a Java listener, or
// anything at its address), a call ends with a reply or an error.
func FuzzClientCall(f *testing.F) {
	f.Add([]byte{0x8c, 0, 0, 6, 1, 1, 0xac, 0xed, 0, 5})
	f.Add([]byte{0x10, 0, 0, 1, 0x04, 0, 0, 7, 0x8c, 0, 0, 1, 0})
	f.Add([]byte{0x08, 0, 0, 3, 'b', 'a', 'd'})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, z := net.Pipe()
		defer a.Close()
		go func() {
			defer z.Close()
			var hdr [8]byte
			if _, err := io.ReadFull(z, hdr[:]); err != nil {
				return
			}
			z.Write([]byte("Jmux\x01\x00\x00\x00"))
			go io.Copy(io.Discard, z)
			z.Write(b)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cc, err := NewClientConn(ctx, a)
		if err != nil {
			return
		}
		cc.Call(ctx, request(objID, 1, nil))
	})
}

// A connection over a cap is refused with a word: counted by cap on the
// metrics, and logged (rate-limited) with the setting that raises it. A
// Java program cut off was told nothing, and nothing counted it.
func TestRefusalsSaid(t *testing.T) {
	reg := metrics.New()
	var logs testenv.Buffer
	s := startServer(t, ServerConfig{MaxPerSource: 1, MaxPerSourceKey: "limits.javaConnsPerSource", Metrics: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	dial(t, s)
	for range 3 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Read(make([]byte, 1)) // closed on accept
		c.Close()
	}
	testenv.Until(t, "three refusals counted", func() bool { return s.Refused() == 3 })
	var b strings.Builder
	reg.WritePrometheus(&b)
	if !strings.Contains(b.String(), `jinid_java_connections_refused_total{cap="source"} 3`) {
		t.Errorf("refusals on the metrics:\n%s", b.String())
	}
	if n := strings.Count(logs.String(), "connection refused: over the cap of connections from one source"); n != 1 ||
		!strings.Contains(logs.String(), "setting=limits.javaConnsPerSource") {
		t.Errorf("%d lines for 3 refusals in 10 s, want 1 naming the setting:\n%s", n, logs.String())
	}
}

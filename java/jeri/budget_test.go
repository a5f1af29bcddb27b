package jeri

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// openPart sends the first n bytes of a call on session id: data, not
// the end.
func (rc *rawClient) openPart(id byte, n int) {
	rc.t.Helper()
	for first := true; n > 0; first = false {
		k := min(n, 60_000)
		op := byte(opData)
		if first {
			op |= dataOpen
		}
		rc.send(appendMessage(nil, op, id, uint16(k), make([]byte, k))...)
		n -= k
	}
}

// A client that opens session after session and never ends a call holds
// no more than the connection's budget: the call that would pass it ends
// the connection with a protocol error, and what it held is given back.
func TestBufferedBudgetPerConnection(t *testing.T) {
	s := startServer(t, ServerConfig{MaxBuffered: 256 << 10, MaxBufferedTotal: 1 << 20})
	rc := dialRaw(t, s, 0)
	for id := range 10 { // 10 × 60 KB: the fifth passes 256 KB
		if _, err := rc.c.Write(appendMessage(nil, opData|dataOpen, byte(id), 60_000, make([]byte, 60_000))); err != nil {
			break // closed already
		}
	}
	// Closed with a protocol error (the client, still sending, may see
	// only the reset).
	testenv.Until(t, "the connection closed for the budget", func() bool { return s.ProtocolErrors.Load() == 1 })
	testenv.Until(t, "the budget given back", func() bool { return s.Buffered() == 0 })
	// A good client is served.
	good := dial(t, s)
	if _, err := good.Call(t.Context(), request(objID, 1, nil)); err != nil {
		t.Fatalf("a good client after: %v", err)
	}
}

// Over every connection the server holds no more than its total budget.
func TestBufferedBudgetInAll(t *testing.T) {
	s := startServer(t, ServerConfig{MaxBuffered: 200 << 10, MaxBufferedTotal: 500 << 10, MaxPerSource: 10})
	var rcs []*rawClient
	for range 3 {
		rc := dialRaw(t, s, 0)
		rc.openPart(0, 180_000)
		rcs = append(rcs, rc)
	}
	// Two hold 360 KB; the third would pass 500 KB.
	testenv.Until(t, "the third connection closed for the budget", func() bool { return s.ProtocolErrors.Load() == 1 })
	testenv.Until(t, "two connections' bytes held", func() bool { return s.Buffered() == 360_000 })
	for _, rc := range rcs[:2] {
		rc.c.Close()
	}
	testenv.Until(t, "everything given back", func() bool { return s.Buffered() == 0 })
}

// What is counted against the budgets is the memory a call's bytes hold:
// its buffer's capacity, which grows by doubling, not only the bytes in it
// (a flood under load once held about twice its budget so).
func TestBufferedCountsWhatIsHeld(t *testing.T) {
	s := startServer(t, ServerConfig{MaxBuffered: 1 << 20, MaxBufferedTotal: 4 << 20})
	rc := dialRaw(t, s, 0)
	rc.openPart(0, 180_000) // 60,000 three times: a buffer of 64 KiB, then 128 KiB, then 256 KiB
	testenv.Until(t, "the call's buffer counted", func() bool { return s.Buffered() == 256<<10 })
	rc.c.Close()
	testenv.Until(t, "everything given back", func() bool { return s.Buffered() == 0 })
}

// One byte of a call, then silence: closed within the progress interval,
// not held for ever (a call under way on the same connection does not
// lift the rule).
func TestIncompleteCallMustProgress(t *testing.T) {
	s := startServer(t, ServerConfig{Progress: 200 * time.Millisecond})
	rc := dialRaw(t, s, 0)
	start := time.Now()
	rc.send(appendMessage(nil, opData|dataOpen, 3, 1, []byte{0})...)
	if m := rc.closed(); m.op != opError {
		t.Fatalf("last message 0x%02x, want an Error message", m.op)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("closed after %v", took)
	}
	// Steady progress is not cut off: a call sent in small pieces, each
	// interval bringing its kilobyte, is answered.
	rc = dialRaw(t, s, 0)
	req := request(objID, 1, nil)
	pad := make([]byte, 1500)
	rc.send(appendMessage(nil, opData|dataOpen, 0, uint16(len(req)), req)...)
	pace := time.NewTicker(100 * time.Millisecond) // a slow sender's pace
	defer pace.Stop()
	for range 3 {
		<-pace.C
		rc.send(appendMessage(nil, opData, 0, uint16(len(pad)), pad)...)
	}
	rc.send(appendMessage(nil, opData|dataEOF, 0, 0, nil)...)
	m, _, err := readMessage(rc.r, nil)
	if err != nil || m.op&0x80 == 0 {
		t.Fatalf("a slow but steady call: 0x%02x %v", m.op, err)
	}
}

// A connection from a source that may do nothing here is closed before
// anything is read from it.
func TestDisallowedSourceClosedAtOnce(t *testing.T) {
	s := startServer(t, ServerConfig{Allow: func(net.Addr) bool { return false }})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, _ := io.Copy(io.Discard, c); n != 0 {
		t.Fatalf("%d bytes from the server", n)
	}
	testenv.Until(t, "counted", func() bool { return s.Disallowed.Load() == 1 })
}

// Whatever several clients send on several connections at once, the
// bytes held never pass the budgets, and all are given back once the
// connections end.
func FuzzBufferedBudget(f *testing.F) {
	f.Add([]byte{0, 0x90, 1, 0x10, 0, 1, 0x90, 2, 0x10, 0, 2, 0x80, 1, 0x20, 0})
	f.Add([]byte{0, 0x94, 0, 0x00, 0x1c, 3, 0x90, 9, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		const conns, perConn, total = 4, 16 << 10, 40 << 10
		d := NewDispatcher()
		d.Export(objID, echo{})
		s := NewServer(nopListener{}, ServerConfig{Handler: d.Handle, Idle: time.Second, Progress: time.Second,
			MaxBuffered: perConn, MaxBufferedTotal: total})
		var clients [conns]net.Conn
		done := make(chan struct{}, conns)
		for i := range clients {
			a, z := net.Pipe()
			clients[i] = z
			go func() {
				s.ServeConn(a)
				done <- struct{}{}
			}()
			go io.Copy(io.Discard, z)
			z.Write([]byte("Jmux\x01\x00\x00\x00"))
		}
		// b is chunks: a connection's index, an op, a session, then a
		// length whose bytes follow as zeros.
		for len(b) >= 4 {
			c, op, id, n := int(b[0])%conns, b[1], b[2], int(b[3])<<8
			b = b[4:]
			if op&0x80 != 0 {
				clients[c].SetWriteDeadline(time.Now().Add(time.Second))
				clients[c].Write(appendMessage(nil, op, id, uint16(n), make([]byte, n)))
			}
			if held := s.Buffered(); held > total {
				t.Fatalf("%d bytes held, budget %d", held, total)
			}
		}
		for _, z := range clients {
			z.Close()
		}
		for range conns {
			<-done
		}
		s.Shutdown(context.Background())
		if held := s.Buffered(); held != 0 {
			t.Fatalf("%d bytes still counted once every connection ended", held)
		}
	})
}

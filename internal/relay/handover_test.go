package relay

import (
	"errors"
	"net"
	"testing"
)

// A Handover's connections go to the listener taken last; the one taken
// before accepts no more, and closing it leaves the real listener open;
// closing the last closes it, and its accept loop ends.
func TestHandover(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandover(raw)
	first := h.Take()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	accept := func(ln net.Listener, from net.Conn) {
		t.Helper()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.RemoteAddr().String() != from.LocalAddr().String() {
			t.Errorf("accepted %v, want %v", c.RemoteAddr(), from.LocalAddr())
		}
	}
	accept(first, dial())

	second := h.Take()
	if _, err := first.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the listener taken before, accepting: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Error(err)
	}
	accept(second, dial()) // the real listener still open
	if second.Addr().String() != raw.Addr().String() {
		t.Errorf("address %v, want %v", second.Addr(), raw.Addr())
	}

	if err := second.Close(); err != nil {
		t.Error(err)
	}
	if _, err := second.Accept(); err == nil {
		t.Error("accepting after the last listener closed")
	}
	if c, err := net.Dial("tcp", raw.Addr().String()); err == nil {
		c.Close()
		t.Error("the real listener is still open")
	}
}

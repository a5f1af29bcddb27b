package connlimit

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestCaps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln, Config{Loopback: 3})
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var held []net.Conn
	for range 3 {
		held = append(held, <-accepted)
	}
	// The two over the cap were closed by the server.
	testenv.Until(t, "the two over the cap refused", func() bool { return l.Refused.Load() >= 2 })
	if l.Held() != 3 {
		t.Fatalf("held %d", l.Held())
	}
	// One closes: another gets in.
	held[0].Close()
	held[0].Close() // twice: released once
	if l.Held() != 2 {
		t.Fatalf("held %d after a close", l.Held())
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("not accepted after a place freed")
	}
}

func TestTake(t *testing.T) {
	l := Listener(nil, Config{Max: 3, PerSource: 2, Loopback: 1})
	a, b, lo := addr("198.18.1.2"), addr("198.18.1.3"), addr("127.0.0.1")
	for _, c := range []struct {
		src            string
		want, bySource bool // taken; refused by the per-source cap
	}{{"a", true, false}, {"a", true, false}, {"a", false, true}, {"b", true, false}, {"b", false, false}, {"lo", true, false}, {"lo", false, true}} {
		src := map[string]netip.Addr{"a": a, "b": b, "lo": lo}[c.src]
		if got, bySource := l.take(src, false); got != c.want || bySource != c.bySource {
			t.Fatalf("take %s: %v (per source %v), want %v (%v)", c.src, got, bySource, c.want, c.bySource)
		}
	}
	l.release(a, false)
	if ok, _ := l.take(b, false); !ok {
		t.Fatal("b refused with a place free")
	}
}

// An exempt source (a node of a cluster, forwarding) is not held to the
// per-source cap; the cap in all still holds it.
func TestExempt(t *testing.T) {
	node := addr("198.18.1.9")
	l := Listener(nil, Config{Max: 3, PerSource: 1, Exempt: func(a netip.Addr) bool { return a == node }})
	for i := range 3 {
		if ok, _ := l.take(node, true); !ok {
			t.Fatalf("exempt connection %d refused under Max", i+1)
		}
	}
	if ok, _ := l.take(node, true); ok {
		t.Fatal("an exempt source passed Max")
	}
	l.release(node, true)
	first, _ := l.take(addr("198.18.1.2"), false)
	second, _ := l.take(addr("198.18.1.2"), false)
	if !first || second {
		t.Fatal("the per-source cap of another source changed")
	}
}

// A capped connection can still be half-closed, as the API server does
// when a client sends a body it will not read.
func TestCloseWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln, Config{Max: 1})
	defer l.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			io.Copy(io.Discard, c) // until the server's FIN
			c.Close()
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		t.Fatal("a capped TCP connection cannot be half-closed")
	}
}

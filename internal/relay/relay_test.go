package relay

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers each line with "name: line" until the client
// closes.
func echoServer(t *testing.T, name string) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					io.WriteString(c, name+": "+sc.Text()+"\n")
				}
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

func ask(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("after %q: %v", line, err)
	}
	return strings.TrimSpace(got)
}

// A connection is joined to the first target that answers; one with no
// target known is closed; after Handoff the connections forwarded end
// and the next ones are the new server's.
func TestForwardThenHandoff(t *testing.T) {
	holder := echoServer(t, "holder")
	dead := netip.MustParseAddrPort("127.0.0.1:1") // nothing listens there
	var targets atomic.Value
	targets.Store([]netip.AddrPort{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := New(ln, Config{Targets: func() []netip.AddrPort { return targets.Load().([]netip.AddrPort) }})
	f.Start(context.Background())

	// No holder known: closed at once.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection with no holder known was not closed")
	}
	c.Close()

	targets.Store([]netip.AddrPort{dead, holder})
	c, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := ask(t, c, "hello"); got != "holder: hello" {
		t.Fatalf("forwarded: %q", got)
	}

	hl := f.Handoff()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a forwarded connection outlived the handoff")
	}
	served := make(chan string, 1)
	go func() {
		s, err := hl.Accept()
		if err != nil {
			served <- err.Error()
			return
		}
		defer s.Close()
		line, _ := bufio.NewReader(s).ReadString('\n')
		io.WriteString(s, "self: "+line)
		served <- "ok"
	}()
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := ask(t, c2, "again"); got != "self: again" {
		t.Fatalf("after the handoff: %q", got)
	}
	if s := <-served; s != "ok" {
		t.Fatal(s)
	}
	if err := hl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := hl.Accept(); err == nil {
		t.Fatal("Accept after Close")
	}
}

// Shutdown closes the listener and every forwarded connection.
func TestShutdown(t *testing.T) {
	holder := echoServer(t, "holder")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := New(ln, Config{Targets: func() []netip.AddrPort { return []netip.AddrPort{holder} }})
	f.Start(context.Background())
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := ask(t, c, "hi"); got != "holder: hi" {
		t.Fatalf("forwarded: %q", got)
	}
	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a forwarded connection outlived Shutdown")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener still accepts")
	}
}

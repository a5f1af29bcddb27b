// Package namespace runs network setup inside a Linux network namespace,
// so one process can hold sockets in several namespaces (as the virtual-LAN
// tests do) while the daemon, by default, stays in its own.
package namespace

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
)

// Namespace is a network namespace. The zero value is the process's own,
// and costs nothing to use.
type Namespace struct {
	name string
	h    netns.NsHandle
	set  bool
}

// Current returns the process's own namespace.
func Current() Namespace { return Namespace{} }

// FromHandle wraps an open namespace handle; the caller keeps it open for as
// long as the Namespace is used.
func FromHandle(name string, h netns.NsHandle) Namespace {
	return Namespace{name: name, h: h, set: true}
}

// String names the namespace for logs.
func (n Namespace) String() string {
	if !n.set {
		return "(current)"
	}
	return n.name
}

// IsCurrent reports whether n is the process's own namespace.
func (n Namespace) IsCurrent() bool { return !n.set }

// Handle returns the namespace handle and whether there is one (false for
// the process's own namespace).
func (n Namespace) Handle() (netns.NsHandle, bool) { return n.h, n.set }

// Do runs fn with the calling goroutine's thread switched into n. Sockets
// created in fn stay in n after Do returns. fn must not start goroutines
// that create sockets: they would run on other threads.
func (n Namespace) Do(fn func() error) error {
	if !n.set {
		return fn()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading the current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(n.h); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", n.name, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// The thread is stuck in the wrong namespace: leave it locked so
		// the runtime retires it rather than reusing it.
		return fmt.Errorf("leaving network namespace %s: %w", n.name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// DialContext dials with d (the zero Dialer if nil) from inside n: the
// one way jinid connects from a namespace (a connection's socket belongs
// to the namespace it was made in).
func (n Namespace) DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	var conn net.Conn
	err := n.Do(func() error {
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Dialer is DialContext with d, as a dial function.
func (n Namespace) Dialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return n.DialContext(ctx, d, network, addr)
	}
}

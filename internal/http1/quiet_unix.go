//go:build unix

package http1

import (
	"net"
	"syscall"
)

// quiet reports whether a connection has nothing to read and has not
// been closed by its peer, without waiting or taking a byte: a peek
// that would block. (A read with a deadline already past never reaches
// the socket in Go, so it cannot tell.) A TLS connection is looked at
// through to its TCP one: a close_notify is bytes, which say "closed"
// as well as an end does.
func quiet(c net.Conn) bool {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true // cannot tell: a failure before any answer says
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n < 0 && (rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return err == nil && open
}

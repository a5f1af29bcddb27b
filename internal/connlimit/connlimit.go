// Package connlimit caps the connections a listener holds: in all, and
// from one source address. A connection over a cap is accepted and closed
// at once, so it costs neither a file descriptor for long nor a place in
// the kernel's backlog ahead of others (a listener that stopped accepting
// would let a flood of silent connections starve everyone). Loopback can
// be given a budget of its own, so that the host's own checks (a health
// probe) get through whatever the LAN does.
package connlimit

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Config says the caps; a zero cap is no cap.
type Config struct {
	// Max is the most connections held at once from other hosts.
	Max int
	// PerSource is the most from one source address.
	PerSource int
	// Loopback is the most from this host (loopback addresses), counted
	// apart from Max and PerSource.
	Loopback int
	// SourceBits4 and SourceBits6 are the prefix lengths a source is
	// counted by: every address in one IPv4 /SourceBits4 or IPv6
	// /SourceBits6 is one source. An IPv6 host has a /64 of its own and
	// may take any address in it, so by default IPv6 sources are /64s
	// and IPv4 ones single addresses (DefaultSourceBits4, 6).
	SourceBits4, SourceBits6 int
	// Exempt, if set, names sources PerSource does not apply to (Max
	// still does): a node of a cluster forwarding its segment's
	// clients, each of which it counted itself. It is asked on the
	// accept path and must not block.
	Exempt func(netip.Addr) bool
	// OnRefuse, if set, hears each connection refused: its source, and
	// whether the per-source cap (else the total) refused it. It is
	// called on the accept path and must not block.
	OnRefuse func(src netip.Addr, perSource bool)
}

// The prefix lengths sources are counted by unless configured.
const (
	DefaultSourceBits4 = 32
	DefaultSourceBits6 = 64
)

// Source is the source address a counts as, in prefixes of bits4 (IPv4)
// or bits6 (IPv6) bits, zero meaning the defaults: the first address of
// its prefix.
func Source(a netip.Addr, bits4, bits6 int) netip.Addr {
	a = a.Unmap().WithZone("")
	bits, def := bits6, DefaultSourceBits6
	if a.Is4() {
		bits, def = bits4, DefaultSourceBits4
	}
	if bits <= 0 {
		bits = def
	}
	if p, err := a.Prefix(bits); err == nil {
		return p.Addr()
	}
	return a
}

// Listener wraps ln.
func Listener(ln net.Listener, cfg Config) *Limited {
	return &Limited{Listener: ln, cfg: cfg, bySource: map[netip.Addr]int{}}
}

// Limited is a listener with caps.
type Limited struct {
	net.Listener
	cfg Config

	mu       sync.Mutex
	total    int
	loopback int
	bySource map[netip.Addr]int

	// Refused counts connections closed for a cap.
	Refused atomic.Int64
}

// Accept returns the next connection within the caps.
func (l *Limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := l.sourceOf(c)
		ex := false
		if l.cfg.Exempt != nil && src.IsValid() && !src.IsLoopback() {
			ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
			ex = err == nil && l.cfg.Exempt(ap.Addr().Unmap().WithZone(""))
		}
		if ok, perSource := l.take(src, ex); !ok {
			c.Close()
			if l.cfg.OnRefuse != nil {
				l.cfg.OnRefuse(src, perSource)
			}
			// Counted once told: who sees Refused move sees what the
			// listener said of it.
			l.Refused.Add(1)
			continue
		}
		return &conn{Conn: c, release: func() { l.release(src, ex) }}, nil
	}
}

// Held reports the connections held now.
func (l *Limited) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total + l.loopback
}

func (l *Limited) sourceOf(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{} // a unix socket: one source
	}
	if ap.Addr().Unmap().IsLoopback() {
		return ap.Addr().Unmap().WithZone("")
	}
	return Source(ap.Addr(), l.cfg.SourceBits4, l.cfg.SourceBits6)
}

// take counts a connection from src; an exempt source (Config.Exempt)
// counts in all only. Refused, it says whether the per-source cap (or
// loopback's) refused it.
func (l *Limited) take(src netip.Addr, exempt bool) (ok, perSource bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if exempt {
		if l.cfg.Max > 0 && l.total >= l.cfg.Max {
			return false, false
		}
		l.total++
		return true, false
	}
	if src.IsLoopback() {
		if l.cfg.Loopback > 0 && l.loopback >= l.cfg.Loopback {
			return false, true
		}
		l.loopback++
		return true, false
	}
	if l.cfg.Max > 0 && l.total >= l.cfg.Max {
		return false, false
	}
	if l.cfg.PerSource > 0 && l.bySource[src] >= l.cfg.PerSource {
		return false, true
	}
	l.total++
	l.bySource[src]++
	return true, false
}

func (l *Limited) release(src netip.Addr, exempt bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if exempt {
		l.total--
		return
	}
	if src.IsLoopback() {
		l.loopback--
		return
	}
	l.total--
	if l.bySource[src]--; l.bySource[src] <= 0 {
		delete(l.bySource, src)
	}
}

// conn gives its place back when closed, once.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes a TCP connection, as a server ending one whose
// client still sends needs (the connection stays counted until Close).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/httpjson"
)

// AdminTokenFile is where the first start writes the first admin token,
// in the data directory.
const AdminTokenFile = "admin.token"

// listenSocket opens the API's unix socket: mode 0660, owned by group if
// one is given. A socket file left by a jinid that is gone is replaced;
// one another jinid serves is not.
func listenSocket(path, group string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("API socket %s: another jinid serves on it (give this one --api-socket PATH)", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("API socket %s: removing the one left behind: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	gid := -1
	if group != "" {
		if gid, err = groupID(group); err != nil {
			ln.Close()
			return nil, fmt.Errorf("API socket group %q: %w", group, err)
		}
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("API socket %s: %w", path, err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("API socket %s: giving it to group %s: %w", path, group, err)
		}
	}
	return ln, nil
}

func groupID(group string) (int, error) {
	if n, err := strconv.Atoi(group); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// addrsCache keeps the process's interface addresses for a moment: the
// Host check reads them on every request.
type addrsCache struct {
	mu    sync.Mutex
	addrs []netip.Addr
	at    time.Time
}

func (c *addrsCache) get() []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < 2*time.Second {
		return c.addrs
	}
	c.addrs, c.at = nil, time.Now()
	ifaddrs, _ := net.InterfaceAddrs()
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			c.addrs = append(c.addrs, p.Addr().Unmap())
		}
	}
	return c.addrs
}

// hostAllowed says whether a request's Host names this daemon: one of
// its addresses (or a node's of its cluster), localhost, its host names (with .local, and the DNS-SD
// one), --advertise, or a name given with --api-host. Anything else is a
// name an attacker's DNS pointed here (DNS rebinding).
func (d *Daemon) hostAllowed(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("").Unmap()
		// Or a node of its cluster's, which forwarded the request.
		return slices.Contains(d.apiAddrs.get(), a) || slices.Contains(d.memberAddrs(), a)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return slices.Contains(d.hostNames, host)
}

// names are the host names the API answers to.
func (d *Daemon) names() []string { return d.namesFor(d.registrar.Meta().ServiceID) }

// namesFor are the host names the API of the lookup service id answers
// to.
func (d *Daemon) namesFor(id discovery.ServiceID) []string {
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" {
		h = strings.ToLower(h)
		names = append(names, h, strings.Split(h, ".")[0]+".local")
	}
	names = append(names, "jinid-"+id.String()[:8]+".local")
	if d.cfg.Advertise != "" {
		names = append(names, strings.ToLower(d.cfg.Advertise))
	}
	for _, n := range d.cfg.APIHosts {
		names = append(names, strings.ToLower(strings.TrimSuffix(n, ".")))
	}
	return names
}

// primaryAddr is the address this host is best reached at when the peer
// says nothing about it (the unix socket): the first global IPv4 address
// of an interface that is up, else the first global IPv6 one.
func primaryAddr() (netip.Addr, bool) {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, false
	}
	var v6 netip.Addr
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			p, err := netip.ParsePrefix(a.String())
			if err != nil || !p.Addr().IsGlobalUnicast() {
				continue
			}
			if p.Addr().Is4() {
				return p.Addr(), true
			}
			if !v6.IsValid() {
				v6 = p.Addr()
			}
		}
	}
	return v6, v6.IsValid()
}

// bracket writes an address as a URL host: IPv6 in brackets, no zone
// (ours names an interface of this host, meaningless to the peer).
func bracket(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

// peerHost is this daemon's host as a peer that reached it at local sees
// it: --advertise when given; for a peer on this host (the unix socket,
// loopback) the host's primary address, which others reach too, since
// what it is handed (a mailbox listener URL) may be given on; otherwise
// the address it reached.
func (d *Daemon) peerHost(local netip.Addr) string {
	if d.cfg.Advertise != "" {
		if a, err := netip.ParseAddr(d.cfg.Advertise); err == nil {
			return bracket(a)
		}
		return d.cfg.Advertise
	}
	if !local.IsValid() || local.IsLoopback() {
		bound := d.apiBound()
		if p, ok := primaryAddr(); ok && (bound.IsUnspecified() || bound == p) {
			return bracket(p)
		}
		if local.IsValid() {
			return bracket(local)
		}
		return bracket(bound)
	}
	return bracket(local)
}

// apiPort is the port the network API listens on (0 before it does).
func (d *Daemon) apiPort() int {
	if d.apiLn == nil {
		return 0
	}
	ap, _ := netip.ParseAddrPort(d.apiLn.Addr().String())
	return int(ap.Port())
}

// apiBound is the address the network API listens on.
func (d *Daemon) apiBound() netip.Addr {
	ap, _ := netip.ParseAddrPort(d.apiLn.Addr().String())
	return ap.Addr().Unmap()
}

// apiURL is the API's base URL for a peer that reached this host at
// local (the invalid address: on the unix socket), or "" when that peer
// cannot reach the API: it listens on loopback and the peer is elsewhere.
// Never loopback or unspecified for a remote peer.
func (d *Daemon) apiURL(local netip.Addr) string {
	scheme := "http"
	if d.cfg.TLSCert != "" {
		scheme = "https"
	}
	port := strconv.Itoa(d.apiPort())
	bound := d.apiBound()
	switch {
	case d.cfg.Advertise != "":
	case bound.IsLoopback():
		if local.IsValid() && !local.IsLoopback() {
			return ""
		}
		return scheme + "://" + net.JoinHostPort(bound.String(), port)
	case !bound.IsUnspecified():
		return scheme + "://" + bracket(bound) + ":" + port
	}
	return scheme + "://" + d.peerHost(local) + ":" + port
}

// managerURL is the transaction manager's URL as participants call it
// back: the API at --advertise, else at this host's primary address.
func (d *Daemon) managerURL() string {
	a, _ := primaryAddr()
	if u := d.apiURL(a); u != "" {
		return u
	}
	return d.apiURL(netip.IPv6Loopback())
}

// connContext marks each API connection: the unix socket's as the local
// administrator's, and every one with how its peer reaches this daemon.
func (d *Daemon) connContext(ctx context.Context, c net.Conn) context.Context {
	var local netip.Addr
	if c.LocalAddr().Network() == "unix" {
		ctx = access.LocalConn(ctx)
	} else if ap, err := netip.ParseAddrPort(c.LocalAddr().String()); err == nil {
		local = ap.Addr().Unmap()
	}
	return httpjson.WithBase(ctx, httpjson.Base{URL: d.apiURL(local), Host: d.peerHost(local)})
}

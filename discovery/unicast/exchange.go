package unicast

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/jinid/jinid/discovery"
)

// ReadTimeout is how long either side of a unicast exchange waits for the
// other, as in the Java implementation.
const ReadTimeout = 60 * time.Second

// Discover runs the client side of unicast discovery over conn: it sends a
// request of the given version and reads the answer. For version 1, whose
// response carries no address, Host and Port are the connection's peer. The
// exchange ends by ctx or after ReadTimeout, whichever is sooner.
func Discover(ctx context.Context, conn net.Conn, version int) (*Response, error) {
	stop := deadline(ctx, conn)
	defer stop()
	req, err := NewRequest(version).Append(nil)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("sending unicast request to %s: %w", conn.RemoteAddr(), err)
	}
	resp, err := ReadResponse(bufio.NewReader(conn), DefaultMaxResponseSize)
	if err != nil {
		return resp, fmt.Errorf("unicast discovery with %s: %w", conn.RemoteAddr(), ctxErr(ctx, err))
	}
	if resp.Version != version {
		return resp, fmt.Errorf("unicast discovery with %s: %w: asked in version %d, answered in %d", conn.RemoteAddr(), ErrVersion, version, resp.Version)
	}
	peer, _ := netip.ParseAddrPort(conn.RemoteAddr().String())
	if version == discovery.ProtocolV1 {
		if peer.IsValid() {
			resp.Host, resp.Port = discovery.WithZone(peer.Addr().String(), peer.Addr().Zone()), int(peer.Port())
		}
	} else {
		resp.Host = dialable(resp.Host, peer)
	}
	if d := resp.Registrar.Descriptor; d != nil && peer.Addr().Zone() != "" {
		c := *d
		c.APIURL = zoneURL(d.APIURL, peer.Addr().Zone())
		resp.Registrar.Descriptor = &c
	}
	return resp, nil
}

// dialable returns the host a lookup service reached at peer says it is
// at, made usable from here: an IPv6 link-local one gets the zone of the
// link it was reached over, or, reached over no link-local address, is
// replaced by the address it was reached at (a link-local address from
// another link reaches nothing).
func dialable(host string, peer netip.AddrPort) string {
	if !peer.IsValid() {
		return host
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is6() || !a.IsLinkLocalUnicast() {
		return discovery.WithZone(host, "")
	}
	if zone := peer.Addr().Zone(); zone != "" {
		return discovery.WithZone(host, zone)
	}
	return peer.Addr().Unmap().String()
}

// zoneURL gives an http URL whose host is an IPv6 link-local address
// without a zone the zone of the link it was learnt on (written %25 in
// a URL), so that it can be used from here.
func zoneURL(raw, zone string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil || !a.Is6() || !a.IsLinkLocalUnicast() || a.Zone() != "" {
		return raw
	}
	u.Host = net.JoinHostPort(a.WithZone(zone).String(), u.Port())
	if u.Port() == "" {
		u.Host = "[" + a.WithZone(zone).String() + "]"
	}
	return u.String()
}

// Answer runs the server side of unicast discovery over conn: it reads the
// request and writes the response that respond returns for it. A version 2
// client that proposes no format jinid speaks gets the null format.
func Answer(ctx context.Context, conn net.Conn, respond func(Request) (*Response, error)) error {
	stop := deadline(ctx, conn)
	defer stop()
	req, err := ReadRequest(bufio.NewReader(io.LimitReader(conn, maxRequestSize)))
	if err != nil {
		return fmt.Errorf("unicast request from %s: %w", conn.RemoteAddr(), ctxErr(ctx, err))
	}
	var resp *Response
	if req.Version == discovery.ProtocolV2 && !req.Proposes(discovery.PlaintextFormat) {
		resp = &Response{Version: 2, Format: discovery.NullFormat}
	} else if resp, err = respond(req); err != nil {
		return fmt.Errorf("answering %s: %w", conn.RemoteAddr(), err)
	}
	b, err := resp.Append(nil)
	if err != nil {
		return fmt.Errorf("encoding the response to %s: %w", conn.RemoteAddr(), err)
	}
	if _, err := conn.Write(b); err != nil {
		return fmt.Errorf("answering %s: %w", conn.RemoteAddr(), err)
	}
	return nil
}

// deadline bounds conn's reads and writes by ReadTimeout and ctx, and
// unblocks them when ctx ends; the returned func releases the watch.
func deadline(ctx context.Context, conn net.Conn) func() {
	d := time.Now().Add(ReadTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// ctxErr says when an exchange failed because its context ended. The
// connection's deadline is the context's, and may fire a moment before the
// context itself says so.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	if d, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return err
}

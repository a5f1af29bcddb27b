package discovery

import (
	"cmp"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// WithZone returns host as it must be dialed from this host when it was
// heard on the link of interface zone: an IPv6 link-local address gets
// zone (whatever zone it came with: a peer writes its own interface's
// name, which means nothing here); any other IP address loses a zone;
// a name is returned as it is. With zone empty a link-local address is
// returned as it is.
func WithZone(host, zone string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	switch {
	case !a.Is6() || !a.IsLinkLocalUnicast():
		return a.WithZone("").String()
	case zone == "":
		return host
	default:
		return a.WithZone(zone).String()
	}
}

// HostPort writes host and port as an address to dial or to read: IPv6
// in brackets with its zone ([fe80::1%eth0]:4160), a port of 0 as "?"
// (not known).
func HostPort(host string, port int) string {
	p := "?"
	if port != 0 {
		p = strconv.Itoa(port)
	}
	return net.JoinHostPort(host, p)
}

// Family returns 4 or 6 for an IP address, 0 for a name.
func Family(host string) int {
	a, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return 0
	case a.Unmap().Is4():
		return 4
	default:
		return 6
	}
}

// Scope classes of addresses, best first: the order in which the
// addresses of one lookup service are chosen to dial and report. It is
// the order of RFC 6724's default policy where it matters on a LAN: a
// global IPv6 address, then IPv4, then an IPv6 unique local address
// (fc00::/7), then link-local addresses (usable only on their own link,
// IPv4 before IPv6), and last a host name (whose address is anyone's
// guess until resolved).
const (
	rankGlobal6 = iota
	rankIPv4
	rankULA
	rankLinkLocal4
	rankLinkLocal6
	rankName
)

// addressRank is the class of host.
func addressRank(host string) int {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return rankName
	}
	a = a.Unmap()
	switch {
	case a.Is4() && a.IsLinkLocalUnicast():
		return rankLinkLocal4
	case a.Is4():
		return rankIPv4
	case a.IsLinkLocalUnicast():
		return rankLinkLocal6
	case a.IsPrivate():
		return rankULA
	default:
		return rankGlobal6
	}
}

// CompareAddresses orders two addresses of one lookup service, the one
// to dial and report first: by scope class (see above), then by host
// (numerically for addresses, zone included), then by port. It depends
// only on the addresses, never on the order they were heard in.
func CompareAddresses(hostA string, portA int, hostB string, portB int) int {
	ra, rb := addressRank(hostA), addressRank(hostB)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	a, errA := netip.ParseAddr(hostA)
	b, errB := netip.ParseAddr(hostB)
	if errA == nil && errB == nil {
		if c := a.Unmap().WithZone("").Compare(b.Unmap().WithZone("")); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Zone(), b.Zone()), cmp.Compare(portA, portB))
	}
	return cmp.Or(strings.Compare(strings.ToLower(hostA), strings.ToLower(hostB)), cmp.Compare(portA, portB))
}

// LinkLocal reports whether host is a link-local address (of either
// family): one that reaches its host only over one link.
func LinkLocal(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLinkLocalUnicast()
}

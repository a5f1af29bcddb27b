package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Locator is a LookupLocator: where to reach one lookup service by unicast
// discovery, written jini://host[:port].
type Locator struct {
	Host string // a host name, an IPv4 address, or an IPv6 address without brackets
	Port int
}

// ParseLocator parses jini://host[:port] with an optional trailing slash.
// The port defaults to 4160; an IPv6 address must be in brackets. A path,
// query, fragment or user part is an error, as in the Java LookupLocator.
func ParseLocator(s string) (Locator, error) {
	bad := func(format string, args ...any) (Locator, error) {
		return Locator{}, fmt.Errorf("locator %q: %s", s, fmt.Sprintf(format, args...))
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !strings.EqualFold(scheme, "jini") {
		return bad("want jini://host[:port]")
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
		if tail := rest[i:]; tail != "/" {
			return bad("unexpected %q after host and port", tail)
		}
	}
	if strings.Contains(authority, "@") {
		return bad("a user part is not allowed")
	}
	var host, port string
	if strings.HasPrefix(authority, "[") {
		end := strings.Index(authority, "]")
		if end < 0 {
			return bad("missing ] after IPv6 address")
		}
		host = authority[1:end]
		switch after := authority[end+1:]; {
		case after == "":
		case after[0] == ':':
			port = after[1:]
			if port == "" {
				return bad("empty port after ':'")
			}
		default:
			return bad("unexpected %q after IPv6 address", after)
		}
		// A zone is written %25zone in URLs; accept the plain % form too.
		unzoned := strings.Replace(host, "%25", "%", 1)
		addr, err := netip.ParseAddr(unzoned)
		if err != nil || !addr.Is6() {
			return bad("%q in brackets is not an IPv6 address", host)
		}
		host = unzoned
	} else {
		host = authority
		if i := strings.LastIndex(authority, ":"); i >= 0 {
			if strings.Count(authority, ":") > 1 {
				return bad("an IPv6 address must be written in brackets, as jini://[%s]", authority)
			}
			host, port = authority[:i], authority[i+1:]
			if port == "" {
				return bad("empty port after ':'")
			}
		}
		if err := checkHostName(host); err != nil {
			return bad("%v", err)
		}
	}
	l := Locator{Host: host, Port: Port}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || port[0] == '+' {
			return bad("port %q is not a number from 1 to 65535", port)
		}
		l.Port = p
	}
	return l, nil
}

// checkHostName accepts DNS names and IPv4 addresses.
func checkHostName(h string) error {
	if h == "" {
		return fmt.Errorf("empty host")
	}
	if len(h) > 253 {
		return fmt.Errorf("host name of %d characters is longer than 253", len(h))
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" {
			return fmt.Errorf("host %q has an empty label", h)
		}
		if len(label) > 63 {
			return fmt.Errorf("host %q has a label longer than 63 characters", h)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host %q: character %q is not allowed in a host name", h, c)
			}
		}
	}
	return nil
}

// String returns the locator as jini://host:port, with IPv6 addresses in
// brackets.
func (l Locator) String() string {
	host := l.Host
	if strings.Contains(host, ":") {
		host = "[" + strings.Replace(host, "%", "%25", 1) + "]"
	}
	return "jini://" + host + ":" + strconv.Itoa(l.Port)
}

// Address returns host:port for dialing.
func (l Locator) Address() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// Equal reports whether two locators name the same lookup service: the
// same port and the same host, ignoring case, as Java's LookupLocator
// compares them.
func (l Locator) Equal(o Locator) bool {
	return l.Port == o.Port && strings.EqualFold(l.Host, o.Host)
}

// MarshalText implements encoding.TextMarshaler.
func (l Locator) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Locator) UnmarshalText(b []byte) error {
	v, err := ParseLocator(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ErrNeedsZone is the error of a link-local IPv6 locator that names no
// interface: the address is the same on every link, so nothing says
// which one to dial.
var ErrNeedsZone = errors.New("a link-local address needs its interface as a zone")

// Dialable says whether the locator can be dialled as written: a
// link-local IPv6 address needs a zone (jini://[fe80::1%25eth0]). Parsing
// accepts one without, as Java's LookupLocator does, for what peers send;
// locators people give are checked with this too.
func (l Locator) Dialable() error {
	addr, err := netip.ParseAddr(l.Host)
	if err == nil && addr.Zone() == "" && (addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast()) {
		return fmt.Errorf("locator %s: %w, as in jini://[%s%%25eth0]", l, ErrNeedsZone, addr)
	}
	return nil
}

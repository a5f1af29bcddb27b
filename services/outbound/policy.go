package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// ErrForbidden is what a request to an address the policy refuses fails
// with (wrapped, naming the address and why).
var ErrForbidden = errors.New("destination forbidden by the outbound policy")

// ErrNotActing is what a request fails with, unsent, while the daemon
// may not act for its clients (PolicyConfig.Acting): a node of a cluster
// that lost the store's hold, where another node may act in its place.
var ErrNotActing = errors.New("this jinid is not acting for its clients now")

// PolicyConfig says where requests may not go beyond the fixed rules.
type PolicyConfig struct {
	// Allow lists prefixes requests may go to even though the fixed rules
	// refuse them (--allow-outbound): a listener on loopback, a lab
	// network on link-local addresses.
	Allow []netip.Prefix
	// Self returns the host's own addresses (every interface's); nil
	// means none are known. They are refused like loopback: a request to
	// one reaches jinid's own host.
	Self func() ([]netip.Addr, error)
	// Logger hears each refusal (rate-limited).
	Logger *slog.Logger
	// Inside says a URL is served inside the daemon (an event mailbox
	// listener): a listener any client may name, delivered in-process.
	Inside func(*url.URL) bool
	// Acting, if set, says whether the daemon may act for its clients
	// now; while it returns an error no request is sent (dialed, or on a
	// kept connection). A store in etcd stops a node that lost its hold
	// from renewing, delivering or deciding what another node now does.
	Acting func() error
	// Deployment, if set, lists the deployment's own endpoints: the
	// etcd cluster's client URLs (as given and as resolved) and the
	// nodes' API, unicast discovery and cluster ports. They are never
	// a destination, whatever Allow says and whoever asks: a request
	// made for a client that reached etcd could write the store (a
	// token, a member record), one that reached a node would come from
	// a node. It is called on every check, so it must not wait on the
	// network.
	Deployment func() []netip.AddrPort
	// DeploymentNames, if set, lists the deployment's endpoints given by
	// name (host:port, etcd's client URLs as configured): a URL naming
	// one is refused when handed in, before any resolution.
	DeploymentNames func() []string
}

// Policy decides which addresses jinid may connect to when it sends a
// request on someone's behalf: never loopback, unspecified, link-local,
// multicast or broadcast addresses, in any of their forms (IPv4-mapped
// IPv6 too), nor any address of the host itself, unless allowed. It is
// applied when a URL is handed in (to its literal address) and at
// connect time, after name resolution, to every address tried: a name
// that resolves to a forbidden address gets nowhere either.
type Policy struct {
	allow  []netip.Prefix
	self   func() ([]netip.Addr, error)
	log    *slog.Logger
	inside func(*url.URL) bool
	acting func() error
	infra  func() []netip.AddrPort
	names  func() []string

	mu     sync.Mutex
	own    []netip.Addr
	ownAt  time.Time
	logged time.Time // the last refusal logged

	refused atomic.Int64
}

// selfTTL is how long the host's addresses are taken as read: a request
// refused for an address added since is refused at most this much late.
const selfTTL = 2 * time.Second

// NewPolicy returns a policy.
func NewPolicy(cfg PolicyConfig) *Policy {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	allow := make([]netip.Prefix, len(cfg.Allow))
	for i, p := range cfg.Allow {
		allow[i] = p.Masked()
	}
	return &Policy{allow: allow, self: cfg.Self, log: cfg.Logger.With("component", "outbound"), inside: cfg.Inside, acting: cfg.Acting,
		infra: cfg.Deployment, names: cfg.DeploymentNames}
}

// strict is the policy of a nil *Policy: the fixed rules, no allowances,
// no own addresses known.
var strict = &Policy{log: slog.New(slog.DiscardHandler)}

func (p *Policy) orStrict() *Policy {
	if p == nil {
		return strict
	}
	return p
}

// Refused counts the connections the policy refused.
func (p *Policy) Refused() int64 { return p.orStrict().refused.Load() }

// Check reports whether a connection to a is allowed: nil, or an error
// wrapping ErrForbidden that says why not.
func (p *Policy) Check(a netip.Addr) error { return p.check(a, false) }

// CheckAddrPort is Check for a connection to a's port too: an endpoint
// of the deployment (PolicyConfig.Deployment) is refused as well.
func (p *Policy) CheckAddrPort(a netip.AddrPort) error { return p.checkPort(a, false) }

// checkPort is check, and the deployment's endpoints refused first:
// neither an allowance nor the host's administrator lets a request there.
func (p *Policy) checkPort(ap netip.AddrPort, hostLocal bool) error {
	if p.isDeployment(ap) {
		return fmt.Errorf("%w: %s is an endpoint of this deployment (etcd, or a node of the cluster)", ErrForbidden, ap)
	}
	return p.check(ap.Addr(), hostLocal)
}

// isDeployment says ap is one of the deployment's own endpoints.
func (p *Policy) isDeployment(ap netip.AddrPort) bool {
	p = p.orStrict()
	if p.infra == nil {
		return false
	}
	ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
	for _, e := range p.infra() {
		if netip.AddrPortFrom(e.Addr().WithZone("").Unmap(), e.Port()) == ap {
			return true
		}
	}
	return false
}

// check is Check; hostLocal allows this host's own addresses, loopback
// included: what the host's administrator names (WithHostLocal).
func (p *Policy) check(a netip.Addr, hostLocal bool) error {
	p = p.orStrict()
	a = a.WithZone("")
	if hostLocal && (a.Unmap().IsLoopback() || slices.Contains(p.ownAddrs(), a.Unmap())) {
		return nil
	}
	for _, pre := range p.allow {
		if pre.Contains(a) || pre.Contains(a.Unmap()) {
			return nil
		}
	}
	if why := fixedRule(a); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbidden, a, why)
	}
	if slices.Contains(p.ownAddrs(), a.Unmap()) {
		return fmt.Errorf("%w: %s is an address of this host", ErrForbidden, a)
	}
	return nil
}

// fixedRule says why a is never a destination, or "".
func fixedRule(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified(), a.Is4() && a.As4()[0] == 0:
		return "an unspecified address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	if v4, ok := embeddedIPv4(a); ok {
		if why := fixedRule(v4); why != "" {
			return why + " in an IPv6 form"
		}
	}
	return ""
}

// nat64 is the well-known NAT64 prefix (RFC 6052).
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// embeddedIPv4 returns the IPv4 address an IPv6 address stands for in the
// IPv4-compatible (::a.b.c.d, deprecated) and NAT64 forms. (The mapped
// form, ::ffff:a.b.c.d, is unmapped before.)
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	if netip.PrefixFrom(a, 96).Masked().Addr() == netip.IPv6Unspecified() || nat64.Contains(a) {
		return netip.AddrFrom4([4]byte(b[12:])), true
	}
	return netip.Addr{}, false
}

func (p *Policy) ownAddrs() []netip.Addr {
	if p.self == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.ownAt) < selfTTL {
		return p.own
	}
	own, err := p.self()
	if err != nil {
		// Keep what was known: better a stale list than none.
		p.log.Warn("reading this host's addresses for the outbound policy", "err", err)
		return p.own
	}
	for i, a := range own {
		own[i] = a.WithZone("").Unmap()
	}
	p.own, p.ownAt = own, time.Now()
	return own
}

// hostLocalKey marks a context whose requests are the host
// administrator's (WithHostLocal).
type hostLocalKey struct{}

// WithHostLocal marks requests made with ctx as made for the host's own
// administrator (access.Principal.HostLocal), whose registrations may
// name this host's addresses, loopback included: the policy lets their
// connections there, and only theirs.
func WithHostLocal(ctx context.Context) context.Context {
	return context.WithValue(ctx, hostLocalKey{}, true)
}

// HostLocalIf is ctx marked by WithHostLocal when hostLocal is set: the
// context of a request made for a registration the host's administrator
// made (services keep the mark with the registration).
func HostLocalIf(ctx context.Context, hostLocal bool) context.Context {
	if hostLocal {
		return WithHostLocal(ctx)
	}
	return ctx
}

// IsHostLocal says ctx was marked by WithHostLocal.
func IsHostLocal(ctx context.Context) bool {
	v, _ := ctx.Value(hostLocalKey{}).(bool)
	return v
}

// poolTag keeps the connections of host-local requests apart from the
// others' (http1.Client.PoolTag): a connection the policy let to this
// host serves no request it would refuse.
func poolTag(ctx context.Context) string {
	if IsHostLocal(ctx) {
		return "host-local "
	}
	return ""
}

// control is the dialer's check of every address it is about to connect
// to, after name resolution.
func (p *Policy) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	if err := p.admit(ctx); err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrForbidden, address)
	}
	if err := p.checkPort(ap, IsHostLocal(ctx)); err != nil {
		p.refused.Add(1)
		p.mu.Lock()
		quiet := time.Since(p.logged) < time.Second
		if !quiet {
			p.logged = time.Now()
		}
		p.mu.Unlock()
		if !quiet {
			p.log.Warn("outbound request refused", "to", address, "err", err)
		}
		return err
	}
	return nil
}

// admit says whether a request may be sent now (PolicyConfig.Acting).
func (p *Policy) admit(context.Context) error {
	p = p.orStrict()
	if p.acting == nil {
		return nil
	}
	if err := p.acting(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotActing, err)
	}
	return nil
}

// refusedURL is the invalid argument of a URL whose address the policy
// refused (err): why, and what the administrator can do about it, if
// anything (nothing for the deployment's own endpoints).
func refusedURL(what, raw string, err error) error {
	why := strings.TrimPrefix(err.Error(), ErrForbidden.Error()+": ")
	hint := " (see --allow-outbound)"
	if strings.Contains(why, "endpoint of this deployment") {
		hint = ""
	}
	return fault.New(apitypes.InvalidArgument, "%s %q: %s; jinid sends no requests there on anyone's behalf%s", what, raw, why, hint)
}

// defaultPort is the port u names, or its scheme's.
func defaultPort(u *url.URL) uint16 {
	if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(n)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// CheckListener checks a listener URL: an http or https URL as CheckURL
// does, or a Java listener's jeri://host:port/UUID (the Jini ERI
// endpoint and object of a Java RemoteEventListener). A listener served
// inside the daemon (PolicyConfig.Inside: the event mailbox's) is
// allowed for anyone: its events never leave the process.
func (p *Policy) CheckListener(ctx context.Context, what, raw string) error {
	if !strings.HasPrefix(raw, "jeri://") {
		return p.CheckHTTPListener(ctx, what, raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Port() == "" || u.User != nil {
		return fault.New(apitypes.InvalidArgument, "%s %q: want jeri://host:port/uuid", what, raw)
	}
	if in := p.orStrict().inside; in != nil && in(u) {
		return nil // one of the daemon's own Java objects: served in the process
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		port, _ := strconv.ParseUint(u.Port(), 10, 16)
		if err := p.checkPort(netip.AddrPortFrom(a, uint16(port)), IsHostLocal(ctx)); err != nil {
			return refusedURL(what, raw, err)
		}
	}
	return nil
}

// CheckHTTPListener checks an http or https listener URL as CheckURL
// does; one served inside the daemon (PolicyConfig.Inside) is allowed
// for anyone.
func (p *Policy) CheckHTTPListener(ctx context.Context, what, raw string) error {
	if u, err := url.Parse(raw); err == nil && p.orStrict().inside != nil && p.orStrict().inside(u) {
		return nil
	}
	return p.CheckURL(ctx, what, raw)
}

// CheckURL checks a URL handed to jinid to send requests to (a listener,
// a push target, a lease grantor; what names it in errors): http or
// https with a host, no user name or password, and not a literal address
// the policy refuses. A host name is checked when it is resolved, at each
// connection. Errors are the specifications' invalid argument. ctx is
// the request's that hands the URL in: the host's administrator's
// (WithHostLocal) may name this host.
func (p *Policy) CheckURL(ctx context.Context, what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fault.New(apitypes.InvalidArgument, "%s %q: want an http or https URL", what, raw)
	}
	if u.Scheme == "https" && !HTTPS {
		return fault.New(apitypes.InvalidArgument, "%s %q: this jinid is built without TLS (as the router build is) and sends no https requests; give an http URL", what, raw)
	}
	if u.User != nil {
		return fault.New(apitypes.InvalidArgument, "%s %q: a URL with a user name or password is not accepted", what, raw)
	}
	host := u.Hostname()
	port := defaultPort(u)
	if p.orStrict().names != nil {
		named := strings.ToLower(strings.TrimSuffix(host, ".")) + ":" + strconv.Itoa(int(port))
		for _, n := range p.orStrict().names() {
			if strings.EqualFold(n, named) {
				return refusedURL(what, raw, fmt.Errorf("%w: %s is an endpoint of this deployment (etcd, or a node of the cluster)", ErrForbidden, named))
			}
		}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		// Names that are loopback by definition (RFC 6761).
		addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	}
	for _, a := range addrs {
		if err := p.checkPort(netip.AddrPortFrom(a, port), IsHostLocal(ctx)); err != nil {
			return refusedURL(what, raw, err)
		}
	}
	return nil
}

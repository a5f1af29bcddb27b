// Package finder runs one round of Jini discovery for `jinid discover`:
// multicast requests (both versions) and listening for announcements on
// every served interface, unicast discovery of every lookup service that
// answers or announces, and of each locator given; then it reports every
// lookup service found, and every one that could not be reached.
package finder

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/namespace"
)

// How a lookup service was found.
const (
	ViaAnnouncement = "announcement"
	ViaRequest      = "request-response"
	ViaLocator      = "locator"
	// ViaSRV: a locator naming a domain whose _jini._tcp SRV records list
	// the lookup services.
	ViaSRV = "dns-srv"
)

// Java's multicast request schedule: rounds of seven, five seconds apart.
const (
	requestRounds   = 7
	requestInterval = 5 * time.Second
)

// Config says what to look for and where.
type Config struct {
	// Groups of interest; nil means all groups, empty means none (only
	// locators are tried then).
	Groups   []string
	Locators []discovery.Locator
	// Timeout ends the round; every result is in by then.
	Timeout time.Duration
	// Versions of the protocol to use for multicast; nil means both.
	Versions []int
	// NoMulticast skips multicast requests and announcements entirely.
	NoMulticast bool
	// DNSSD also browses _jini._tcp.local over mDNS.
	DNSSD bool
	// Transport options: interface patterns, families, TTL.
	Include, Exclude []string
	NoIPv4, NoIPv6   bool
	TTL              int
	Namespace        namespace.Namespace
	Logger           *slog.Logger
}

// Result is one lookup service, found or not.
type Result struct {
	ServiceID string `json:"serviceID,omitempty"`
	Host      string `json:"host"`
	Port      int    `json:"port"` // 0: not known (a v1 answer to a request, from a Java lookup service)
	// Addresses lists where else it answered (another family, another
	// interface), as host:port.
	Addresses []string `json:"addresses,omitempty"`
	Groups    []string `json:"groups"`
	Interface string   `json:"interface,omitempty"`
	How       []string `json:"how"`
	Version   int      `json:"protocolVersion,omitempty"`
	Kind      string   `json:"kind,omitempty"` // "jinid" or "java"
	APIURL    string   `json:"apiURL,omitempty"`
	ProxySize int      `json:"proxySize,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// finder is one round in progress.
type finder struct {
	cfg Config
	log *slog.Logger
	ctx context.Context
	mc  *group.Multicast
	wg  sync.WaitGroup
	// closers end what multicast() opened, after the round.
	closers []func()

	mu    sync.Mutex
	seen  []Result        // every answer and failure, in order; merged at the end
	tried map[string]bool // host:port already queried from announcements
}

// Find runs one round and returns what it found, sorted by host and port.
func Find(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Versions == nil {
		cfg.Versions = []int{discovery.ProtocolV1, discovery.ProtocolV2}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	f := &finder{cfg: cfg, log: cfg.Logger, ctx: ctx, tried: map[string]bool{}}

	for _, l := range cfg.Locators {
		f.wg.Add(1)
		go f.locator(l)
	}
	if !cfg.NoMulticast && (cfg.Groups == nil || len(cfg.Groups) > 0 || cfg.DNSSD) {
		err := f.multicast()
		if err == nil && cfg.DNSSD {
			err = f.browse()
		}
		if err != nil {
			cancel()
			for _, c := range f.closers {
				c()
			}
			f.wg.Wait()
			return nil, err
		}
	}
	<-ctx.Done()
	for _, c := range f.closers {
		c() // the network first: no announcement handler runs after this
	}
	f.wg.Wait()

	f.mu.Lock()
	defer f.mu.Unlock()
	out := merge(f.seen)
	slices.SortFunc(out, func(a, b Result) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port), cmp.Compare(a.ServiceID, b.ServiceID))
	})
	return out, nil
}

// multicast opens the network of group discovery and starts the request
// rounds.
func (f *finder) multicast() error {
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: f.cfg.Namespace, Logger: f.log,
		Include: f.cfg.Include, Exclude: f.cfg.Exclude, NoIPv4: f.cfg.NoIPv4, NoIPv6: f.cfg.NoIPv6, TTL: f.cfg.TTL})
	if err != nil {
		return err
	}
	if err := host.Start(f.ctx); err != nil {
		host.Shutdown(context.Background())
		return err
	}
	f.mc, err = group.NewMulticast(group.MulticastConfig{Host: host, Namespace: f.cfg.Namespace, Versions: f.cfg.Versions, Logger: f.log})
	if err != nil {
		host.Shutdown(context.Background())
		return err
	}
	f.closers = append(f.closers, func() { f.mc.Shutdown(context.Background()); host.Shutdown(context.Background()) })
	f.mc.SetSink(sink{f})
	if err := f.mc.Start(f.ctx); err != nil {
		return err
	}
	f.wg.Add(1)
	go f.requestRounds()
	return nil
}

// sink takes what the network hears for the finder.
type sink struct{ f *finder }

func (s sink) HandleAnnouncement(a discovery.Announcement, iface string) {
	s.f.onAnnouncement(a, iface)
}

func (s sink) HandleResponse(resp *unicast.Response, iface string) {
	s.f.found(resp, "", []string{ViaRequest}, iface)
}

func (f *finder) requestRounds() {
	defer f.wg.Done()
	for round := 0; round < requestRounds; round++ {
		if err := f.mc.Request(f.cfg.Groups, f.knownIDs()); err != nil {
			f.log.Warn("sending multicast request", "err", err)
		}
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(requestInterval):
		}
	}
}

func (f *finder) knownIDs() []discovery.ServiceID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []discovery.ServiceID
	for _, r := range f.seen {
		if id, err := discovery.ParseServiceID(r.ServiceID); err == nil && r.Error == "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// onAnnouncement runs unicast discovery with each lookup service of
// interest that announces, once per address. Its host may carry a zone.
func (f *finder) onAnnouncement(a discovery.Announcement, iface string) {
	if f.cfg.Groups != nil && !overlaps(a.Groups, f.cfg.Groups) {
		return
	}
	addr := net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	f.mu.Lock()
	seen := f.tried[addr]
	f.tried[addr] = true
	f.mu.Unlock()
	if seen || f.ctx.Err() != nil {
		return
	}
	host, _, _ := strings.Cut(a.Host, "%")
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		resp, err := f.mc.Unicast(f.ctx, a.Host, a.Port, a.Version)
		if err != nil {
			f.fail(host, a.Port, a.ServiceID.String(), ViaAnnouncement, iface, err)
			return
		}
		f.found(resp, a.ServiceID.String(), []string{ViaAnnouncement}, iface)
	}()
}

func (f *finder) locator(l discovery.Locator) {
	defer f.wg.Done()
	// A name may be a domain whose SRV records list lookup services. (The
	// lookup runs in the process's namespace.)
	if _, err := netip.ParseAddr(l.Host); err != nil {
		_, srvs, err := net.DefaultResolver.LookupSRV(f.ctx, "jini", "tcp", l.Host)
		if err == nil && len(srvs) > 0 {
			for _, srv := range srvs {
				target := discovery.Locator{Host: strings.TrimSuffix(srv.Target, "."), Port: int(srv.Port)}
				f.wg.Add(1)
				go func() {
					defer f.wg.Done()
					f.unicastLocator(target, []string{ViaLocator, ViaSRV})
				}()
			}
			return
		}
		f.log.Debug("no _jini._tcp SRV records; trying the name itself", "locator", l, "err", err)
	}
	f.unicastLocator(l, []string{ViaLocator})
}

func (f *finder) unicastLocator(l discovery.Locator, how []string) {
	resp, err := unicast.DialLocator(f.ctx, f.dialContext, l)
	if err != nil {
		f.fail(l.Host, l.Port, "", ViaLocator, "", err)
		return
	}
	f.found(resp, "", how, "")
}

// dialContext dials from inside the namespace.
func (f *finder) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := f.cfg.Namespace.Do(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// found records an answer; id is the ServiceID an announcement gave, if
// any (a Java proxy's own is inside what jinid does not unmarshal).
func (f *finder) found(resp *unicast.Response, id string, how []string, iface string) {
	r := Result{ServiceID: id, Host: resp.Host, Port: resp.Port, Groups: resp.Groups, Interface: iface, How: how,
		Version: resp.Version, Kind: "java", ProxySize: len(resp.Registrar.Marshalled)}
	if d := resp.Registrar.Descriptor; d != nil {
		r.Kind, r.APIURL, r.ServiceID = "jinid", d.APIURL, d.ServiceID.String()
	}
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.mu.Unlock()
}

func (f *finder) fail(host string, port int, id, how, iface string, err error) {
	if f.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, Result{ServiceID: id, Host: host, Port: port, Groups: []string{}, Interface: iface, How: []string{how}, Error: err.Error()})
	f.mu.Unlock()
}

// merge turns what was seen into one result per lookup service: answers
// with the same ServiceID are one; answers without one join the result at
// their address (a port of 0 matching any). A failure is reported only if
// nothing answered at that address or with that ServiceID.
func merge(seen []Result) []Result {
	var out []*Result
	byID := map[string]*Result{}
	atAddr := func(host string, port int) *Result {
		for _, r := range out {
			if r.Error != "" {
				continue
			}
			for _, a := range append([]string{net.JoinHostPort(r.Host, strconv.Itoa(r.Port))}, r.Addresses...) {
				h, p, _ := net.SplitHostPort(a)
				pn, _ := strconv.Atoi(p)
				if h == host && (pn == port || pn == 0 || port == 0) {
					return r
				}
			}
		}
		return nil
	}
	add := func(o Result) {
		var r *Result
		if o.ServiceID != "" {
			r = byID[o.ServiceID]
		}
		if r == nil {
			r = atAddr(o.Host, o.Port)
		}
		if r == nil {
			c := o
			c.How = slices.Clone(o.How)
			out = append(out, &c)
			if o.ServiceID != "" {
				byID[o.ServiceID] = &c
			}
			return
		}
		absorb(r, o)
		if r.ServiceID != "" {
			byID[r.ServiceID] = r
		}
	}
	for _, pass := range []func(Result) bool{
		func(o Result) bool { return o.Error == "" && o.ServiceID != "" },
		func(o Result) bool { return o.Error == "" && o.ServiceID == "" },
	} {
		for _, o := range seen {
			if pass(o) {
				add(o)
			}
		}
	}
	for _, o := range seen {
		if o.Error == "" || atAddr(o.Host, o.Port) != nil || (o.ServiceID != "" && byID[o.ServiceID] != nil) {
			continue
		}
		if slices.ContainsFunc(out, func(r *Result) bool { return r.Error != "" && r.Host == o.Host && r.Port == o.Port }) {
			continue
		}
		c := o
		out = append(out, &c)
	}
	res := make([]Result, len(out))
	for i, r := range out {
		res[i] = *r
	}
	return res
}

// absorb adds another sighting o of the lookup service r: its way of
// being found, its ServiceID if r lacked one, and its address. An IPv4
// address is preferred as the one shown first.
func absorb(r *Result, o Result) {
	for _, h := range o.How {
		if !slices.Contains(r.How, h) {
			r.How = append(r.How, h)
		}
	}
	if r.ServiceID == "" {
		r.ServiceID = o.ServiceID
	}
	if r.Host == o.Host && r.Port == 0 {
		r.Port = o.Port
		return
	}
	if r.Host == o.Host && (o.Port == r.Port || o.Port == 0) {
		return
	}
	addr := net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	if isV6(r.Host) && !isV6(o.Host) {
		// Show the IPv4 address first.
		old := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
		r.Host, r.Port, r.Interface = o.Host, o.Port, cmp.Or(o.Interface, r.Interface)
		r.APIURL = cmp.Or(o.APIURL, r.APIURL) // the API at the address shown
		addr = old
	}
	if !slices.Contains(r.Addresses, addr) {
		r.Addresses = append(r.Addresses, addr)
	}
	if r.Interface == "" {
		r.Interface = o.Interface
	}
}

func isV6(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is6() && !a.Is4In6()
}

func overlaps(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// Package finder runs one round of Jini discovery for `jinid discover`:
// multicast requests (both versions) and listening for announcements on
// every served interface, unicast discovery of every lookup service that
// answers or announces, and of each locator given; then it reports every
// lookup service found, and every one that could not be reached.
package finder

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/jinid/jinid/internal/clock"
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

// One-shot discovery sends its requests twice, half a second apart (a
// datagram lost the first time is asked again), then ends once nothing
// new has arrived for Config.Settle.
const (
	requestRounds   = 2
	requestInterval = 500 * time.Millisecond
	// DefaultSettle is how long a round waits for more answers after the
	// last one and after its last request.
	DefaultSettle = time.Second
)

// Config says what to look for and where.
type Config struct {
	// Groups of interest; nil means all groups, empty means none (only
	// locators are tried then).
	Groups   []string
	Locators []discovery.Locator
	// Timeout ends the round at the latest.
	Timeout time.Duration
	// Settle ends the round earlier: once nothing new has arrived, no
	// unicast discovery is under way, and the last request went out, for
	// this long. 0 means DefaultSettle.
	Settle time.Duration
	// Merge makes one result per lookup service (its best address, every
	// interface it was seen on) instead of one per interface and family.
	Merge bool
	// Versions of the protocol to use for multicast; nil means both.
	Versions []int
	// NoMulticast skips multicast requests and announcements entirely.
	NoMulticast bool
	// DNSSD also browses _jini._tcp.local over mDNS.
	DNSSD bool
	// Transport options: interface patterns, families, TTL.
	Include, Exclude    []string
	ExcludeDefaultRoute bool
	NoIPv4, NoIPv6      bool
	TTL                 int
	Namespace           namespace.Namespace
	Logger              *slog.Logger
	// Clock times the round (requests, settle, timeout); nil is the real
	// one.
	Clock clock.Clock
	// Found, if set, is handed each lookup service the first time it
	// answers (ServiceID, address, kind, API URL), in a goroutine of its
	// own that the round waits for: what a caller does with it (browse
	// reads it) overlaps the rest of the round, which settles only once
	// it is done.
	Found func(Result)
}

// Result is one lookup service as seen over one interface and family (or
// as a whole, with Config.Merge), found or not.
type Result struct {
	ServiceID string `json:"serviceID,omitempty"`
	// Address is Host and Port as one would dial them, an IPv6 one
	// bracketed with its zone ([fe80::1%eth0]:4160); the port is "?" when
	// not known.
	Address string `json:"address"`
	Host    string `json:"host"`
	Port    int    `json:"port"` // 0: not known (a v1 answer to a request, from a Java lookup service)
	// Family is 4 or 6 (0 for a host name).
	Family int `json:"family,omitempty"`
	// Interface it was seen on ("" when reached by unicast only, off any
	// served link).
	Interface string `json:"interface,omitempty"`
	// Interfaces and Addresses, with Config.Merge: every interface it was
	// seen on, and its other addresses (best first).
	Interfaces []string `json:"interfaces,omitempty"`
	Addresses  []string `json:"addresses,omitempty"`
	Groups     []string `json:"groups"`
	How        []string `json:"how"`
	// Versions of the discovery protocol it spoke: announced or answered
	// in.
	Versions  []int  `json:"protocolVersions,omitempty"`
	Kind      string `json:"kind,omitempty"` // "jinid" or "java"
	APIURL    string `json:"apiURL,omitempty"`
	ProxySize int    `json:"proxySize,omitempty"`
	Error     string `json:"error,omitempty"`
}

// sighting is one thing heard of a lookup service: an announcement, an
// answer, or a failure to reach it.
type sighting struct {
	id      string
	host    string
	port    int
	iface   string
	how     string
	version int
	groups  []string
	// answered: unicast discovery succeeded (kind, apiURL and proxy are
	// set); a heard-only sighting is an announcement.
	answered bool
	kind     string
	apiURL   string
	proxy    int
	err      string
}

// finder is one round in progress.
type finder struct {
	cfg   Config
	log   *slog.Logger
	ctx   context.Context
	mc    *group.Multicast
	wg    sync.WaitGroup
	quiet *quiet
	// closers end what multicast() opened, after the round.
	closers []func()

	mu     sync.Mutex
	next   clock.Timer // the next round of requests
	seen   []sighting
	keys   map[sightingKey]bool // of seen
	closed bool                 // stopped: the round is over
	tried  map[string]bool      // host:port already queried from announcements
	told   map[string]bool      // ServiceIDs handed to Config.Found
}

// Find runs one round and returns what it found: one result per lookup
// service, interface and family (or per lookup service with
// Config.Merge), in a stable order.
func Find(ctx context.Context, cfg Config) ([]Result, error) {
	f, cancel := newFinder(ctx, cfg)
	defer cancel()
	if err := f.start(); err != nil {
		cancel()
		f.stop()
		return nil, err
	}
	select {
	case <-f.ctx.Done():
	case <-f.quiet.done:
	}
	cancel()
	f.stop()
	return f.results(), nil
}

func newFinder(ctx context.Context, cfg Config) (*finder, context.CancelFunc) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.Versions == nil {
		cfg.Versions = []int{discovery.ProtocolV1, discovery.ProtocolV2}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	ctx, cancel := context.WithCancel(ctx)
	timeout := cfg.Clock.AfterFunc(cfg.Timeout, cancel)
	f := &finder{cfg: cfg, log: cfg.Logger, ctx: ctx, tried: map[string]bool{}, told: map[string]bool{}, keys: map[sightingKey]bool{},
		quiet: newQuiet(cfg.Clock, cfg.Settle)}
	return f, func() { timeout.Stop(); cancel() }
}

// start sends the first requests and tries the locators.
func (f *finder) start() error {
	for _, l := range f.cfg.Locators {
		f.goBusy(func() { f.locator(l) })
	}
	if !f.cfg.NoMulticast && (f.cfg.Groups == nil || len(f.cfg.Groups) > 0 || f.cfg.DNSSD) {
		err := f.multicast()
		if err == nil && f.cfg.DNSSD {
			err = f.browse()
		}
		if err != nil {
			return err
		}
	}
	f.quiet.start()
	return nil
}

// stop closes the network (no handler runs after it) and waits for the
// round's goroutines.
func (f *finder) stop() {
	f.mu.Lock()
	if f.next != nil {
		f.next.Stop()
	}
	// What arrives while the network closes (a connect-back in flight,
	// answered after the host's sockets are gone, so on no interface) is
	// after the round: it is not among its results.
	f.closed = true
	f.mu.Unlock()
	for _, c := range f.closers {
		c()
	}
	f.wg.Wait()
	f.quiet.stop()
}

// goBusy runs work in a goroutine that keeps the round from settling.
func (f *finder) goBusy(work func()) {
	f.quiet.begin()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer f.quiet.end()
		work()
	}()
}

// results turns what was seen into results.
func (f *finder) results() []Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return rows(f.seen, f.cfg.Merge)
}

// multicast opens the network of group discovery and starts the request
// rounds.
func (f *finder) multicast() error {
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: f.cfg.Namespace, Logger: f.log,
		Include: f.cfg.Include, Exclude: f.cfg.Exclude, ExcludeDefaultRoute: f.cfg.ExcludeDefaultRoute, NoIPv4: f.cfg.NoIPv4, NoIPv6: f.cfg.NoIPv6, TTL: f.cfg.TTL})
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
	f.request(0)
	return nil
}

// sink takes what the network hears for the finder.
type sink struct{ f *finder }

func (s sink) HandleAnnouncement(a discovery.Announcement, iface string) {
	s.f.onAnnouncement(a, iface)
}

func (s sink) HandleResponse(resp *unicast.Response, iface string) {
	s.f.found(resp, "", ViaRequest, iface)
}

// request sends round n of requests and schedules the next; the round
// cannot settle before the last has gone out.
func (f *finder) request(n int) {
	if f.ctx.Err() != nil {
		return
	}
	if err := f.mc.Request(f.cfg.Groups, f.knownIDs()); err != nil {
		f.log.Warn("sending multicast request", "err", err)
	}
	if n+1 == requestRounds {
		f.quiet.touch()
		return
	}
	f.quiet.begin()
	t := f.cfg.Clock.AfterFunc(requestInterval, func() {
		defer f.quiet.end()
		f.request(n + 1)
	})
	f.mu.Lock()
	f.next = t
	f.mu.Unlock()
}

func (f *finder) knownIDs() []discovery.ServiceID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []discovery.ServiceID
	for _, r := range f.seen {
		if id, err := discovery.ParseServiceID(r.id); err == nil && r.answered && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// onAnnouncement records an announcement of interest and runs unicast
// discovery with its lookup service, once per address. Its host may
// carry a zone.
func (f *finder) onAnnouncement(a discovery.Announcement, iface string) {
	if f.cfg.Groups != nil && !overlaps(a.Groups, f.cfg.Groups) {
		return
	}
	id := a.ServiceID.String()
	f.record(sighting{id: id, host: a.Host, port: a.Port, iface: iface, how: ViaAnnouncement, version: a.Version, groups: slices.Clone(a.Groups)})
	addr := net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	f.mu.Lock()
	seen := f.tried[addr] || len(f.tried) >= maxSightings // a storm: contact no more
	if !seen {
		f.tried[addr] = true
	}
	f.mu.Unlock()
	if seen || f.ctx.Err() != nil {
		return
	}
	f.goBusy(func() {
		resp, err := f.mc.Unicast(f.ctx, a.Host, a.Port, a.Version)
		if err != nil {
			f.fail(a.Host, a.Port, id, ViaAnnouncement, iface, err)
			return
		}
		f.found(resp, id, ViaAnnouncement, iface)
	})
}

func (f *finder) locator(l discovery.Locator) {
	// A name may be a domain whose SRV records list lookup services. (The
	// lookup runs in the process's namespace.)
	if _, err := netip.ParseAddr(l.Host); err != nil {
		_, srvs, err := net.DefaultResolver.LookupSRV(f.ctx, "jini", "tcp", l.Host)
		if err == nil && len(srvs) > 0 {
			for _, srv := range srvs {
				target := discovery.Locator{Host: strings.TrimSuffix(srv.Target, "."), Port: int(srv.Port)}
				f.goBusy(func() { f.unicastLocator(target, ViaSRV) })
			}
			return
		}
		f.log.Debug("no _jini._tcp SRV records; trying the name itself", "locator", l, "err", err)
	}
	f.unicastLocator(l, ViaLocator)
}

func (f *finder) unicastLocator(l discovery.Locator, how string) {
	// A little before the round ends: a locator that takes the request
	// and says nothing (an HTTP server, a jinid's API port) is a row
	// saying so, not a row left out at the round's end.
	wait := f.cfg.Timeout * 9 / 10
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	resp, err := unicast.DialLocator(ctx, f.dialContext, l)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && f.ctx.Err() == nil {
		err = fmt.Errorf("no answer within %v: is it a Jini discovery port? (a jinid's API port is not)", wait.Round(time.Millisecond))
	}
	if err != nil {
		f.fail(l.Host, l.Port, "", how, f.linkOf(l.Host), err)
		return
	}
	f.found(resp, "", how, f.linkOf(resp.Host))
}

// linkOf names the served interface whose link host is on ("" without
// multicast, or off every served link).
func (f *finder) linkOf(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil || f.mc == nil {
		return ""
	}
	return f.mc.LinkOf(a)
}

// dialContext dials from inside the namespace.
func (f *finder) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f.cfg.Namespace.DialContext(ctx, nil, network, addr)
}

// found records an answer; id is the ServiceID an announcement gave, if
// any: the one the registrar proxy carries (Reggie's and jinid's do)
// comes first.
func (f *finder) found(resp *unicast.Response, id, how, iface string) {
	s := sighting{id: id, host: resp.Host, port: resp.Port, iface: iface, how: how, version: resp.Version,
		groups: slices.Clone(resp.Groups), answered: true, kind: "java", proxy: len(resp.Registrar.Marshalled)}
	if s.groups == nil {
		s.groups = []string{}
	}
	if sid := resp.Registrar.ServiceID; !sid.IsZero() {
		s.id = sid.String()
	}
	if d := resp.Registrar.Descriptor; d != nil {
		s.kind, s.apiURL, s.id, s.proxy = "jinid", d.APIURL, d.ServiceID.String(), 0
	}
	f.record(s)
	f.tell(s)
}

// tell hands Config.Found a lookup service answered for the first time.
func (f *finder) tell(s sighting) {
	if f.cfg.Found == nil || s.id == "" || s.port == 0 {
		// (A Java lookup service's version 1 answer lacks its port:
		// its version 2 answer, or an announcement, gives it.)
		return
	}
	f.mu.Lock()
	first := !f.closed && !f.told[s.id] && len(f.told) < maxSightings
	if first {
		// Counted before the round can close (stop waits for it).
		f.told[s.id] = true
		f.quiet.begin()
		f.wg.Add(1)
	}
	f.mu.Unlock()
	if !first {
		return
	}
	r := Result{ServiceID: s.id, Address: discovery.HostPort(s.host, s.port), Host: s.host, Port: s.port, Kind: s.kind, APIURL: s.apiURL}
	go func() {
		defer f.wg.Done()
		defer f.quiet.end()
		f.cfg.Found(r)
	}()
}

func (f *finder) fail(host string, port int, id, how, iface string, err error) {
	if f.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	f.record(sighting{id: id, host: host, port: port, iface: iface, how: how, err: err.Error()})
}

// record keeps a sighting that says something new: a lookup service
// announcing every half second says nothing new after its first
// announcement, and must not keep the round from settling.
func (f *finder) record(s sighting) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := s.key()
	// A locator's try is waited for by stop: what it found, or that it
	// found nothing, is the round's even when the round's end cut it.
	late := f.closed && s.how != ViaLocator && s.how != ViaSRV
	if late || f.keys[k] || len(f.seen) >= maxSightings {
		// Said before; or a storm of made-up lookup services, of which
		// what is kept is enough to show.
		return
	}
	f.keys[k] = true
	f.seen = append(f.seen, s)
	f.quiet.touch()
}

// maxSightings bounds what one round keeps.
const maxSightings = 10_000

// sightingKey is what a sighting says; two with one key say the same.
type sightingKey struct {
	id, host, iface, how, kind, apiURL, err, groups string
	port, version, proxy                            int
	answered                                        bool
}

func (s sighting) key() sightingKey {
	return sightingKey{id: s.id, host: s.host, iface: s.iface, how: s.how, kind: s.kind, apiURL: s.apiURL, err: s.err,
		groups: strings.Join(s.groups, "\x00"), port: s.port, version: s.version, proxy: s.proxy, answered: s.answered}
}

func overlaps(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

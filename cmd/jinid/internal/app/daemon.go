// Package app is the composition root: it runs jinid's long-lived services in one process: the
// store, the lease grantor, event delivery, the lookup service's registrar
// and the HTTP API with its operations endpoints.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/announce"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/store"
)

// DefaultAPIListen is where the client API and the operations endpoints
// listen unless told otherwise.
const DefaultAPIListen = ":4162"

// Config is what the daemon is told at start.
type Config struct {
	// APIListen is the TCP address (host:port) of the HTTP server.
	APIListen string
	// DataDir holds the store.
	DataDir string

	// Groups, if not nil, replaces the lookup service's member groups at
	// start; nil keeps what the store holds (the public group at first).
	Groups []string
	// AnnounceInterval between announcements; 0 means 120 s.
	AnnounceInterval time.Duration
	// Include and Exclude are interface name patterns for multicast; a
	// nil Exclude means the transport's defaults.
	Include, Exclude []string
	// NoMulticast: no announcements, no answers to multicast requests;
	// unicast discovery only.
	NoMulticast bool
	// DiscoveryPort is the unicast discovery port (TCP); 0 picks a free
	// one (for tests).
	DiscoveryPort int
	// NoDNSSD turns off the DNS-SD (mDNS) advertisement.
	NoDNSSD bool
	// LDSAnnounceInterval is how often the lookup discovery service
	// expects lookup services to announce (three silent intervals and a
	// failed probe discard one); 0 means 120 s.
	LDSAnnounceInterval time.Duration
	// RenewalMargin is how long before a client lease expires the lease
	// renewal service renews it (plus twice the grantor's round trip); 0
	// means 30 s.
	RenewalMargin time.Duration
	// MailboxMaxPerRegistration and MailboxMaxEvents are the event
	// mailbox's quotas; 0 means its defaults.
	MailboxMaxPerRegistration, MailboxMaxEvents int
	// Namespace to run the network side in (tests); zero: the process's.
	Namespace namespace.Namespace
}

// DefaultDataDir is where state lives unless told otherwise: the system
// place for a daemon run as root, the user's state directory otherwise.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/jinid"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "jinid")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "jinid")
	}
	return "jinid-data"
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	host, port, err := net.SplitHostPort(c.APIListen)
	if err != nil {
		return fmt.Errorf("API listen address %q: want host:port (e.g. %s or 127.0.0.1:4162): %w", c.APIListen, DefaultAPIListen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("API listen address %q: port %q is not a number from 0 to 65535", c.APIListen, port)
	}
	if host != "" && net.ParseIP(host) == nil {
		return fmt.Errorf("API listen address %q: host %q is not an IP address (leave it empty to listen on all)", c.APIListen, host)
	}
	if c.DataDir == "" {
		return errors.New("data directory: none given")
	}
	if c.AnnounceInterval != 0 && c.AnnounceInterval < announce.MinInterval {
		return fmt.Errorf("announcement interval %s is below the minimum %s", c.AnnounceInterval, announce.MinInterval)
	}
	if c.RenewalMargin < 0 {
		return fmt.Errorf("renewal margin %s is negative", c.RenewalMargin)
	}
	if c.LDSAnnounceInterval < 0 || c.LDSAnnounceInterval != 0 && c.LDSAnnounceInterval < announce.MinInterval {
		return fmt.Errorf("the lookup discovery service's expected announcement interval %s is below the minimum %s", c.LDSAnnounceInterval, announce.MinInterval)
	}
	if c.DiscoveryPort < 0 || c.DiscoveryPort > 65535 {
		return fmt.Errorf("discovery port %d out of range 0-65535", c.DiscoveryPort)
	}
	for _, p := range append(slices.Clone(c.Include), c.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("interface pattern %q: %w", p, err)
		}
	}
	return nil
}

// Daemon owns the process's services. Start it once, Shutdown it once.
type Daemon struct {
	cfg Config
	log *slog.Logger

	srv        *http.Server
	ln         net.Listener
	wg         sync.WaitGroup
	errc       chan error
	mu         sync.Mutex // guards announcer, which hooks reach from other goroutines
	store      *store.Store
	grantor    *lease.Grantor
	dispatcher *event.Dispatcher
	registrar  *lookup.Registrar

	unicast *unicast.Server
	// host is the namespace's multicast presence: the lookup service's
	// port (announcements, answers to requests), the lookup discovery
	// service's group discovery and mDNS are handles on it.
	host      *mcast.Host
	transport *mcast.Port
	announcer *announce.Announcer
	responder *announce.Responder
	dnssd     *announce.Advertiser
	lds       *lds.Service
	ldsNet    *ldsNetwork
	renewal   *renewal.Service
	mailbox   *mailbox.Service
}

// ldsNetwork is the lookup discovery service's group discovery network:
// multicast once the daemon's network side is up (none before, or with
// multicast off), unicast from the daemon's namespace always.
type ldsNetwork struct {
	ns namespace.Namespace
	mu sync.Mutex
	mc *group.Multicast
}

// set swaps the multicast network, returning the old one.
func (n *ldsNetwork) set(mc *group.Multicast) *group.Multicast {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.mc
	n.mc = mc
	return old
}

func (n *ldsNetwork) Request(groups []string, known []discovery.ServiceID) error {
	n.mu.Lock()
	mc := n.mc
	n.mu.Unlock()
	if mc == nil {
		return nil
	}
	return mc.Request(groups, known)
}

func (n *ldsNetwork) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	return unicast.DiscoverAt(ctx, n.dial, discovery.Locator{Host: host, Port: port}.Address(), version)
}

func (n *ldsNetwork) dialLocator(ctx context.Context, l discovery.Locator) (*unicast.Response, error) {
	return unicast.DialLocator(ctx, n.dial, l)
}

func (n *ldsNetwork) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := n.ns.Do(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// New checks cfg and returns a Daemon ready to Start.
func New(cfg Config, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Daemon{cfg: cfg, log: log, errc: make(chan error, 1)}, nil
}

// Start listens and begins serving; it returns once the listener is open,
// so a failure to bind is reported here.
func (d *Daemon) Start(ctx context.Context) error {
	if err := d.openServices(); err != nil {
		d.closeServices()
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", d.cfg.APIListen)
	if err != nil {
		d.closeServices()
		return fmt.Errorf("listening for the API on %s: %w", d.cfg.APIListen, err)
	}
	d.ln = ln
	mux := api.New(api.Config{Services: []httpjson.Service{d.grantor, d.registrar, d.lds, d.renewal, d.mailbox}, Logger: d.log})
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	// The network side first: the API reports its unicast port.
	if err := d.startDiscovery(ctx); err != nil {
		ln.Close()
		d.stopDiscovery()
		d.closeServices()
		return err
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.errc <- fmt.Errorf("serving the API: %w", err)
		}
	}()
	items, notifies := d.registrar.Count()
	d.log.Info("jinid started", "api", "http://"+ln.Addr().String(), "data", d.store.Path(),
		"lookup", d.registrar.Meta().ServiceID, "groups", d.registrar.Meta().Groups, "unicast", d.unicast.Addr(),
		"multicast", !d.cfg.NoMulticast, "registrations", items, "notify_registrations", notifies)
	return nil
}

// startDiscovery puts the lookup service on the network: the unicast
// discovery server, and unless NoMulticast, the multicast transport with
// the announcer and the answers to multicast requests.
func (d *Daemon) startDiscovery(ctx context.Context) error {
	var ln net.Listener
	err := d.cfg.Namespace.Do(func() error {
		var err error
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("", strconv.Itoa(d.cfg.DiscoveryPort)))
		return err
	})
	if err != nil {
		return fmt.Errorf("listening for unicast discovery on port %d: %w", d.cfg.DiscoveryPort, err)
	}
	d.unicast = unicast.Serve(ln, unicast.ServerConfig{Respond: d.respond, Logger: d.log})
	if d.cfg.NoMulticast {
		d.log.Info("multicast discovery off: no announcements, no answers to multicast requests; the lookup discovery service uses locators only")
		d.lds.Start()
		return nil
	}
	if d.host, err = mcast.NewNetlinkHost(mcast.HostConfig{Namespace: d.cfg.Namespace, Include: d.cfg.Include, Exclude: d.cfg.Exclude,
		Logger: d.log}); err != nil {
		return err
	}
	id := d.registrar.Meta().ServiceID
	groups := func() []string { return d.registrar.Meta().Groups }
	d.responder = announce.NewResponder(announce.ResponderConfig{ServiceID: id, Groups: groups,
		Answer: d.unicast.Handle, Namespace: d.cfg.Namespace, Logger: d.log})
	onMessage := func(m mcast.Message) {
		if m.Request != nil {
			d.responder.OnRequest(*m.Request, m.Packet)
		}
	}
	d.transport, err = d.host.Open(mcast.PortConfig{OnMessage: onMessage, OnChange: d.announceNow})
	if err != nil {
		return fmt.Errorf("joining the discovery groups: %w", err)
	}
	d.announcer, err = announce.NewAnnouncer(announce.Config{Transport: d.transport, ServiceID: id, Port: d.unicastPort(),
		Groups: groups, Interval: d.cfg.AnnounceInterval, Seq: announce.NewSeqSource(d.store), Logger: d.log})
	if err != nil {
		return err
	}
	d.announcer.Start()
	// The lookup discovery service's group discovery: another handle on
	// the same sockets.
	mc, err := group.NewMulticast(group.MulticastConfig{Host: d.host, Namespace: d.cfg.Namespace,
		Logger: d.log.With("service", "lds")})
	if err != nil {
		return err
	}
	if err := mc.Start(d.lds); err != nil {
		return fmt.Errorf("the lookup discovery service's multicast: %w", err)
	}
	d.ldsNet.set(mc)
	d.lds.Start()
	if d.cfg.NoDNSSD {
		return nil
	}
	_, apiPort, _ := net.SplitHostPort(d.ln.Addr().String())
	ap, _ := strconv.Atoi(apiPort)
	adv, err := announce.NewAdvertiser(announce.AdvertiserConfig{ServiceID: id, Port: d.unicastPort, APIPort: func() int { return ap },
		Groups: groups, Host: d.host, Logger: d.log})
	if err == nil {
		err = adv.Start()
	}
	if err != nil {
		// DNS-SD is a convenience: Jini discovery works without it.
		d.log.Warn("DNS-SD advertisement off", "err", err)
		return nil
	}
	d.dnssd = adv
	return nil
}

// announceNow announces at once (groups or addresses changed).
func (d *Daemon) announceNow() {
	d.mu.Lock()
	a := d.announcer
	d.mu.Unlock()
	if a != nil {
		a.Trigger()
	}
}

func (d *Daemon) stopDiscovery() {
	d.mu.Lock()
	a := d.announcer
	d.announcer = nil
	d.mu.Unlock()
	if a != nil {
		a.Close() // with a last announcement of no groups
	}
	if d.dnssd != nil {
		d.dnssd.Close()
	}
	if d.ldsNet == nil {
	} else if mc := d.ldsNet.set(nil); mc != nil {
		mc.Close()
	}
	if d.transport != nil {
		d.transport.Close()
	}
	if d.host != nil {
		d.host.Shutdown(context.Background())
	}
	if d.responder != nil {
		d.responder.Close()
	}
	if d.unicast != nil {
		d.unicast.Close()
	}
}

func (d *Daemon) unicastPort() int { return d.unicast.Addr().(*net.TCPAddr).Port }

// respond answers unicast discovery: the host is the address the client
// reached us on, so it is one the client can reach again.
func (d *Daemon) respond(_ unicast.Request, local net.Addr) (*unicast.Response, error) {
	ap, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return nil, err
	}
	host := ap.Addr().Unmap().WithZone("").String()
	port := d.unicastPort()
	m := d.registrar.Meta()
	apiHost, apiPort, _ := net.SplitHostPort(d.ln.Addr().String())
	if a, err := netip.ParseAddr(apiHost); err != nil || a.IsUnspecified() {
		apiHost = host
	}
	return &unicast.Response{Host: host, Port: port, Groups: m.Groups, Registrar: discovery.Registrar{Descriptor: &discovery.Descriptor{
		ServiceID: m.ServiceID, APIURL: "http://" + net.JoinHostPort(apiHost, apiPort), Groups: m.Groups,
		Locator: discovery.Locator{Host: host, Port: port}.String(),
	}}}, nil
}

// openServices opens the store and the services on it, in dependency
// order; closeServices undoes what was opened.
func (d *Daemon) openServices() error {
	st, err := store.Open(d.cfg.DataDir)
	if err != nil {
		return err
	}
	d.store = st
	d.grantor = lease.New(st, clock.Real{}, d.log)
	// Every request sent on someone's behalf goes through a client of
	// outbound's, dialing from the daemon's namespace.
	d.ldsNet = &ldsNetwork{ns: d.cfg.Namespace}
	out := func(timeout time.Duration) *http.Client {
		return outbound.New(outbound.Config{Timeout: timeout, Dial: d.ldsNet.dial})
	}
	d.dispatcher = event.New(event.Config{Logger: d.log, Client: out(outbound.DefaultTimeout)})
	d.registrar, err = lookup.New(lookup.Config{Store: st, Grantor: d.grantor, Dispatcher: d.dispatcher, Logger: d.log,
		OnMetaChange: d.announceNow, UnicastPort: d.unicastPort})
	if err != nil {
		return err
	}
	if d.cfg.Groups != nil {
		if err := d.registrar.SetGroups(d.cfg.Groups); err != nil {
			return fmt.Errorf("member groups: %w", err)
		}
	}
	d.lds, err = lds.New(lds.Config{Store: st, Grantor: d.grantor, Dispatcher: d.dispatcher, Logger: d.log.With("service", "lds"),
		Group:   group.Config{Network: d.ldsNet, AnnouncementInterval: d.cfg.LDSAnnounceInterval},
		Locator: locator.Config{Dial: d.ldsNet.dialLocator}})
	if err != nil {
		return err
	}
	d.renewal, err = renewal.New(renewal.Config{Store: st, Grantor: d.grantor, Dispatcher: d.dispatcher,
		SafetyMargin: d.cfg.RenewalMargin, Logger: d.log.With("service", "renewal"),
		Renewer: renewal.HTTPRenewer{Client: out(30 * time.Second)}})
	if err != nil {
		return err
	}
	d.mailbox, err = mailbox.New(mailbox.Config{Store: st, Grantor: d.grantor, Logger: d.log.With("service", "mailbox"),
		MaxPerRegistration: d.cfg.MailboxMaxPerRegistration, MaxEvents: d.cfg.MailboxMaxEvents,
		Client: out(outbound.DefaultTimeout)})
	if err != nil {
		return err
	}
	if err := d.grantor.Load(); err != nil {
		return err
	}
	d.renewal.Start()
	d.mailbox.Start()
	return nil
}

func (d *Daemon) closeServices() {
	if d.mailbox != nil {
		d.mailbox.Close()
	}
	if d.renewal != nil {
		d.renewal.Close()
	}
	if d.lds != nil {
		d.lds.Close()
	}
	if d.grantor != nil {
		d.grantor.Close()
	}
	if d.dispatcher != nil {
		d.dispatcher.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
}

// Addr is the address the API listens on, once started.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// Err reports a service that failed while running; the caller should shut
// down.
func (d *Daemon) Err() <-chan error { return d.errc }

// Shutdown stops every service, waiting for requests in flight until ctx
// ends, and returns once all of the daemon's goroutines have.
func (d *Daemon) Shutdown(ctx context.Context) error {
	if d.srv == nil {
		return nil
	}
	err := d.srv.Shutdown(ctx)
	d.wg.Wait()
	d.stopDiscovery()
	d.closeServices()
	if err != nil {
		return fmt.Errorf("stopping the API server: %w", err)
	}
	d.log.Info("jinid stopped")
	return nil
}

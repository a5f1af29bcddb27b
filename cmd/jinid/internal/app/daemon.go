// Package app is the composition root: it runs jinid's long-lived services in one process: the
// store, the lease grantor, event delivery, the lookup service's registrar
// and the HTTP API with its operations endpoints.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/announce"
	"github.com/jinid/jinid/cmd/jinid/internal/status"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
)

// DefaultClusterListen is where a node of a cluster serves the others
// unless told.
const DefaultClusterListen = ":4163"

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
	// ExcludeDefaultRoute: never multicast on an interface a default
	// route goes out of (a router's WAN), unless Include names it.
	ExcludeDefaultRoute bool
	// NoMulticast: no announcements, no answers to multicast requests;
	// unicast discovery only.
	NoMulticast bool
	// DiscoveryPort is the unicast discovery port (TCP); 0 picks a free
	// one (for tests).
	DiscoveryPort int
	// NoDNSSD turns off the DNS-SD (mDNS) advertisement.
	NoDNSSD bool
	// NoJava turns off the lookup service for Java clients: no Jini ERI
	// port, and unicast responses carry no Java registrar proxy.
	NoJava bool
	// JavaPort is the Jini ERI port Java clients call the registrar on;
	// 0 keeps the one of the last run (chosen free on the first), so
	// proxies Java clients hold stay valid across restarts.
	JavaPort int
	// JavaRegisterFrom lists the networks whose Java clients may register
	// and change services (Java clients send no token). With Anonymous
	// client or admin, any may; Java look-ups follow Anonymous like any
	// request without a token, and these networks may always look up.
	JavaRegisterFrom []netip.Prefix
	// NoTransactions turns off the transaction manager: its routes
	// answer that it does not run.
	NoTransactions bool
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
	// AllowOutbound lists prefixes requests on clients' behalf may go to
	// although the outbound policy refuses them (loopback, link-local,
	// this host's addresses, ...).
	AllowOutbound []netip.Prefix

	// APISocket is the unix socket the API is also served on: the local
	// administrator's, no token needed (file permissions decide). ""
	// serves none.
	APISocket string
	// SocketGroup may use the socket (mode 0660), by name or number; ""
	// leaves it the daemon's group.
	SocketGroup string
	// Anonymous is what a request without a token may do over the
	// network; "" is access.ScopeRead.
	Anonymous access.Scope
	// APIHosts are further names the API answers to (the Host header),
	// beyond its addresses, localhost and the host's names.
	APIHosts []string
	// Advertise is the host (address or DNS name) every URL and locator
	// the daemon hands out carries, instead of the address the peer
	// reached: behind NAT, or by a name.
	Advertise string
	// TLSCert and TLSKey, both or neither, serve the network API over
	// HTTPS.
	TLSCert, TLSKey string
	// Limits bound what clients and peers may cost; zero fields take the
	// defaults (DefaultLimits).
	Limits Limits
	// Version is the build's, for the status page.
	Version string
	// SnapshotDir, if set, is where consistent snapshots of the store
	// are written (persistent storage, while DataDir may be a tmpfs); the
	// newest is restored at start when DataDir holds no store.
	SnapshotDir string
	// ServicesDir holds the static services, a JSON file each (static.go);
	// "" none. Services are the config file's.
	ServicesDir string
	Services    []StaticService
	// SnapshotInterval between scheduled snapshots; 0 means
	// DefaultSnapshotInterval.
	SnapshotInterval time.Duration
	// Store is "embedded" (or "": the bbolt file in DataDir) or "etcd":
	// the store in the cluster Etcd names, held by one daemon at a time.
	Store string
	Etcd  store.EtcdConfig
	// ClusterListen, with Store etcd, is where the node serves the other
	// nodes (the shards it holds): DefaultClusterListen if empty.
	ClusterListen string
	// ClusterCA, ClusterCert and ClusterKey, with Store etcd, are the
	// site's certificate authority and this node's certificate signed by
	// it: the nodes then admit on the cluster port only certificates it
	// signed (a member record only says where a node is). Without them
	// each node makes a certificate at start and the others pin the
	// hash its member record holds: whoever can write the prefix in
	// etcd can then join.
	ClusterCA, ClusterCert, ClusterKey string
}

// Stores are the places the daemon keeps its data.
const (
	StoreEmbedded = "embedded"
	StoreEtcd     = "etcd"
)

// Validate reports everything wrong with c, joined (errors.Join), so
// that "jinid config check" can list it all in one pass.
func (c Config) Validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if err := c.validateListen(); err != nil {
		add(err)
	}
	if c.DataDir == "" {
		add(errors.New("data directory: none given"))
	}
	if c.AnnounceInterval != 0 && c.AnnounceInterval < announce.MinInterval {
		add(fmt.Errorf("announcement interval %s is below the minimum %s", c.AnnounceInterval, announce.MinInterval))
	}
	if c.RenewalMargin < 0 {
		add(fmt.Errorf("renewal margin %s is negative", c.RenewalMargin))
	}
	if c.LDSAnnounceInterval < 0 || c.LDSAnnounceInterval != 0 && c.LDSAnnounceInterval < announce.MinInterval {
		add(fmt.Errorf("the lookup discovery service's expected announcement interval %s is below the minimum %s", c.LDSAnnounceInterval, announce.MinInterval))
	}
	if c.DiscoveryPort < 0 || c.DiscoveryPort > 65535 {
		add(fmt.Errorf("discovery port %d out of range 0-65535", c.DiscoveryPort))
	}
	for _, p := range append(slices.Clone(c.Include), c.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			add(fmt.Errorf("interface pattern %q: %w", p, err))
		}
	}
	if err := c.Limits.validate(); err != nil {
		add(err)
	}
	if c.SnapshotDir != "" {
		a, _ := filepath.Abs(c.SnapshotDir)
		b, _ := filepath.Abs(c.DataDir)
		if a == b {
			add(fmt.Errorf("snapshot directory %s: it is the data directory; give one on persistent storage apart from it", c.SnapshotDir))
		}
	}
	switch c.Store {
	case "", StoreEmbedded:
		if len(c.Etcd.Endpoints) > 0 {
			add(errors.New("etcd endpoints given for the embedded store: give --store etcd too, or leave them out"))
		}
		if c.ClusterCA != "" || c.ClusterCert != "" || c.Etcd.Insecure {
			add(errors.New("cluster settings (--cluster-ca, --cluster-cert, --etcd-insecure) given for the embedded store: give --store etcd too, or leave them out"))
		}
	case StoreEtcd:
		if !store.Etcd {
			add(errors.New("store etcd: this jinid is built without etcd (as the router build is); use the full build"))
		}
		if len(c.Etcd.Endpoints) == 0 {
			add(errors.New("store etcd: give the cluster's client URLs (--etcd-endpoints)"))
		}
		for _, e := range c.Etcd.Endpoints {
			if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(fmt.Errorf("etcd endpoint %q: want http://host:port or https://host:port", e))
			}
		}
		if (c.Etcd.CertFile == "") != (c.Etcd.KeyFile == "") {
			add(errors.New("etcd TLS: give both a client certificate and its key, or neither"))
		}
		if c.SnapshotDir != "" {
			add(errors.New("snapshots are of the embedded store; a store in etcd is backed up by etcd (etcdctl snapshot save)"))
		}
		if c.Etcd.LeaseTTL != 0 && (c.Etcd.LeaseTTL < 2*time.Second || c.Etcd.LeaseTTL > 5*time.Minute || c.Etcd.LeaseTTL%time.Second != 0) {
			add(fmt.Errorf("etcd lease TTL %s: want whole seconds from 2s to 5m (etcd's leases are in seconds)", c.Etcd.LeaseTTL))
		}
		if strings.ContainsAny(c.Etcd.Node, "/\x00\n") || len(c.Etcd.Node) > 128 {
			add(fmt.Errorf("node name %q: at most 128 characters, without / or control characters", c.Etcd.Node))
		}
		if c.ClusterListen != "" {
			if _, port, err := net.SplitHostPort(c.ClusterListen); err != nil || port == "" {
				add(fmt.Errorf("cluster listen address %q: want host:port (e.g. %s)", c.ClusterListen, DefaultClusterListen))
			}
		}
		if c.Etcd.Prefix != "" && !strings.HasPrefix(c.Etcd.Prefix, "/") {
			add(fmt.Errorf("etcd prefix %q: want a key path starting with /", c.Etcd.Prefix))
		}
		if why := store.InsecureEndpoint(c.Etcd.Endpoints, c.Etcd.CertFile); why != "" && !c.Etcd.Insecure {
			add(fmt.Errorf("etcd %s; use https with a client certificate (--etcd-cert, --etcd-key, --etcd-ca: docs/cluster.md), or give --etcd-insecure to run so anyway", why))
		}
		if (c.ClusterCA == "") != (c.ClusterCert == "") || (c.ClusterCert == "") != (c.ClusterKey == "") {
			add(errors.New("cluster TLS: give the site's CA, this node's certificate and its key together (--cluster-ca, --cluster-cert, --cluster-key), or none"))
		}
	default:
		add(fmt.Errorf("store %q: want embedded or etcd", c.Store))
	}
	if c.SnapshotInterval != 0 && c.SnapshotInterval < time.Minute {
		add(fmt.Errorf("snapshot interval %s: at least 1m (each snapshot writes the whole store)", c.SnapshotInterval))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		add(errors.New("API TLS: give both a certificate and its key, or neither"))
	}
	if c.TLSCert != "" && !TLS {
		add(errors.New("API TLS: this jinid is built without TLS (as the router build is) and serves plain HTTP only; use the full jinid build for HTTPS, or a TLS proxy in front"))
	}
	if c.Anonymous != "" {
		if _, err := access.ParseAnonymous(string(c.Anonymous)); err != nil {
			add(err)
		}
	}
	names := map[string]bool{}
	for i, sv := range c.Services {
		switch {
		case sv.Name == "":
			add(fmt.Errorf("services[%d]: a name is required (what its ServiceID is made of)", i))
		case names[sv.Name]:
			add(fmt.Errorf("services[%d]: the name %q is another's too", i, sv.Name))
		}
		names[sv.Name] = true
		if _, err := sv.entry(sv.Name, ""); err != nil {
			add(fmt.Errorf("services[%d] (%s): %w", i, sv.Name, err))
		}
		if len(sv.Types) == 0 && len(sv.Attributes) == 0 {
			add(fmt.Errorf("services[%d] (%s): a type or an attribute is required", i, sv.Name))
		}
		for _, t := range sv.Types {
			if !apitypes.JavaName(t) {
				add(fmt.Errorf("services[%d] (%s): type %q is not a Java class or interface name", i, sv.Name, t))
			}
		}
		for _, a := range sv.Attributes {
			if !apitypes.JavaName(a.Type) {
				add(fmt.Errorf("services[%d] (%s): entry class %q is not a Java class name", i, sv.Name, a.Type))
			}
		}
	}
	for _, h := range append([]string{c.Advertise}, c.APIHosts...) {
		if h != "" && !validHost(h) {
			add(fmt.Errorf("host name %q: want an address or a DNS name, without a scheme or a port", h))
		}
	}
	return errors.Join(errs...)
}

// validateListen checks the API listen address.
func (c Config) validateListen() error {
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
	return nil
}

// validHost reports whether h is an IP address or a DNS name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" ||
			strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
	}
	return true
}

// Daemon owns the process's services. Start it once, Shutdown it once.
type Daemon struct {
	cfg    Config
	limits Limits // cfg.Limits with the defaults filled in
	// limitsMu guards limits against a reload, for the shards, built
	// in goroutines of their own.
	limitsMu sync.Mutex
	log      *slog.Logger
	errc     chan error

	// parts is every long-lived component, in the order they start; they
	// shut down in reverse (the API first, the store last).
	parts   lifecycle.Group
	running atomic.Bool

	// What the hooks below reach: set while building, before any part
	// starts.
	apiLn     net.Listener
	apiSock   net.Listener // nil without a socket
	apiAddrs  addrsCache
	hostNames []string
	store     *store.Store
	// held is store, for the API's accept path, which runs before the
	// store is open (a node waiting forwards meanwhile).
	held      atomic.Pointer[store.Store]
	registrar *lookup.Registrar
	grantor   *lease.Grantor
	events    *event.Dispatcher
	policy    *outbound.Policy
	unicast   *unicast.Server
	java      javaProxies // nil with NoJava or in a build without Java
	// renewers are the renewal service's by grantor (serviceSet).
	renewers *renewal.Renewers
	// javaOwns says a jeri listener is one of jinid's own Java objects
	// (a mailbox listener of its event mailbox); nil without Java.
	javaOwns func(*url.URL) bool
	// javaAPI is the Java forms of registrations on the API (javaServices);
	// nil without Java.
	javaAPI httpjson.Service
	// javaJoin are jinid's own services as Java finds them, which the
	// join manager registers where it registers static services too;
	// javaProxy makes the service object of one (by ServiceID) for a
	// host.
	javaJoin  []lookup.Item
	javaProxy func(serviceID, host string) ([]byte, error)
	host      *mcast.Host // nil with multicast off
	// joinSet hands the static services to the join manager (nil in a
	// build without Java, which has none).
	joinSet func([]staticEntry) error
	// publishSet hands the static services to DNS-SD; nil when it is off,
	// publishOff saying why.
	publishSet func([]published)
	publishOff string
	// announcer is nil with multicast off; the registrar's hook may run
	// in any goroutine.
	announcer atomic.Pointer[announce.Announcer]
	// mcPort is the lookup service's discovery port (nil with multicast
	// off): readiness asks it which interfaces it serves.
	mcPort atomic.Pointer[mcast.Port]
	// obs is what the daemon shows of itself.
	obs *observed
	// mbox is the event mailbox, once made: a shard's delivery to one
	// of its listeners is no request at all.
	mbox atomic.Pointer[mailbox.Service]
	// cluster is the node's part of a cluster (nothing without one).
	// cl is the node of a cluster this daemon is (nil on a single box).
	cl clusterPart
	// staticGood is what each file of the services directory gave last
	// time it read (a file that does not read keeps it).
	staticMu   sync.Mutex
	staticGood map[string]staticEntry
	// staticSig sums up the static services registered last.
	staticSig string
}

// New checks cfg and returns a Daemon ready to Start.
func New(cfg Config, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Daemon{cfg: cfg, limits: cfg.Limits.withDefaults(), log: log, errc: make(chan error, 1),
		obs: newObserved(time.Now(), cfg.AnnounceInterval)}, nil
}

// Start builds the parts and starts them in order; it returns once the
// API listens, so a failure to bind is reported here. On failure every
// part made is shut down.
func (d *Daemon) Start(ctx context.Context) error {
	if err := d.build(ctx); err != nil {
		return errors.Join(err, d.parts.Shutdown(context.WithoutCancel(ctx)))
	}
	if err := d.parts.Start(ctx); err != nil {
		return err
	}
	d.running.Store(true)
	did, errs := d.syncStatic(d.cfg.ServicesDir, d.cfg.Services)
	for _, l := range did {
		d.log.Info(l)
	}
	for _, err := range errs {
		d.log.Warn("a static service is not registered", "err", err)
	}
	items, notifies := d.registrar.Count()
	d.log.Info("jinid started", "api", d.apiURL(netip.Addr{}), "socket", d.cfg.APISocket, "data", d.store.Path(),
		"lookup", d.registrar.Meta().ServiceID, "groups", discovery.GroupsText(d.registrar.Meta().Groups, ","), "unicast", d.unicast.Addr(),
		"multicast", d.multicastState(), "registrations", items, "notify_registrations", notifies)
	d.publish(ctx)
	return nil
}

// publish tells the other nodes of a cluster where this one, which holds
// the store, serves: its addresses and ports. They forward what
// reaches them there. Nothing for an embedded store.
func (d *Daemon) publish(ctx context.Context) {
	if d.cl == nil {
		return
	}
	if err := d.cl.publish(ctx, d.nodeAddrs(), d.apiPort(), d.unicastPort()); err != nil {
		d.log.Warn("telling the other nodes where this one serves", "err", err)
	}
}

// listenAPISocket opens the API's unix socket, if there is to be one.
func (d *Daemon) listenAPISocket() error {
	if d.cfg.APISocket == "" {
		return nil
	}
	sock, err := listenSocket(d.cfg.APISocket, d.cfg.SocketGroup)
	if err != nil {
		return err
	}
	d.apiSock = connlimit.Listener(sock, connlimit.Config{Max: d.limits.SocketConns})
	d.parts.Add("the API socket", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return closeListener(sock) }})
	return nil
}

// build makes every part, adding each to d.parts as it is made (so a
// failure part-way shuts down those made). The order is the start order:
// the store and event delivery under the services; leases loaded once
// every service has registered its kind; the network side before the
// lookup discovery service, which needs it; the API last, once all it
// serves runs.
func (d *Daemon) build(ctx context.Context) error {
	// The API's listener first: a port in use is the likeliest failure,
	// and DNS-SD advertises the port.
	apiLn, err := (&net.ListenConfig{}).Listen(ctx, "tcp", d.cfg.APIListen)
	if err != nil {
		return fmt.Errorf("listening for the API on %s: %w", d.cfg.APIListen, err)
	}
	d.apiLn = apiLn
	d.parts.Add("the API listener", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return closeListener(apiLn) }})
	// Beyond the caps a connection is closed at once; this host's own
	// (a health probe) have places of their own.
	d.apiLn = connlimit.Listener(d.apiLn, connlimit.Config{Max: d.limits.APIConns, PerSource: d.limits.APIConnsPerSource,
		Loopback: d.limits.APIConnsPerSource, SourceBits4: d.limits.SourcePrefix4, SourceBits6: d.limits.SourcePrefix6})

	if d.cfg.SnapshotDir != "" {
		if _, err := restoreSnapshot(d.cfg.DataDir, d.cfg.SnapshotDir, d.log); err != nil {
			return err
		}
	}
	// A node of a cluster serves its host's administrator on the socket
	// from the start, while it waits too (its door forwards what the
	// registry's copy does not answer to the holder, as the
	// administrator's). An embedded store's daemon opens it once it
	// holds the store's file: a second daemon on the same data
	// directory touches nothing of the first's.
	if d.cfg.Store == StoreEtcd {
		if err := d.listenAPISocket(); err != nil {
			return err
		}
	}
	// A node of a cluster waits here while another holds the store,
	// forwarding its API (TLS and all) to the holder meanwhile.
	st, err := d.openStore(ctx)
	if err != nil {
		return err
	}
	d.store = st
	d.held.Store(st)
	if d.cfg.TLSCert != "" {
		if d.apiLn, err = listenTLS(d.apiLn, d.cfg.TLSCert, d.cfg.TLSKey); err != nil {
			return err
		}
	}
	if d.cfg.Store != StoreEtcd {
		if err := d.listenAPISocket(); err != nil {
			return err
		}
	}
	st.Instrument(d.obs.metrics)
	d.parts.Add("the store", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return st.Close() }})
	d.watchHold(st)
	var snaps *snapshots
	if d.cfg.SnapshotDir != "" {
		// Stopped just before the store closes, once every service has
		// stopped: the last snapshot holds all they acknowledged.
		snaps = newSnapshots(st, d.cfg.SnapshotDir, cmp.Or(d.cfg.SnapshotInterval, DefaultSnapshotInterval), d.log, d.obs.metrics)
		d.parts.Add("snapshots", snaps)
	}

	// Every request sent on someone's behalf goes through a client of
	// outbound's, dialing from the daemon's namespace under one address
	// policy; every URL handed in is checked against it too.
	// A listener of this daemon's own event mailbox is no request at
	// all: any client may name one, and its events are handed over in
	// the process (the mailbox is made below, before anything is served).
	policy := outbound.NewPolicy(outbound.PolicyConfig{Allow: d.cfg.AllowOutbound, Self: d.ownAddrs, Logger: d.log,
		Inside: d.ownListener, Acting: st.Acting, Deployment: d.deployment, DeploymentNames: d.deploymentNames})
	out := func(timeout time.Duration) *http1.Client {
		return outbound.New(outbound.Config{Timeout: timeout, Namespace: d.cfg.Namespace, Policy: policy})
	}
	dispatcher := event.New(event.Config{Logger: d.log, Client: out(outbound.DefaultTimeout),
		Metrics: d.obs.metrics, OnFailure: d.obs.onDeliveryFailed})
	d.parts.Add("event delivery", dispatcher)
	d.events, d.policy = dispatcher, policy

	// The lookup discovery service discovers through the namespace's
	// multicast host (a node of a cluster's: its discovery, shared with
	// its shards').
	var ldsMC *group.Multicast
	if !d.cfg.NoMulticast {
		if err := d.buildHost(); err != nil {
			return err
		}
		if d.sharedHost() == nil {
			if ldsMC, err = group.NewMulticast(group.MulticastConfig{Host: d.host, Namespace: d.cfg.Namespace,
				Logger: d.log.With("service", "lds")}); err != nil {
				return err
			}
		}
	}
	set, err := d.buildSet(st, setOf{log: d.log, policy: policy, dispatcher: dispatcher, shard: -1, ldsMulticast: ldsMC})
	if err != nil {
		return err
	}
	grantor, ldsSvc, renewalSvc, mailboxSvc, txnSvc := set.grantor, set.lds, set.renewal, set.mailbox, set.txn
	d.grantor = grantor
	lm := d.limits
	if d.registrar, err = lookup.New(lookup.Config{Store: st, Grantor: grantor, Outbound: policy, Dispatcher: dispatcher, Logger: d.log,
		ItemPolicy:   leasePolicy(lookup.DefaultItemPolicy, lm.ServiceLeaseMax, "serviceLeaseMax"),
		NotifyPolicy: leasePolicy(lookup.DefaultNotifyPolicy, lm.NotifyLeaseMax, "notifyLeaseMax"),
		OnMetaChange: d.announceNow, UnicastPort: d.unicastPort,
		MaxItemBytes: d.limits.ItemBytes, ItemsBytes: d.limits.ItemsBytes, ItemsBytesPerOwner: d.limits.ItemsBytesPerClient, PageSize: d.limits.PageSize, MaxPage: d.limits.MaxPage, PageBytes: d.limits.PageBytes, Listings: d.limits.Listings}); err != nil {
		return err
	}
	if d.cfg.Groups != nil {
		if err := d.registrar.SetGroups(d.cfg.Groups); err != nil {
			return fmt.Errorf("member groups: %w", err)
		}
	}
	d.setQuotas(grantor)
	d.mbox.Store(mailboxSvc)
	dispatcher.SetInside(d.inside)
	d.obs.grantor, d.obs.lds, d.obs.renewal, d.obs.mailbox, d.obs.txn = grantor, ldsSvc, renewalSvc, mailboxSvc, txnSvc
	d.renewers = set.renewers
	d.countsMetrics()
	set.add(&d.parts)

	if err := d.buildDiscovery(ctx); err != nil {
		return err
	}
	if ldsMC != nil {
		d.parts.Add("the lookup discovery service's multicast", ldsMC)
	}
	d.parts.Add("the lookup discovery service", ldsSvc)
	// Once it runs: the node's discovery, in a cluster (what the other
	// nodes hear on their segments too).
	if d.cl != nil {
		d.cl.shareDiscovery(&d.parts, ldsSvc)
	}
	switch {
	case d.cfg.NoMulticast:
		d.publishOff = "multicast is off (--no-multicast), and mDNS with it"
	case d.cfg.NoDNSSD:
		d.publishOff = "DNS-SD is off (--no-dns-sd)"
	default:
		d.buildDNSSD()
	}
	if err := d.buildJoin(); err != nil {
		return err
	}

	tokens, err := access.NewTokens(access.TokensConfig{Store: st, Logger: d.log, BootstrapFile: filepath.Join(d.cfg.DataDir, AdminTokenFile)})
	if err != nil {
		return err
	}
	d.parts.Add("tokens", tokens)
	if d.cl != nil {
		if err := d.cl.followTokens(ctx, tokens); err != nil {
			return err
		}
	}
	d.hostNames = d.names()
	guard := access.NewGuard(access.GuardConfig{Tokens: tokens, Anonymous: d.cfg.Anonymous, Host: d.hostAllowed, Logger: d.log})
	// In a cluster, each service's requests go where it places them.
	services := append(d.placedServices(append([]httpjson.Service{d.registrar, ldsSvc}, plainRoutes(grantor, renewalSvc, mailboxSvc, txnSvc)...)), tokens)
	var notRun []api.NotRun
	if txnSvc == nil {
		notRun = append(notRun, api.NotRun{Prefix: "/v1/transactions", Name: "the transaction manager (started with --no-transactions)"})
	}
	services = d.javaServices(services)
	if snaps != nil {
		services = append(services, snaps)
	} else {
		notRun = append(notRun, api.NotRun{Prefix: "/v1/snapshot", Name: "snapshots (start the daemon with --snapshot-dir)"})
	}
	mux := api.New(api.Config{Services: services, NotRun: notRun,
		Guard: guard, BodyBytes: int64(d.limits.BodyBytes), Logger: d.log,
		Live: d.liveness, Ready: d.readiness, Metrics: d.obs.metrics, Status: status.Handler(d.statusPage)})
	d.parts.Add("the API", d.apiServer(mux))
	// Stopped before the API: the other nodes hear at once that this one
	// serves no more.
	if d.cl != nil {
		d.cl.serveForwarded(mux)
	}
	return nil
}

// ldsConfig is a lookup discovery service's configuration: c with the
// group discovery limits, and, in a cluster, the node's discovery
// network (shareDiscovery hands the service what it hears).
func (d *Daemon) ldsConfig(c lds.Config, lm Limits) lds.Config {
	c.Group = group.Config{AnnouncementInterval: d.cfg.LDSAnnounceInterval, MaxContacts: lm.Contacts, MaxPendingContacts: lm.ContactsPending}
	if d.cl != nil {
		c = d.cl.shareNetwork(c)
	}
	return c
}

// plainRoutes are the parts of the API of the grantor, the renewal
// service, the mailbox and the transaction manager (nil with
// NoTransactions: left out), as one box serves them.
func plainRoutes(g *lease.Grantor, r *renewal.Service, m *mailbox.Service, t *txn.Service) []httpjson.Service {
	out := []httpjson.Service{g, r, m}
	if t != nil {
		out = append(out, t)
	}
	return out
}

// ownListener says u is a listener of this daemon's event mailbox (or
// its cluster's): a delivery to it is no request at all (Inside).
func (d *Daemon) ownListener(u *url.URL) bool {
	if mb := d.mbox.Load(); mb != nil && mb.IsOwnListener(u) {
		return true
	}
	if d.javaOwns != nil && d.javaOwns(u) {
		return true
	}
	_, ok := d.clusterInside(u.String())
	return ok
}

// inside is the receiver, in the process, of a listener of this
// daemon's event mailbox (or its cluster's): the dispatchers hand their
// events over rather than POST them to the daemon's own API.
func (d *Daemon) inside(listener string) (event.Receiver, bool) {
	if mb := d.mbox.Load(); mb != nil {
		if r, ok := mb.Inside(listener); ok {
			return r, true
		}
	}
	return d.clusterInside(listener)
}

// fromNode says a connection's source is a node of this one's cluster,
// forwarding its segment's clients' unicast discovery: it is held to the
// cap in all, not to one source's (each client was held to that by the
// node).
func (d *Daemon) fromNode(a netip.Addr) bool {
	return d.held.Load() != nil && slices.Contains(d.memberAddrs(), a)
}

// nodeAddrs are the addresses another node of a cluster reaches this one
// at: the API's if it listens on one, else the host's (IPv4 first; not
// loopback nor link-local, which another host cannot use).
func (d *Daemon) nodeAddrs() []netip.Addr {
	if b := d.apiBound(); b.IsValid() && !b.IsUnspecified() {
		return []netip.Addr{b}
	}
	own, err := d.ownAddrs()
	if err != nil {
		d.log.Warn("reading this host's addresses for the other nodes", "err", err)
	}
	var addrs []netip.Addr
	for _, a := range own {
		if !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsUnspecified() {
			addrs = append(addrs, a.Unmap())
		}
	}
	// sort.SliceStable: shared by every element type (docs/performance.md, "Router builds").
	sort.SliceStable(addrs, func(i, j int) bool { return addrs[i].BitLen() < addrs[j].BitLen() })
	return addrs
}

// openStore opens the embedded store, or the one in etcd (openEtcd).
func (d *Daemon) openStore(ctx context.Context) (*store.Store, error) {
	if d.cfg.Store != StoreEtcd {
		return store.Open(d.cfg.DataDir)
	}
	return d.openCluster(ctx)
}

// watchHold stops the daemon when it loses the store's hold. Added after
// the store, it stops before the store closes (which ends the hold).
func (d *Daemon) watchHold(st *store.Store) {
	lost := st.Lost()
	if lost == nil {
		return
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-lost:
			select {
			case d.errc <- errors.New("lost the hold of the store in etcd (cut off from the cluster past its lease): stopping, for the jinid waiting to take over"):
			default:
			}
		case <-stop:
		}
	}()
	d.parts.Add("the store's hold", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { close(stop); wg.Wait(); return nil }})
}

// buildDiscovery puts the lookup service on the network: the unicast
// discovery server, and unless NoMulticast, its announcer and request
// responder on the namespace's multicast host (buildHost), which the
// lookup discovery service's group discovery has a handle on too.
func (d *Daemon) buildDiscovery(ctx context.Context) error {
	var ln net.Listener
	err := d.cfg.Namespace.Do(func() error {
		var err error
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("", strconv.Itoa(d.cfg.DiscoveryPort)))
		return err
	})
	if err != nil {
		return fmt.Errorf("listening for unicast discovery on port %d: %w", d.cfg.DiscoveryPort, err)
	}
	d.unicast = unicast.NewServer(ln, unicast.ServerConfig{Respond: d.respond, Logger: d.log,
		MaxConns: d.limits.DiscoveryConns, MaxPerSource: d.limits.DiscoveryConnsPerSource,
		SourceBits4: d.limits.SourcePrefix4, SourceBits6: d.limits.SourcePrefix6, Exempt: d.fromNode})
	d.parts.Add("unicast discovery", d.unicast)
	if !d.cfg.NoJava {
		if err := d.buildJava(ctx); err != nil {
			return err
		}
	} else {
		d.withoutJava()
	}
	if d.cfg.NoMulticast {
		d.log.Info("multicast discovery off: no announcements, no answers to multicast requests; the lookup discovery service uses locators only")
		return nil
	}

	host := d.host
	id := d.registrar.Meta().ServiceID
	groups := func() []string { return d.registrar.Meta().Groups }
	responder := announce.NewResponder(announce.ResponderConfig{ServiceID: id, Groups: groups,
		Answer: d.unicast.Handle, Namespace: d.cfg.Namespace, Logger: d.log,
		MaxAnswers: d.limits.ConnectBacks, MaxPending: d.limits.ConnectBacksPending, Overloaded: d.announceOn})
	d.parts.Add("answers to multicast requests", responder)
	onMessage := func(m mcast.Message) {
		if m.Request != nil {
			responder.OnRequest(*m.Request, m.Packet)
		}
		if m.Announcement != nil {
			d.onAnnouncement(*m.Announcement, m.Packet)
		}
	}
	port, err := host.Open(mcast.PortConfig{OnMessage: onMessage, OnChange: d.announceNow})
	if err != nil {
		return fmt.Errorf("joining the discovery groups: %w", err)
	}
	d.parts.Add("the lookup service's discovery port", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return port.Close() }})
	d.mcPort.Store(port)
	announcer, err := announce.NewAnnouncer(announce.Config{Transport: port, ServiceID: id, Port: d.unicastPort(),
		Groups: groups, Interval: d.cfg.AnnounceInterval, Seq: announce.NewSeqSource(d.store), Logger: d.log})
	if err != nil {
		return err
	}
	d.announcer.Store(announcer)
	d.parts.Add("announcements", announcer)
	return nil
}

// buildHost makes the namespace's multicast host, which the lookup
// service and the lookup discovery service share.
func (d *Daemon) buildHost() error {
	if h := d.sharedHost(); h != nil {
		d.host = h // the node's, started with it
		return nil
	}
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: d.cfg.Namespace, Logger: d.log,
		Include: d.cfg.Include, Exclude: d.cfg.Exclude, ExcludeDefaultRoute: d.cfg.ExcludeDefaultRoute,
		Metrics: mcast.NewMetrics(d.obs.metrics)})
	if err != nil {
		return err
	}
	d.host = host
	d.parts.Add("the multicast host", host)
	return nil
}

// apiServer serves the API on the listener opened first, and on the
// socket.
func (d *Daemon) apiServer(h http.Handler) lifecycle.Service {
	// Timeouts for a LAN: a client that sends its headers slower than
	// this, or keeps an idle connection longer, is a slowloris or has
	// gone; a long poll (the mailbox's next) waits at most 25 s.
	stopping := newStopSignal()
	srv := &http1.Server{
		Handler:           h,
		ConnContext:       stopping.connContext(d.connContext),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		Logger:            d.log,
	}
	var wg sync.WaitGroup
	return lifecycle.Funcs{
		StartFunc: func(context.Context) error {
			for _, ln := range []net.Listener{d.apiLn, d.apiSock} {
				if ln == nil {
					continue
				}
				wg.Go(func() {
					if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
						select {
						case d.errc <- fmt.Errorf("serving the API on %s: %w", ln.Addr(), err):
						default:
						}
					}
				})
			}
			return nil
		},
		ShutdownFunc: func(ctx context.Context) error {
			stopping.stop()
			err := srv.Shutdown(ctx)
			wg.Wait()
			if err != nil {
				return fmt.Errorf("stopping the API server: %w", err)
			}
			return nil
		},
	}
}

// stopSignal tells a server's requests when it begins to stop
// (httpjson.WithStopping): long polls end at once, rather than hold the
// daemon's stop for their whole wait (a client watching held it 10 s,
// and the daemon exited 1).
type stopSignal struct {
	ch   chan struct{}
	once sync.Once
}

func newStopSignal() *stopSignal { return &stopSignal{ch: make(chan struct{})} }

// connContext is next's connection context, told of the stop.
func (s *stopSignal) connContext(next func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		return httpjson.WithStopping(ctx, s.ch)
	}
}

// stop says the server is stopping (once).
func (s *stopSignal) stop() { s.once.Do(func() { close(s.ch) }) }

// closeListener closes ln; one closed already (by its server) is no
// error.
func closeListener(ln net.Listener) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// ownAddrs lists the addresses of the daemon's host (in its namespace):
// requests on clients' behalf never go there.
func (d *Daemon) ownAddrs() ([]netip.Addr, error) {
	var out []netip.Addr
	err := d.cfg.Namespace.Do(func() error {
		addrs, err := net.InterfaceAddrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p.Addr())
			}
		}
		return err
	})
	return out, err
}

// announceNow announces at once (groups or addresses changed).
func (d *Daemon) announceNow() {
	if a := d.announcer.Load(); a != nil {
		a.Trigger()
	}
}

// announceOn announces at once on one interface and family: requesters
// there could not be answered.
func (d *Daemon) announceOn(ifIndex, family int) {
	if a := d.announcer.Load(); a != nil {
		a.AnnounceOn(ifIndex, family)
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
	if d.cfg.Advertise != "" {
		host = d.cfg.Advertise
	}
	port := d.unicastPort()
	m := d.registrar.Meta()
	desc := &discovery.Descriptor{
		ServiceID: m.ServiceID, APIURL: d.apiURL(ap.Addr().Unmap()), Groups: m.Groups,
		Locator: discovery.Locator{Host: host, Port: port}.String(),
	}
	reg := discovery.Registrar{Descriptor: desc}
	if d.java != nil {
		if reg.Proxy, err = d.java.Proxy(host, desc); err != nil {
			return nil, err
		}
	}
	return &unicast.Response{Host: host, Port: port, Groups: m.Groups, Registrar: reg}, nil
}

// multicastState says how multicast discovery stands, for the start line.
func (d *Daemon) multicastState() string {
	p := d.mcPort.Load()
	switch {
	case d.cfg.NoMulticast:
		return "off"
	case p == nil || len(p.Joined()) == 0:
		return "waiting (no eligible interface)"
	}
	names := map[string]bool{}
	for _, j := range p.Joined() {
		names[j.Name] = true
	}
	return fmt.Sprintf("on (%s)", strings.Join(slices.Sorted(maps.Keys(names)), ", "))
}

// Addr is the address the API listens on, once started.
func (d *Daemon) Addr() net.Addr { return d.apiLn.Addr() }

// Err reports a service that failed while running; the caller should shut
// down.
func (d *Daemon) Err() <-chan error { return d.errc }

// Shutdown stops every part in reverse order of starting, waiting for
// requests in flight until ctx ends, and returns once all of the daemon's
// goroutines have.
func (d *Daemon) Shutdown(ctx context.Context) error {
	err := d.parts.Shutdown(ctx)
	if d.running.Swap(false) {
		d.log.Info("jinid stopped")
	}
	return err
}

var _ lifecycle.Service = (*Daemon)(nil)

// DefaultSnapshotInterval is the time between scheduled snapshots: four
// a day, so a reboot loses at most six hours while the flash sees a few
// writes of the store a day.
const DefaultSnapshotInterval = 6 * time.Hour

// javaProxies makes the Java registrar proxy of unicast responses.
type javaProxies interface {
	Proxy(host string, d *discovery.Descriptor) ([]byte, error)
}

//go:build !jinid_omit_etcd

package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/cluster"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/store"
)

// minTxnOps is the --max-txn-ops below which the daemon warns: a
// renewal set or mailbox of a thousand cancelled in one transaction.
const minTxnOps = 4096

// openEtcd makes this process a node of the deployment in etcd
// (joinCluster), whose shards it serves from then on, and opens the
// deployment's store held by this node alone: while another node holds
// it, this one waits, standing for the registry on its segments
// (standby). When the node loses its lease (cut off from etcd past it),
// the daemon stops (watchHold), for another to take over; it could
// change nothing anyway.
func (c *clusterNode) open(ctx context.Context) (*store.Store, error) {
	d := c.d
	cfg := d.cfg.Etcd
	if cfg.Node == "" {
		host, _ := os.Hostname()
		cfg.Node = fmt.Sprintf("%s-%d", host, os.Getpid())
		d.cfg.Etcd.Node = cfg.Node
	}
	if why := store.InsecureEndpoint(cfg.Endpoints, cfg.CertFile); why != "" {
		// Allowed (--etcd-insecure), or the daemon would not have
		// started; said at every start.
		d.log.Warn("etcd is reached insecurely, as --etcd-insecure allows: whoever reaches it can write the store (tokens, members: docs/security.md, Cluster)",
			"why", why, "endpoints", cfg.Endpoints)
	}
	// Resolved before anything is sent for a client (the shards send
	// as soon as they are taken).
	c.deploy = cluster.NewDeployment(cfg.Endpoints)
	if err := c.deploy.Start(ctx); err != nil {
		return nil, err
	}
	d.parts.Add("resolving etcd's endpoints", lifecycle.Funcs{ShutdownFunc: c.deploy.Shutdown})
	node, err := c.joinCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var sb *standby
	hc := store.HoldConfig{
		Waiting: func(holder string) {
			d.log.Info("the store in etcd is held by another jinid: waiting to take over", "holder", holder, "prefix", cfg.Prefix)
			var err error
			if sb, err = c.startStandby(ctx, d.apiLn); err != nil {
				d.log.Warn("standby: not forwarding to the holder", "err", err)
			}
		},
		OnHolder: func(m store.Member) {
			if sb != nil {
				sb.setHolder(m)
			}
		},
	}
	st, err := node.Hold(ctx, "", hc)
	if sb != nil {
		// Whether it took the hold or gave up: the node serves its
		// API itself from here (or stops).
		d.apiLn = sb.stop()
	}
	if err != nil {
		return nil, err
	}
	d.log.Info("holding the store in etcd", "endpoints", cfg.Endpoints, "prefix", cmp.Or(cfg.Prefix, store.DefaultEtcdPrefix),
		"node", cfg.Node, "max_txn_ops", st.MaxTxnOps())
	if n := st.MaxTxnOps(); n < minTxnOps {
		d.log.Warn("the etcd cluster takes few operations per transaction: lease batches are cut to fit, and a renewal set or mailbox holding more than that cannot be cancelled in one; raise its members' --max-txn-ops (docs/cluster.md)",
			"max_txn_ops", n, "want", minTxnOps)
	}
	return st, nil
}

// followTokens has the holder's tokens follow etcd's token bucket, as
// every other node's do (door.go): a token made, revoked or changed in
// etcd by anything but this node (a restore, another writer) takes
// effect here within the same staleness bound, and token list shows
// etcd's set. The node's own changes come back through it too, the same.
func (c *clusterNode) followTokens(ctx context.Context, t *access.Tokens) error {
	d := c.d
	if c.node == nil {
		return nil
	}
	f, err := c.node.Follow(ctx, store.FollowConfig{Buckets: []string{access.TokensBucket}, Logger: d.log, Apply: t.Follow})
	if err != nil {
		return fmt.Errorf("following the tokens in etcd: %w", err)
	}
	d.parts.Add("following the tokens in etcd", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { f.Close(); return nil }})
	return nil
}

// clusterIdentity is how this node proves itself to the others: its
// certificate the site's CA signed (--cluster-ca), or one made now,
// whose hash its member record holds.
func (c *clusterNode) clusterIdentity(node string) (*cluster.Identity, error) {
	d := c.d
	if d.cfg.ClusterCA != "" {
		return cluster.NewSiteIdentity(d.cfg.ClusterCert, d.cfg.ClusterKey, d.cfg.ClusterCA)
	}
	d.log.Info("the nodes prove themselves by certificates pinned in their etcd member records: whoever can write the prefix in etcd can add a node; a site CA (--cluster-ca) closes that (docs/cluster.md)")
	return cluster.NewIdentity(node)
}

// joinCluster makes this process a node of the deployment: a key and
// certificate to prove itself to the other nodes with, its cluster
// listener (where they reach the shards it holds), its membership (an
// etcd lease, and its record under it), and the shards rendezvous
// hashing gives it, served from now on, while it waits for the
// deployment's hold too. Each is a part of the daemon, shut down in
// reverse: the shards let go before the membership ends.
func (c *clusterNode) joinCluster(ctx context.Context, cfg store.EtcdConfig) (*cluster.Joined, error) {
	d := c.d
	id, err := c.clusterIdentity(cfg.Node)
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cmp.Or(d.cfg.ClusterListen, DefaultClusterListen))
	if err != nil {
		return nil, fmt.Errorf("listening for the other nodes on %s: %w", cmp.Or(d.cfg.ClusterListen, DefaultClusterListen), err)
	}
	d.parts.Add("the cluster listener", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return closeListener(ln) }})
	// Every member says where it serves from the start, the API and
	// unicast discovery too: no request made for a client goes there.
	self := store.Member{Addrs: d.nodeAddrs(), APIPort: d.apiPort(), DiscoveryPort: d.cfg.DiscoveryPort,
		ClusterPort: int(netip.MustParseAddrPort(ln.Addr().String()).Port()), CertSHA256: id.SHA256(), SiteCA: id.SiteCA()}
	node, err := cluster.Join(ctx, cfg, self, d.log.With("component", "cluster"))
	if err != nil {
		return nil, err
	}
	d.parts.Add("this node's membership in etcd", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { node.Close(); return nil }})
	// The shards' mailboxes share one listener tag: any node knows the
	// cluster's listeners by it.
	if c.tag, err = node.Constant(ctx, "mailboxListenerTag", func() string { return ids.New()[:16] }); err != nil {
		return nil, err
	}
	peers := cluster.NewPeers(id, self.Addrs, node.Members, node.Refresh, d.log)
	c.node, c.peers = node, peers
	c.deploy.Joined(node)
	// The node's discovery, before its shards' lookup discovery
	// services hear it.
	var mc *mcast.HostConfig
	if !d.cfg.NoMulticast {
		mc = &mcast.HostConfig{Namespace: d.cfg.Namespace, Logger: d.log, Include: d.cfg.Include, Exclude: d.cfg.Exclude,
			ExcludeDefaultRoute: d.cfg.ExcludeDefaultRoute, Metrics: mcast.NewMetrics(d.obs.metrics)}
	}
	c.net = cluster.NewDiscovery(cluster.DiscoveryConfig{Node: node.EtcdNode, Etcd: d.cfg.Etcd, Multicast: mc, Namespace: d.cfg.Namespace,
		Self: func(st *store.Store) discovery.ServiceID { m, _, _ := lookup.ReadMeta(st); return m.ServiceID }, Logger: d.log})
	if err := c.net.Start(ctx); err != nil {
		return nil, err
	}
	d.parts.Add("this node's discovery of lookup services", lifecycle.Funcs{ShutdownFunc: c.net.Shutdown})
	mgr := cluster.NewManager(cluster.Config{Node: node, Build: c.buildShard, Peers: peers, Logger: d.log, Metrics: d.obs.metrics})
	// Only members' addresses get a connection, and only members'
	// certificates past the TLS handshake, which has a second.
	tlsLn := peers.Listen(ln)
	stopping := newStopSignal()
	srv := &http1.Server{Handler: mgr.PeerHandler(c.forwardedAPI()), ConnContext: stopping.connContext(nil), ReadHeaderTimeout: 5 * time.Second, HandshakeTimeout: cluster.HandshakeTimeout, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10, Logger: d.log}
	// Set before the first shard is built: its services reach the other
	// shards through it.
	c.shards = mgr
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(tlsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			select {
			case d.errc <- fmt.Errorf("serving the other nodes on %s: %w", ln.Addr(), err):
			default:
			}
		}
	})
	if err := mgr.Start(ctx); err != nil {
		srv.Close()
		wg.Wait()
		return nil, err
	}
	// A node cut off from etcd past its lease has lost its shards with
	// it, held or waited for: it stops, and they go to the others.
	stop := make(chan struct{})
	wg.Go(func() {
		select {
		case <-node.Lost():
			select {
			case d.errc <- errors.New("lost the hold of the store in etcd (cut off from the cluster past its lease): stopping; its shards, and the deployment's store if it held it, go to the other nodes"):
			default:
			}
		case <-stop:
		}
	})
	d.parts.Add("the shards", lifecycle.Funcs{ShutdownFunc: func(ctx context.Context) error {
		close(stop)
		stopping.stop()
		err := srv.Shutdown(ctx)
		wg.Wait()
		err = errors.Join(err, mgr.Shutdown(ctx))
		peers.Close()
		return err
	}})
	d.log.Info("a node of the cluster", "node", cfg.Node, "cluster_listen", ln.Addr().String(), "shards", cluster.Count)
	return node, nil
}

// shardStack is what a node runs for a shard it holds: a lease grantor,
// a lease renewal service and an event mailbox on the shard's store,
// with event delivery and an outbound client of their own, which send
// only while the shard is this node's (the store's Acting).
type shardStack struct {
	shardParts
	parts    lifecycle.Group
	handler  http.Handler
	services []httpjson.Service
}

func (s *shardStack) Start(ctx context.Context) error    { return s.parts.Start(ctx) }
func (s *shardStack) Shutdown(ctx context.Context) error { return s.parts.Shutdown(ctx) }
func (s *shardStack) Handler() http.Handler              { return s.handler }
func (s *shardStack) Services() []httpjson.Service       { return s.services }
func (s *shardStack) Inside(listener string) (event.Receiver, bool) {
	return s.mailbox.Inside(listener)
}

// buildShard makes shard k's stack on its store: the helper services,
// as the deployment's (buildSet), with the lookup service's notify
// registrations.
func (c *clusterNode) buildShard(k int, st *store.Store) (cluster.Stack, error) {
	d := c.d
	d.limitsMu.Lock()
	lm := d.limits
	d.limitsMu.Unlock()
	log := d.log.With("shard", k)
	policy := outbound.NewPolicy(outbound.PolicyConfig{Allow: d.cfg.AllowOutbound, Self: d.ownAddrs, Logger: log,
		Inside: d.ownListener, Acting: st.Acting, Deployment: d.deployment, DeploymentNames: d.deploymentNames})
	dispatcher := event.New(event.Config{Logger: log, Client: outbound.New(outbound.Config{Timeout: outbound.DefaultTimeout, Namespace: d.cfg.Namespace, Policy: policy}),
		Metrics: d.obs.metrics, OnFailure: d.obs.onDeliveryFailed})
	newID := func() string { return cluster.NewID(k) }
	set, err := d.buildSet(st, setOf{log: log, policy: policy, dispatcher: dispatcher, shard: k, newID: newID})
	if err != nil {
		return nil, err
	}
	grantor, svc, mb, tm, ldsSvc := set.grantor, set.renewal, set.mailbox, set.txn, set.lds
	dispatcher.SetInside(d.inside)
	// Its notify registrations hear of the registry's changes through
	// etcd, from where the last node holding the shard left off.
	notifier, err := lookup.NewNotifier(lookup.NotifierConfig{Store: st, Grantor: grantor, Outbound: policy, Dispatcher: dispatcher,
		Logger: log.With("service", "lookup"), Policy: leasePolicy(lookup.DefaultNotifyPolicy, lm.NotifyLeaseMax, "notifyLeaseMax"),
		NewID: newID, EventIDBase: shardEventIDs(k)})
	if err != nil {
		return nil, err
	}
	setQuotas(grantor, st, lm)
	mux := http.NewServeMux()
	services := append(plainRoutes(grantor, svc, mb, tm), notifier, ldsSvc)
	for _, svc := range services {
		svc.Routes(plainMux{mux})
	}
	body := int64(lm.BodyBytes)
	sh := &shardStack{shardParts: shardParts{store: st, grantor: grantor, renewal: svc, mailbox: mb, txn: tm, notify: notifier, lds: ldsSvc},
		services: services,
		handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if body > 0 {
				r = r.WithContext(httpjson.WithBodyLimit(r.Context(), body))
			}
			mux.ServeHTTP(w, r)
		})}
	sh.parts.Add("event delivery", dispatcher)
	set.add(&sh.parts)
	sh.parts.Add("the lookup discovery service", ldsSvc)
	c.shareDiscovery(&sh.parts, ldsSvc)
	var follower *store.Follower
	sh.parts.Add("the registry's changes for its notify registrations", lifecycle.Funcs{
		StartFunc: func(ctx context.Context) error {
			var err error
			follower, err = c.node.Follow(ctx, store.FollowConfig{Buckets: lookup.NotifierFollows(), From: notifier.Revision(),
				Prev: true, Apply: notifier.Apply, Logger: log})
			return err
		},
		ShutdownFunc: func(context.Context) error {
			if follower != nil {
				follower.Close()
			}
			return nil
		}})
	return sh, nil
}

// clusterNode is the daemon as a node of a cluster on etcd: what the
// daemon asks of it (clusterPart), and what it keeps.
type clusterNode struct {
	d *Daemon
	// shards is set once the node has joined.
	shards *cluster.Manager
	// tag begins the listeners of the shards' mailboxes.
	tag string
	// node is this node's membership, peers its way to the others, net
	// its discovery of lookup services.
	node  *cluster.Joined
	peers *cluster.Peers
	net   *cluster.Discovery
	// api is the deployment's API while this node holds the store, for
	// what the other nodes forward to it (nil otherwise).
	api atomic.Pointer[http.Handler]
	// deploy is the deployment's own endpoints, which no request made
	// for a client may reach.
	deploy *cluster.Deployment
}

func newCluster(d *Daemon) clusterPart { return &clusterNode{d: d} }

func (c *clusterNode) memberAddrs() []netip.Addr {
	if c.node == nil {
		return nil
	}
	return c.node.Addrs()
}

func (c *clusterNode) publish(ctx context.Context, addrs []netip.Addr, apiPort, discoveryPort int) error {
	return c.node.Publish(ctx, addrs, apiPort, discoveryPort)
}

func (c *clusterNode) deployment() []netip.AddrPort {
	if c.deploy == nil {
		return nil
	}
	return c.deploy.Endpoints()
}

func (c *clusterNode) deploymentNames() []string {
	if c.deploy == nil {
		return nil
	}
	return c.deploy.Names()
}

// mailboxTag begins the listeners of the shards' mailboxes.
func (c *clusterNode) mailboxTag() string { return c.tag }

// host is the node's multicast host, which the daemon shares once it
// holds the store (nil with multicast off).
func (c *clusterNode) host() *mcast.Host {
	if c.net == nil {
		return nil
	}
	return c.net.Host()
}

// shareNetwork has a lookup discovery service's group discovery use
// the node's network: shareDiscovery hands it what the network hears.
func (c *clusterNode) shareNetwork(lc lds.Config) lds.Config {
	if n := c.net; n != nil {
		lc.Multicast, lc.Group.Network, lc.LinkOf = nil, n.Network(), n.LinkOf
	}
	return lc
}

// shareDiscovery has svc, once started (a part of parts, added after
// it), hear the node's discovery, until it stops.
func (c *clusterNode) shareDiscovery(parts *lifecycle.Group, svc *lds.Service) {
	n := c.net
	if n == nil {
		return
	}
	var remove func()
	parts.Add("the lookup services the node discovers", lifecycle.Funcs{
		StartFunc: func(context.Context) error { remove = n.Add(svc.Sink()); return nil },
		ShutdownFunc: func(context.Context) error {
			if remove != nil {
				remove()
			}
			return nil
		}})
}

// serveForwarded has the API h answer what the other nodes forward to
// it from now on, until the API stops.
func (c *clusterNode) serveForwarded(h http.Handler) {
	d := c.d
	if c.shards == nil {
		return
	}
	c.api.Store(&h)
	d.parts.Add("the API for the other nodes", lifecycle.Funcs{ShutdownFunc: func(context.Context) error {
		c.api.Store(nil)
		return nil
	}})
}

// forwardedAPI is the handler of what the other nodes forward to the
// deployment's API (cluster.HolderAPI).
func (c *clusterNode) forwardedAPI() http.Handler {
	d := c.d
	return cluster.HolderAPI(func() http.Handler {
		if h := c.api.Load(); h != nil {
			return *h
		}
		return nil
	}, func() int64 {
		if st := d.held.Load(); st != nil {
			return st.Revision()
		}
		return 0
	})
}

// eachShard calls f with the parts of each shard this node serves now.
func (c *clusterNode) eachShard(f func(shardParts)) {
	if c.shards == nil {
		return
	}
	for _, s := range c.shards.Stacks() {
		if st, ok := s.(*shardStack); ok {
			f(st.shardParts)
		}
	}
}

// shardsHeld is how many shards this node serves now.
func (c *clusterNode) shardsHeld() int {
	if c.shards == nil {
		return 0
	}
	return len(c.shards.Held())
}

// inside is the receiver, in the process, of a listener of the
// shards' mailboxes: the shard's mailbox here, or at the node holding
// the shard, without a request to any host.
func (c *clusterNode) inside(listener string) (event.Receiver, bool) {
	if c.shards == nil {
		return nil, false
	}
	return c.shards.Inside(c.tag, listener)
}

// nodeAPI says u names the API of a live node of this deployment: a
// transaction manager's URL any node hands out (the one the client
// reached), which names this manager too.
func (c *clusterNode) nodeAPI(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || c.node == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(pu.Host)
	if err != nil {
		return false
	}
	a := ap.Addr().WithZone("").Unmap()
	return slices.ContainsFunc(c.node.Members(), func(m store.Member) bool {
		return m.APIPort == int(ap.Port()) && slices.Contains(m.Addrs, a)
	})
}

// placed are the services with their requests spread among the shards
// as each places them (cluster.Manager.Route): those of the
// deployment's own store (a single box's state imported) served here.
func (c *clusterNode) placed(svcs []httpjson.Service) []httpjson.Service {
	if c.shards == nil {
		return svcs
	}
	out := make([]httpjson.Service, len(svcs))
	for i, svc := range svcs {
		out[i] = c.shards.Route(svc)
	}
	return out
}

// plainMux registers a shard's routes with no guard: the caller was
// checked where its request came in (its principal is in the context).
type plainMux struct{ *http.ServeMux }

func (m plainMux) Handle(_ httpjson.Need, pattern string, h http.HandlerFunc) {
	m.HandleFunc(pattern, h)
}

//go:build !jinid_omit_etcd

package app

import (
	"cmp"
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/announce"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/relay"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// standby is what a node does while another holds the store in etcd: it
// is a door of the one registry on its own segments. It announces the
// cluster's lookup service there with its own address (and answers
// multicast requests for it, by connecting back), serves the API (the
// registry's reads from its copy, the rest through the holder: door),
// forwards what reaches its unicast discovery port to the holder, and
// notes the lookup services its segments announce for the holder's
// lookup discovery service (heard.go; docs/cluster.md). It ends when the
// node takes the hold.
type standby struct {
	c      *clusterNode
	d      *Daemon
	api    *relay.Handover
	sock   *relay.Handover // the API socket's (nil without one)
	door   *door
	disc   *relay.Forwarder
	holder struct {
		sync.Mutex
		m     store.Member
		known chan struct{} // closed once the holder's addresses are known
		once  sync.Once
	}

	// The announcements, once the lookup service's identity is known:
	// read from the store (opened without the hold), as is its sequence
	// of announcement numbers.
	mu       sync.Mutex
	st       *store.Store
	host     *mcast.Host
	presence lifecycle.Group // the responder, its port, the announcer, DNS-SD: started in order, stopped in reverse
	started  bool
	stopped  bool
}

// startStandby begins serving the API listener (not yet TLS-wrapped)
// and forwarding the unicast discovery port, and announcing once the
// holder is known.
func (c *clusterNode) startStandby(ctx context.Context, apiLn net.Listener) (*standby, error) {
	d := c.d
	s := &standby{c: c, d: d}
	s.holder.known = make(chan struct{})
	dial := d.cfg.Namespace.Dialer(&net.Dialer{})
	var discLn net.Listener
	err := d.cfg.Namespace.Do(func() error {
		var err error
		discLn, err = (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("", strconv.Itoa(d.cfg.DiscoveryPort)))
		return err
	})
	if err != nil {
		return nil, err
	}
	discLn = connlimit.Listener(discLn, connlimit.Config{Max: d.limits.DiscoveryConns, PerSource: d.limits.DiscoveryConnsPerSource,
		SourceBits4: d.limits.SourcePrefix4, SourceBits6: d.limits.SourcePrefix6})
	// Until the holder says where it serves (it publishes its ports once
	// it has started), the nodes' ports are taken as the same as this
	// one's, as a site configures them.
	s.disc = relay.New(discLn, relay.Config{Targets: s.targets(func(m store.Member) int { return cmp.Or(m.DiscoveryPort, d.cfg.DiscoveryPort) }),
		Dial: dial, Logger: d.log})
	s.api = relay.NewHandover(apiLn)
	var sock net.Listener
	if d.apiSock != nil {
		s.sock = relay.NewHandover(d.apiSock)
		sock = s.sock.Take()
	}
	if s.door, err = c.startDoor(ctx, s.api.Take(), sock, s.holderMember); err != nil {
		// The API waits for the hold then (its clients' connections
		// wait in the listener's queue).
		d.log.Warn("standby: the API is not served until this node holds the store", "err", err)
	}
	s.disc.Start(ctx)
	return s, nil
}

// targets lists the holder's addresses with the port port picks.
func (s *standby) targets(port func(store.Member) int) func() []netip.AddrPort {
	return func() []netip.AddrPort {
		s.holder.Lock()
		m := s.holder.m
		s.holder.Unlock()
		var out []netip.AddrPort
		if p := port(m); p > 0 {
			for _, a := range m.Addrs {
				out = append(out, netip.AddrPortFrom(a, uint16(p)))
			}
		}
		return out
	}
}

// holderMember is the holder's record, as last heard; until one is,
// waiting for it until ctx ends (a node starting hears of the holder
// moments after it begins to wait).
func (s *standby) holderMember(ctx context.Context) store.Member {
	select {
	case <-s.holder.known:
	case <-ctx.Done():
	}
	s.holder.Lock()
	defer s.holder.Unlock()
	return s.holder.m
}

// setHolder follows the holder's record; once it serves, the lookup
// service's identity is in the store, and the announcements begin.
func (s *standby) setHolder(m store.Member) {
	s.holder.Lock()
	changed := !slices.Equal(s.holder.m.Addrs, m.Addrs) || s.holder.m.APIPort != m.APIPort || s.holder.m.DiscoveryPort != m.DiscoveryPort
	s.holder.m = m
	s.holder.Unlock()
	if len(m.Addrs) > 0 {
		s.holder.once.Do(func() { close(s.holder.known) })
	}
	if changed && len(m.Addrs) > 0 {
		s.d.log.Info("forwarding changes and unicast discovery to the node holding the store", "holder", m.Node, "addrs", m.Addrs,
			"api_port", m.APIPort, "discovery_port", m.DiscoveryPort)
		s.announce()
	}
}

// announce starts the announcements of the cluster's lookup service on
// this node's segments, if not yet: its ServiceID and groups read from
// the store, this node's unicast discovery port in them.
func (s *standby) announce() {
	d := s.d
	if d.cfg.NoMulticast {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.started {
		return
	}
	// A try that failed before left its parts shut down: anew.
	s.presence = lifecycle.Group{}
	ctx := context.Background()
	// The node's view of the deployment's store, which its discovery
	// reads too.
	s.st = s.c.net.Store()
	meta, ok, err := lookup.ReadMeta(s.st)
	if err != nil || !ok {
		d.log.Warn("standby: the lookup service's identity is not in the store yet", "err", err)
		return
	}
	// The node's multicast host, which its discovery (and, once it
	// holds the store, its daemon) share.
	s.host = s.c.net.Host()
	groups := func() []string {
		if m, ok, err := lookup.ReadMeta(s.st); err == nil && ok {
			return m.Groups
		}
		return meta.Groups
	}
	// Multicast requests answered as the holder would: the connection
	// back to the requester is joined to the holder's unicast port.
	var announcer atomic.Pointer[announce.Announcer]
	responder := announce.NewResponder(announce.ResponderConfig{ServiceID: meta.ServiceID, Groups: groups, Answer: s.disc.Forward,
		Namespace: d.cfg.Namespace, Logger: d.log, MaxAnswers: d.limits.ConnectBacks, MaxPending: d.limits.ConnectBacksPending,
		Overloaded: func(ifIndex, family int) {
			if a := announcer.Load(); a != nil {
				a.AnnounceOn(ifIndex, family)
			}
		}})
	s.presence.Add("answering multicast requests", responder)
	if err := s.presence.Start(ctx); err != nil {
		d.log.Warn("standby: answering multicast requests", "err", err)
		return
	}
	onMessage := func(m mcast.Message) {
		if m.Request != nil {
			responder.OnRequest(*m.Request, m.Packet)
		}
	}
	port, err := s.host.Open(mcast.PortConfig{OnMessage: onMessage})
	if err != nil {
		s.presence.Shutdown(ctx)
		d.log.Warn("standby: joining the discovery groups", "err", err)
		return
	}
	s.presence.Add("the discovery groups joined", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return port.Close() }})
	a, err := announce.NewAnnouncer(announce.Config{Transport: port, ServiceID: meta.ServiceID, Port: d.cfg.DiscoveryPort,
		Groups: groups, Interval: d.cfg.AnnounceInterval, Seq: announce.NewSeqSource(s.st), Logger: d.log})
	if err == nil {
		s.presence.Add("announcing", a)
		err = s.presence.Start(ctx) // on failure every part is shut down, in reverse
	} else {
		s.presence.Shutdown(ctx)
	}
	if err != nil {
		d.log.Warn("standby: announcing", "err", err)
		return
	}
	announcer.Store(a)
	// DNS-SD is best effort: started here, stopped with the rest.
	if adv := d.standbyDNSSD(ctx, s.host, meta.ServiceID, groups); adv != nil {
		s.presence.Add("DNS-SD", lifecycle.Funcs{ShutdownFunc: adv.Shutdown})
	}
	s.started = true
	d.log.Info("standby: announcing the cluster's lookup service on this node's segments", "lookup", meta.ServiceID,
		"groups", meta.Groups, "port", d.cfg.DiscoveryPort)
}

// stop ends the standby: announcements stop, the unicast port closes
// (the daemon opens its own), forwarded connections end, the door stops
// serving (requests under way finish), and the API listener is handed
// back for the daemon to serve.
func (s *standby) stop() net.Listener {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	s.stopped = true
	if s.started {
		s.presence.Shutdown(ctx)
	}
	s.mu.Unlock()
	s.disc.Shutdown(ctx)
	ln := s.api.Take()
	if s.sock != nil {
		s.d.apiSock = s.sock.Take()
	}
	if s.door != nil {
		s.door.shutdown(ctx)
	}
	return ln
}

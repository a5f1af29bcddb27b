//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/store"
)

// The deployment's own endpoints are never a destination of a request
// made on someone's behalf (outbound.PolicyConfig.Deployment): a
// mailbox's push target at etcd's JSON gateway would write the store
// (a token of scope admin, a member record), a listener at another
// node's cluster port would come from a node. They are etcd's client
// URLs, as given and as resolved, and every member's addresses on its
// API, unicast discovery and cluster ports (members that join later
// too: the node reads them every second).

// etcdResolveEvery is how often etcd's endpoints given by name are
// resolved again: a name that moves is refused at its new address this
// late at most. The policy's check never waits on DNS.
const etcdResolveEvery = 30 * time.Second

// Deployment is the deployment's own endpoints, as a node knows them:
// etcd's client endpoints as given and as last resolved, the etcd
// members its client learnt of, and every live member's ports.
type Deployment struct {
	given    []string
	resolved atomic.Pointer[[]netip.AddrPort]
	periodic *lifecycle.Periodic
	node     atomic.Pointer[deploymentNode]
}

// deploymentNode is what Deployment reads of the node's membership
// (*store.EtcdNode).
type deploymentNode interface {
	Members() []store.Member
	EtcdEndpoints() []string
}

// NewDeployment returns the deployment of the etcd endpoints given;
// Start resolves them.
func NewDeployment(endpoints []string) *Deployment {
	e := &Deployment{given: endpoints}
	e.periodic = lifecycle.Every(etcdResolveEvery, func() { e.resolve(context.Background()) })
	return e
}

// Start resolves the endpoints once now (within a few seconds), and
// again every etcdResolveEvery until Shutdown.
func (e *Deployment) Start(ctx context.Context) error {
	e.resolve(ctx)
	return e.periodic.Start(ctx)
}

func (e *Deployment) Shutdown(ctx context.Context) error { return e.periodic.Shutdown(ctx) }

// Joined has the members of n (the node, once it joined) counted.
func (e *Deployment) Joined(n deploymentNode) { e.node.Store(&n) }

// resolve reads the endpoints' addresses; a name that does not resolve
// now keeps the addresses it had.
func (e *Deployment) resolve(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var old []netip.AddrPort
	if p := e.resolved.Load(); p != nil {
		old = *p
	}
	var out []netip.AddrPort
	for _, raw := range e.given {
		host, port, ok := endpointHostPort(raw)
		if !ok {
			continue
		}
		if a, err := netip.ParseAddr(host); err == nil {
			out = append(out, netip.AddrPortFrom(a.WithZone("").Unmap(), port))
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			// Keep what the name was last: better stale than none.
			for _, ap := range old {
				if ap.Port() == port {
					out = append(out, ap)
				}
			}
			continue
		}
		for _, a := range addrs {
			out = append(out, netip.AddrPortFrom(a.WithZone("").Unmap(), port))
		}
	}
	e.resolved.Store(&out)
}

// endpointHostPort is the host and port of an etcd client URL (2379
// unless it says).
func endpointHostPort(raw string) (string, uint16, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	port := uint16(2379)
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		port = uint16(p)
	}
	return u.Hostname(), port, true
}

// Names lists etcd's endpoints given by name, as host:port (lower
// case): a URL naming one is refused as it is handed in.
func (e *Deployment) Names() []string {
	var out []string
	for _, raw := range e.given {
		if host, port, ok := endpointHostPort(raw); ok {
			if _, err := netip.ParseAddr(host); err != nil {
				out = append(out, strings.ToLower(strings.TrimSuffix(host, "."))+":"+strconv.Itoa(int(port)))
			}
		}
	}
	return out
}

// Endpoints lists the deployment's endpoints: etcd's, and every
// member's ports on each of its addresses (none before the node
// joined). It is read on every outbound connection: no waiting.
func (e *Deployment) Endpoints() []netip.AddrPort {
	var out []netip.AddrPort
	if p := e.resolved.Load(); p != nil {
		out = append(out, *p...)
	}
	np := e.node.Load()
	if np == nil {
		return out
	}
	n := *np
	// The members the etcd client learnt of (it syncs its endpoints
	// with the cluster's), by address only when given by address.
	for _, raw := range n.EtcdEndpoints() {
		if host, port, ok := endpointHostPort(raw); ok {
			if a, err := netip.ParseAddr(host); err == nil {
				out = append(out, netip.AddrPortFrom(a.WithZone("").Unmap(), port))
			}
		}
	}
	for _, m := range n.Members() {
		for _, port := range []int{m.APIPort, m.DiscoveryPort, m.ClusterPort} {
			if port <= 0 || port > 65535 {
				continue
			}
			for _, a := range m.Addrs {
				out = append(out, netip.AddrPortFrom(a, uint16(port)))
			}
		}
	}
	return out
}

package app

import (
	"context"
	"errors"
	"net/http"
	"net/netip"

	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/store"
)

// clusterPart is the daemon as a node of a cluster on etcd
// (cluster.go, on services/cluster): what the rest of the daemon asks of
// it. The daemon has one only with --store etcd; a build without the
// etcd feature makes none (cluster_omit.go, its one stand-in).
type clusterPart interface {
	// open joins the deployment and opens its store, held by this node:
	// it waits while another holds it, standing for the registry on the
	// node's segments.
	open(ctx context.Context) (*store.Store, error)
	// host is the node's multicast host, which the daemon shares (nil
	// with multicast off).
	host() *mcast.Host
	// shareNetwork has a lookup discovery service discover through the
	// node's discovery; shareDiscovery has it hear it, once started (a
	// part of parts, added after it).
	shareNetwork(lds.Config) lds.Config
	shareDiscovery(parts *lifecycle.Group, svc *lds.Service)
	// placed has each service's requests go where it places them.
	placed([]httpjson.Service) []httpjson.Service
	// serveForwarded has h answer what the other nodes forward to the
	// deployment's API from now on.
	serveForwarded(h http.Handler)
	// followTokens has the holder's tokens follow etcd's.
	followTokens(ctx context.Context, t *access.Tokens) error
	// eachShard calls f with the parts of each shard the node serves
	// now; shardsHeld counts them.
	eachShard(f func(shardParts))
	shardsHeld() int
	// inside is the receiver of a listener of the shards' mailboxes.
	inside(listener string) (event.Receiver, bool)
	// mailboxTag begins the listeners of the shards' mailboxes.
	mailboxTag() string
	// deployment and deploymentNames are the deployment's own endpoints,
	// no destination of a request made for a client.
	deployment() []netip.AddrPort
	deploymentNames() []string
	// nodeAPI says a URL names a live node's API.
	nodeAPI(url string) bool
	// memberAddrs are the addresses the members registered; publish
	// says where this node, holding the store, serves.
	memberAddrs() []netip.Addr
	publish(ctx context.Context, addrs []netip.Addr, apiPort, discoveryPort int) error
}

// openCluster makes the daemon a node of the deployment in etcd and
// opens its store (clusterPart.open).
func (d *Daemon) openCluster(ctx context.Context) (*store.Store, error) {
	if d.cl = newCluster(d); d.cl == nil {
		return nil, errors.New("this jinid is built without the etcd store (the jinid_omit_etcd tag): use the embedded store")
	}
	return d.cl.open(ctx)
}

// The daemon's questions to its cluster, with a single box's answers.

func (d *Daemon) sharedHost() *mcast.Host {
	if d.cl == nil {
		return nil
	}
	return d.cl.host()
}

func (d *Daemon) mailboxTag() string {
	if d.cl == nil {
		return ""
	}
	return d.cl.mailboxTag()
}

func (d *Daemon) eachShard(f func(shardParts)) {
	if d.cl != nil {
		d.cl.eachShard(f)
	}
}

func (d *Daemon) shardsHeld() int {
	if d.cl == nil {
		return 0
	}
	return d.cl.shardsHeld()
}

func (d *Daemon) deployment() []netip.AddrPort {
	if d.cl == nil {
		return nil
	}
	return d.cl.deployment()
}

func (d *Daemon) deploymentNames() []string {
	if d.cl == nil {
		return nil
	}
	return d.cl.deploymentNames()
}

func (d *Daemon) nodeAPI(u string) bool { return d.cl != nil && d.cl.nodeAPI(u) }

func (d *Daemon) clusterInside(listener string) (event.Receiver, bool) {
	if d.cl == nil {
		return nil, false
	}
	return d.cl.inside(listener)
}

func (d *Daemon) placedServices(svcs []httpjson.Service) []httpjson.Service {
	if d.cl == nil {
		return svcs
	}
	return d.cl.placed(svcs)
}

func (d *Daemon) memberAddrs() []netip.Addr {
	if d.cl == nil {
		return nil
	}
	return d.cl.memberAddrs()
}

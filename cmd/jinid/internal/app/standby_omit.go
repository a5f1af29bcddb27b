//go:build jinid_omit_etcd

package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/store"
)

// standby is nothing in a build without etcd: there is no other node to
// stand for (standby.go).
type standby struct{}

func (d *Daemon) startStandby(context.Context, net.Listener) (*standby, error) {
	return nil, errors.New("this jinid is built without etcd")
}

func (s *standby) setHolder(store.Member) {}

func (s *standby) stop() net.Listener { return nil }

// sharedHost is nil: no node shares its multicast host.
func (d *Daemon) sharedHost() *mcast.Host { return nil }

// shareNetwork is c: the daemon's lookup discovery service has its own.
func (d *Daemon) shareNetwork(c lds.Config) lds.Config { return c }

// shareDiscovery does nothing: there are no other nodes.
func (d *Daemon) shareDiscovery(*lifecycle.Group, *lds.Service) {}

// clusterState is nothing in a build without etcd (cluster.go).
type clusterState struct{ mailboxTag string }

func (d *Daemon) openEtcd(context.Context) (*store.Store, error) {
	return nil, errors.New("this jinid is built without etcd (as the router build is): use the full build")
}

// placed are the services themselves: one box has no shards.
func (d *Daemon) placed(svcs []httpjson.Service) []httpjson.Service { return svcs }

// eachShard has none to call f with.
func (d *Daemon) eachShard(func(shardParts)) {}

// clusterInside: no cluster, no listener of its mailbox.
func (d *Daemon) clusterInside(string) (event.Receiver, bool) { return nil, false }

// clusterListener: no cluster, no listener of its mailbox.
func (d *Daemon) clusterListener(*url.URL) bool { return false }

// serveForwarded does nothing: no other node forwards to this one.
func (d *Daemon) serveForwarded(http.Handler) {}

// shardsHeld: none without a cluster.
func (d *Daemon) shardsHeld() int { return 0 }

// deployment: one box has no endpoints of a deployment but its own
// host's, which the policy refuses already.
func (d *Daemon) deployment() []netip.AddrPort { return nil }

// followTokens: the embedded store's tokens are this process's alone.
func (d *Daemon) followTokens(context.Context, *access.Tokens) error { return nil }

// deploymentNames: none without a cluster.
func (d *Daemon) deploymentNames() []string { return nil }

// nodeAPI: no cluster, no other node's API.
func (d *Daemon) nodeAPI(string) bool { return false }

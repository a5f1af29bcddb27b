package group

import (
	"context"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/namespace"
)

// UnicastNetwork is group discovery's Network without multicast: no
// requests go out (with no multicast there are none to send), and
// lookup services are reached by unicast discovery dialed from a
// namespace. It is what a daemon with multicast off, or a command that
// only listens, runs its engines on; Multicast adds requests and
// announcements to it.
type UnicastNetwork struct {
	Namespace namespace.Namespace
}

// Request implements Network: there is nothing to send.
func (UnicastNetwork) Request([]string, []discovery.ServiceID) error { return nil }

// Unicast implements Network.
func (n UnicastNetwork) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	return unicast.DiscoverAt(ctx, n.Namespace.Dialer(nil), discovery.Locator{Host: host, Port: port}.Address(), version)
}

// DialLocator runs unicast discovery with the lookup service a locator
// names (a locator discovery engine's dial).
func (n UnicastNetwork) DialLocator(ctx context.Context, l discovery.Locator) (*unicast.Response, error) {
	return unicast.DialLocator(ctx, n.Namespace.Dialer(nil), l)
}

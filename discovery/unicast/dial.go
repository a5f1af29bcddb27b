package unicast

import (
	"context"
	"errors"
	"net"

	"github.com/jinid/jinid/discovery"
)

// DialLocator runs unicast discovery with the lookup service at l over a
// connection from dial: version 2 first, as the Java implementation
// prefers, then version 1 if the lookup service answered but not in
// version 2.
func DialLocator(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), l discovery.Locator) (*Response, error) {
	once := func(version int) (*Response, error) { return DiscoverAt(ctx, dial, l.Address(), version) }
	resp, err := once(discovery.ProtocolV2)
	var op *net.OpError
	if err != nil && ctx.Err() == nil && !(errors.As(err, &op) && op.Op == "dial") {
		if r1, err1 := once(discovery.ProtocolV1); err1 == nil {
			return r1, nil
		}
	}
	return resp, err
}

// DiscoverAt dials addr (host:port) with dial and runs unicast discovery
// in the given version over the connection.
func DiscoverAt(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, version int) (*Response, error) {
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return Discover(ctx, conn, version)
}

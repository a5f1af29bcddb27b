//go:build jinid_omit_tls

package outbound

import (
	"context"
	"net"
)

// HTTPS tells whether requests may go to https URLs.
const HTTPS = false

// dialTLS is none in a build without TLS (jinid_omit_tls; the router
// profile): linking a TLS client costs 1 MB of a mips binary (docs/performance.md), so requests to https URLs fail
// with http1.ErrNoTLS and those URLs are refused when handed in.
func dialTLS(func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return nil
}

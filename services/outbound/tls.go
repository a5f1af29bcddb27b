//go:build !jinid_omit_tls

package outbound

import (
	"context"
	"crypto/tls"
	"net"
)

// HTTPS tells whether requests may go to https URLs.
const HTTPS = true

// dialTLS makes https connections over dial: the system's roots verify
// the server, as any browser's would.
func dialTLS(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			conn.Close()
			return nil, err
		}
		tc := tls.Client(conn, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
}

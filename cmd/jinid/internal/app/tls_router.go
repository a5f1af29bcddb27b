//go:build jinid_router

package app

import (
	"errors"
	"net"
)

// TLS tells whether this build serves the API over HTTPS: the router
// build does not, for a TLS connection links both handshakes (1 MB of a
// mips binary, docs/performance.md). Config.Validate refuses a
// certificate.
const TLS = false

func listenTLS(net.Listener, string, string) (net.Listener, error) {
	return nil, errors.New("API TLS: not in the router build")
}

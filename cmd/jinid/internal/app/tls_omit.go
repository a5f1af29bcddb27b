//go:build jinid_omit_tls

package app

import (
	"errors"
	"net"
)

// TLS tells whether this build serves the API over HTTPS: one without
// the TLS feature (jinid_omit_tls, left out of the router profile: a TLS
// connection links both handshakes, 1 MB of a mips binary,
// docs/performance.md) does not. Config.Validate refuses a certificate.
const TLS = false

func listenTLS(net.Listener, string, string) (net.Listener, error) {
	return nil, errors.New("API TLS: not in this build (built without TLS)")
}

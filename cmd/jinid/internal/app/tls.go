//go:build !jinid_omit_tls

package app

import (
	"crypto/tls"
	"fmt"
	"net"
)

// TLS tells whether this build serves the API over HTTPS.
const TLS = true

// listenTLS serves HTTPS on ln with the certificate and key in the files
// cert and key.
func listenTLS(ln net.Listener, cert, key string) (net.Listener, error) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("API TLS certificate %s and key %s: %w", cert, key, err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}), nil
}

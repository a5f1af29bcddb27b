//go:build !jinid_omit_tls

package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/jinid/jinid/internal/http1"
)

// apiHTTP is the HTTP client of the API at target: net/http's, which
// speaks https, checking the server against ca's certificates if ca is
// set (else the system's).
func apiHTTP(_, ca string) (http1.Doer, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, usagef("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("--ca: no PEM certificate in " + ca)
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		hc.Transport = t
	}
	return hc, nil
}

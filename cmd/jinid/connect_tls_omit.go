//go:build jinid_omit_tls

package main

import (
	"errors"
	"strings"
	"time"

	"github.com/jinid/jinid/internal/http1"
)

// apiHTTP is the HTTP client of the API at target: a build without TLS
// (the router profile's: TLS would double the size of what it links of
// crypto) speaks plain HTTP, so an https API is for another build.
func apiHTTP(target, ca string) (http1.Doer, error) {
	if strings.HasPrefix(target, "https:") || ca != "" {
		return nil, errors.New("this jinid is built without TLS (as the router build is): use the local socket, an http:// API, or a build with TLS (jinid-tools) for an https one")
	}
	return &http1.Client{Timeout: 30 * time.Second}, nil
}

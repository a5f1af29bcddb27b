//go:build jinid_router

package main

import (
	"errors"
	"strings"
	"time"

	"github.com/jinid/jinid/internal/http1"
)

// apiHTTP is the HTTP client of the API at target: the router build's
// has no TLS (it would double the size of what it links of crypto), so
// an https API is for jinid-tools.
func apiHTTP(target, ca string) (http1.Doer, error) {
	if strings.HasPrefix(target, "https:") || ca != "" {
		return nil, errors.New("this jinid (the router build) has no TLS client: use the local socket, an http:// API, or jinid-tools for an https one")
	}
	return &http1.Client{Timeout: 30 * time.Second}, nil
}

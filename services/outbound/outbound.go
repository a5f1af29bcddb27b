// Package outbound makes the HTTP clients jinid uses for the requests it
// sends on someone's behalf: remote events (the lookup service, the
// lookup discovery service, the renewal service), the mailbox's pushes,
// lease renewals at other grantors. Every such client comes from here, so
// their limits live in one place, as will the address policy that
// decides where jinid may send at all.
package outbound

import (
	"context"
	"net"
	"net/http"
	"time"
)

// DefaultTimeout bounds one request.
const DefaultTimeout = 10 * time.Second

// Config says how a client connects.
type Config struct {
	// Timeout of one request, answer included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Dial makes connections (the daemon's, in its network namespace);
	// nil means the process's own.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns a client. It does not follow redirects: a listener or
// grantor answering 3xx gets that answer taken as it is (a definite
// failure), so a URL handed to jinid cannot send it elsewhere.
func New(cfg Config) *http.Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // the requests are on the LAN, for LAN hosts
	t.MaxIdleConnsPerHost = 4
	if cfg.Dial != nil {
		t.DialContext = cfg.Dial
	}
	return &http.Client{
		Timeout:   cfg.Timeout,
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Package outbound makes the HTTP clients jinid uses for the requests it
// sends on someone's behalf: remote events (the lookup service, the
// lookup discovery service, the renewal service), the mailbox's pushes,
// lease renewals at other grantors. Every such client comes from here, so
// their limits and the address policy that decides where jinid may send
// at all live in one place; and so does the one way their failures are
// told to clients: a category, never the remote's bytes or an error's
// text (Fault).
package outbound

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// DefaultTimeout bounds one request.
const DefaultTimeout = 10 * time.Second

// DefaultMaxBody bounds what jinid reads of an answer to a request it
// sent on someone's behalf: a renewal batch of a thousand leases is a
// tenth of it; a listener's or participant's answer, a few bytes.
const DefaultMaxBody = 1 << 20

// Config says how a client connects.
type Config struct {
	// Timeout of one request, answer included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Namespace to connect from (the daemon's); the zero value is the
	// process's own.
	Namespace namespace.Namespace
	// Policy decides where connections may go; nil means the fixed rules
	// alone (no allowances, no own addresses known).
	Policy *Policy
	// MaxBody bounds the bytes read of an answer's body: past it, the
	// read fails (http1.ErrBodyTooLarge, a BadAnswer); 0 means
	// DefaultMaxBody. Every reader of an answer on someone's behalf gets
	// its bound here, so none can be written without one.
	MaxBody int64
}

// New returns a client. Every address it connects to, after name
// resolution, passes the policy. It does not follow redirects: a listener
// or grantor answering 3xx gets that answer taken as it is (a definite
// failure), so a URL handed to jinid cannot send it elsewhere. It uses no
// proxy: the requests are for hosts on the LAN. It sends to https URLs
// in a build with TLS; one without (jinid_omit_tls, the router profile) sends none (http1.ErrNoTLS).
func New(cfg Config) *http1.Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	dial := Dialer(cfg)
	return &http1.Client{
		Dial:                   dial,
		DialTLS:                dialTLS(dial),
		Timeout:                cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxResponseBodyBytes:   cfg.MaxBody,
		// A listener gets events in bursts: its connection is kept
		// for the next (32 kept at most over all hosts).
		MaxIdlePerHost: 4,
		PoolTag:        poolTag,
		Admit:          cfg.Policy.admit,
	}
}

// Dialer returns the dial function of New's client, for requests on
// clients' behalf that are not HTTP (Jini ERI calls to Java listeners):
// TCP from cfg's namespace, every address checked by the policy after
// name resolution.
func Dialer(cfg Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	return cfg.Namespace.Dialer(&net.Dialer{Timeout: cfg.Timeout, ControlContext: cfg.Policy.orStrict().control})
}

// Fault is what a client is told of a failed outbound request: a code
// naming its category (Forbidden, Refused, Unreachable, Timeout,
// BadAnswer) and that category's one message, so that jinid is no oracle
// of what answers where (a port's banner, "connection refused" against
// "no route"). The error itself is for the log.
func Fault(err error) *fault.Error {
	c := CategoryOf(err)
	return &fault.Error{Code: c, Message: message(c)}
}

// CategoryOf sorts an outbound request's error into a category.
func CategoryOf(err error) fault.Code {
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.Is(err, ErrForbidden):
		return apitypes.Forbidden
	case errors.Is(err, ErrNotActing):
		return apitypes.Unavailable
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return apitypes.Timeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return apitypes.Refused
	case errors.As(err, &dns), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EHOSTDOWN), errors.Is(err, syscall.ENETDOWN):
		return apitypes.Unreachable
	}
	return apitypes.BadAnswer
}

// message is the one text of a category: the same for every failure in
// it.
func message(c fault.Code) string {
	switch c {
	case apitypes.Forbidden:
		return "the destination is one jinid sends no requests to (loopback, link-local, its own host, ...)"
	case apitypes.Refused:
		return "the destination refused the connection"
	case apitypes.Unreachable:
		return "the destination could not be reached"
	case apitypes.Timeout:
		return "the destination did not answer in time"
	case apitypes.Unavailable:
		return "this jinid is not acting for its clients now (another node of its cluster holds the store); try again"
	}
	return "the destination did not answer as the protocol wants"
}

// Package client is the Go client of jinid's HTTP API, used by the jinid
// CLI, by jinid itself when it renews leases at another jinid, and by the
// tests; clients in other languages speak the same JSON. It links only
// the wire types (apitypes), none of the server, and builds for every
// operating system Go does (deps_test.go).
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
)

// Client talks to one jinid.
type Client struct {
	base  string
	hc    http1.Doer
	token string
	// socket is set for a client of the local socket, whose hc dials
	// the socket whatever the URL says.
	socket bool
	sock   string // the socket's path
	// maxAnswer bounds what is read of an answer's body (0: by its
	// kind, DefaultMaxAnswer or DefaultMaxOne).
	maxAnswer int64
}

// What a client reads of one answer, by its kind: a page (a listing,
// a query's items, a batch's results, the tokens, a set's leases)
// eight times the largest page a jinid sends by default (its
// pageBytes, 1 MiB); anything else (one registration, item, event or
// state) sixteen times the largest item or request body a jinid takes
// by default (64 KiB).
const (
	DefaultMaxAnswer = 8 << 20
	DefaultMaxOne    = 1 << 20
)

// ErrAnswerTooLarge is the error of an answer larger than the client
// reads (WithMaxAnswer): a server (or whatever answers in its place)
// streaming without end costs the client that much memory, no more.
var ErrAnswerTooLarge = errors.New("the answer is larger than this client reads")

// WithMaxAnswer bounds what is read of one answer's body, of any kind
// (bytes; by its kind if 0: DefaultMaxAnswer, DefaultMaxOne).
func WithMaxAnswer(n int64) Option { return func(c *Client) { c.maxAnswer = n } }

// capped reads at most left bytes of r, and then fails with
// ErrAnswerTooLarge.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, ErrAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// Option sets something of a client.
type Option func(*Client)

// WithToken makes the client send a bearer token (API.md, "Access").
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// New returns a client of the jinid at base: http://host:port,
// https://host:port, or unix:///path/to/jinid.sock (the local socket,
// where no token is needed). hc sends the requests: an *http.Client
// (https needs one), or nil for a plain-HTTP client with a 30 s timeout
// (an http1.Client, which links no TLS). For the socket, only hc's
// timeout counts.
func New(base string, hc http1.Doer, opts ...Option) (*Client, error) {
	u, err := url.Parse(base)
	var sock string
	socket := err == nil && u.Scheme == "unix" && u.Path != ""
	if socket {
		// The socket's connection is the client's; the URL only routes
		// the requests.
		sock = u.Path
		hc, base = &http1.Client{Timeout: timeoutOf(hc), Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}, "http://localhost"
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want http://host:port, https://host:port or unix:///path/to/jinid.sock", base)
	}
	if hc == nil {
		hc = &http1.Client{Timeout: defaultTimeout}
	}
	c := &Client{base: strings.TrimSuffix(base, "/"), hc: hc, socket: socket, sock: sock}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

const defaultTimeout = 30 * time.Second

// timeoutOf is hc's timeout, or the default.
func timeoutOf(hc http1.Doer) time.Duration {
	switch c := hc.(type) {
	case *http.Client:
		return c.Timeout
	case *http1.Client:
		return c.Timeout
	}
	return defaultTimeout
}

// UnreachableError says no jinid answered at the client's server: no
// socket there, nothing listening, no such host. Callers that can say
// what to do about it (the CLI) look for it with errors.As.
type UnreachableError struct {
	// Server is the API the client names (a URL, or unix:///path).
	Server string
	// Why is the reason, in a few words ("connection refused").
	Why string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach jinid at %s: %s", e.Server, e.Why)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// NoAnswerError is a request the server took and closed the connection
// on without an answer: it stopped meanwhile, or it is not jinid's API
// (the Jini discovery port, 4160, closes on an HTTP request).
type NoAnswerError struct {
	Server string
	Err    error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("%s closed the connection without an answer: the daemon stopped, or that is not jinid's API", e.Server)
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// closedEarly says err is a connection closed (or reset) before an
// answer came.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// unreachable is why err means nothing answered (a failed dial: nothing
// listening, no socket, no route, no such host), or "" when it means
// something else (a reset, a timeout while reading: a server that is
// there).
func unreachable(err error) string {
	var op *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host"
	case !errors.As(err, &op) || op.Op != "dial":
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return "no socket there"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied (the socket is its administrator's)"
	}
	// The system's own words, without Go's wrapping: "connection
	// refused", "no route to host".
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}

// server is the API the client was made for, as its user named it.
func (c *Client) server() string {
	if c.socket {
		return "unix://" + c.sock
	}
	return c.base
}

// Error is an error the server answered; errors.As to *apitypes.Error
// tells its code.
type Error struct {
	Status int
	Err    apitypes.Error
	// Coded says the answer's body was the API's coded error; when it
	// was not (an HTML page, another service's text), Err's code is
	// Internal and its message what the body said.
	Coded bool
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Err.Error(), e.Status) }

// Unwrap exposes the coded error for errors.As.
func (e *Error) Unwrap() error { return &e.Err }

// answer is the kind of an answer: a page, or one thing.
type answer int

const (
	one answer = iota
	page
)

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.send(ctx, method, path, in, out, false, one)
}

// doPage is do for an answer that is a page (DefaultMaxAnswer).
func (c *Client) doPage(ctx context.Context, method, path string, in, out any) error {
	return c.send(ctx, method, path, in, out, false, page)
}

// send is do; idempotent says the server takes the request twice as once,
// so that it may be sent again if a kept connection fails under it; kind
// bounds what is read of the answer.
func (c *Client) send(ctx context.Context, method, path string, in, out any, idempotent bool, kind answer) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil || method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if idempotent {
		req.Header["Idempotency-Key"] = nil // a mark for the client, not sent
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if why := unreachable(err); why != "" {
			return &UnreachableError{Server: c.server(), Why: why, Err: err}
		}
		if closedEarly(err) {
			return &NoAnswerError{Server: c.server(), Err: err}
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var eb apitypes.ErrorBody
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		coded := json.Unmarshal(raw, &eb) == nil && eb.Error.Code != ""
		if !coded {
			eb.Error = apitypes.Error{Code: apitypes.Internal, Message: strings.TrimSpace(string(raw))}
		}
		return &Error{Status: resp.StatusCode, Err: eb.Error, Coded: coded}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	max := cmp.Or(c.maxAnswer, map[answer]int64{one: DefaultMaxOne, page: DefaultMaxAnswer}[kind])
	if err := json.NewDecoder(&capped{r: resp.Body, left: max}).Decode(out); err != nil {
		if errors.Is(err, ErrAnswerTooLarge) {
			return fmt.Errorf("reading the answer to %s %s: more than %d bytes: %w", method, path, max, ErrAnswerTooLarge)
		}
		if closedEarly(err) {
			return &NoAnswerError{Server: c.server(), Err: err}
		}
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// LookupInfo describes the lookup service.
type LookupInfo = apitypes.LookupInfo

// Lookup describes the server's lookup service.
func (c *Client) Lookup(ctx context.Context) (LookupInfo, error) {
	var out LookupInfo
	return out, c.do(ctx, http.MethodGet, "/v1/lookup", nil, &out)
}

// Registered is the answer to Register.
type Registered = apitypes.Registered

// Register registers an item for a leased time (milliseconds; -1 ANY).
func (c *Client) Register(ctx context.Context, it apitypes.Item, duration int64) (Registered, error) {
	var out Registered
	in := map[string]any{"item": it, "leaseDuration": duration}
	return out, c.do(ctx, http.MethodPost, "/v1/lookup/services", in, &out)
}

// Query returns up to max matching items and how many match.
func (c *Client) Query(ctx context.Context, t apitypes.Template, max int) ([]apitypes.Item, int, error) {
	out, err := c.QueryItems(ctx, t, max)
	return out.Items, out.TotalMatches, err
}

// QueryItems is Query's whole answer: the items, how many match, and
// when each one's registration ends.
func (c *Client) QueryItems(ctx context.Context, t apitypes.Template, max int) (apitypes.Items, error) {
	var out apitypes.Items
	err := c.doPage(ctx, http.MethodPost, "/v1/lookup/query", map[string]any{"template": t, "maxMatches": max}, &out)
	return out, err
}

// List returns every registered item, fetching the listing page by page.
func (c *Client) List(ctx context.Context) ([]apitypes.Item, error) {
	all, err := c.Listing(ctx)
	return all.Items, err
}

// Listing is List with when each item's registration ends
// (Items.Expirations).
func (c *Client) Listing(ctx context.Context) (apitypes.Items, error) {
	var all apitypes.Items
	for cursor := ""; ; {
		page, err := c.ListPage(ctx, cursor, 0)
		if err != nil {
			return all, err
		}
		all.Items = append(all.Items, page.Items...)
		all.Expirations = append(all.Expirations, page.Expirations...)
		all.TotalMatches = len(all.Items)
		if page.NextCursor == "" || len(page.Items) == 0 {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// ListPage returns one page of the listing: after cursor ("" from the
// start), at most limit items (0: the server's page).
func (c *Client) ListPage(ctx context.Context, cursor string, limit int) (apitypes.Items, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/lookup/services"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out apitypes.Items
	return out, c.doPage(ctx, http.MethodGet, path, nil, &out)
}

// Service is one registered item with the end of its lease.
type Service = apitypes.Service

// Get returns one registered item.
func (c *Client) Get(ctx context.Context, serviceID string) (Service, error) {
	var out Service
	return out, c.do(ctx, http.MethodGet, "/v1/lookup/services/"+url.PathEscape(serviceID), nil, &out)
}

// NotifyRequest registers a listener.
type NotifyRequest struct {
	Template    apitypes.Template
	Transitions []string
	Listener    string
	Handback    []byte
	Duration    int64
}

// NotifyRegistration is the answer to Notify.
type NotifyRegistration = apitypes.NotifyRegistration

// Notify registers a listener for transitions.
func (c *Client) Notify(ctx context.Context, n NotifyRequest) (NotifyRegistration, error) {
	var out NotifyRegistration
	in := map[string]any{"template": n.Template, "transitions": n.Transitions, "listener": map[string]string{"url": n.Listener},
		"handback": n.Handback, "leaseDuration": n.Duration}
	return out, c.do(ctx, http.MethodPost, "/v1/lookup/notify", in, &out)
}

// ChangeAttributes adds, modifies or sets a registration's attributes.
func (c *Client) ChangeAttributes(ctx context.Context, serviceID string, ch apitypes.AttributeChange) error {
	return c.do(ctx, http.MethodPost, "/v1/lookup/services/"+url.PathEscape(serviceID)+"/attributes", ch, nil)
}

// Renew renews a lease; it returns the new expiration and the duration
// granted.
func (c *Client) Renew(ctx context.Context, leaseID string, duration int64) (expiration, granted int64, err error) {
	var out apitypes.Renewed
	err = c.do(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(leaseID)+"/renew", map[string]int64{"duration": duration}, &out)
	return out.Expiration, out.Granted, err
}

// Cancel cancels a lease.
func (c *Client) Cancel(ctx context.Context, leaseID string) error {
	return c.do(ctx, http.MethodDelete, "/v1/leases/"+url.PathEscape(leaseID), nil, nil)
}

// Renewal is one lease of a batch renewal.
type Renewal = apitypes.Renewal

// RenewAll renews a batch, with one result per lease.
func (c *Client) RenewAll(ctx context.Context, rs []Renewal) ([]apitypes.BatchResult, error) {
	var out apitypes.BatchResults
	// Renewing twice asks for the same durations from the second time:
	// what the first granted is only extended.
	return out.Results, c.send(ctx, http.MethodPost, "/v1/leases/renew", map[string]any{"leases": rs}, &out, true, page)
}

// CancelAll cancels a batch, with one result per lease.
func (c *Client) CancelAll(ctx context.Context, ids []string) ([]apitypes.BatchResult, error) {
	var out apitypes.BatchResults
	return out.Results, c.doPage(ctx, http.MethodPost, "/v1/leases/cancel", map[string]any{"ids": ids}, &out)
}

// SetGroups replaces the lookup service's member groups.
func (c *Client) SetGroups(ctx context.Context, groups []string) error {
	return c.do(ctx, http.MethodPut, "/v1/lookup/groups", map[string]any{"groups": groups}, nil)
}

// --- tokens (an administrator's) -------------------------------------------------

// Token is a token as listed; NewToken, one just made, with its secret.
type (
	Token    = apitypes.Token
	NewToken = apitypes.NewToken
)

// CreateToken makes a token of a scope (read, client or admin) that works
// for d (0: until revoked).
func (c *Client) CreateToken(ctx context.Context, name, scope string, d time.Duration) (NewToken, error) {
	var out NewToken
	return out, c.do(ctx, http.MethodPost, "/v1/tokens", apitypes.TokenRequest{Name: name, Scope: scope, Duration: d.Milliseconds()}, &out)
}

// Tokens lists the tokens.
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	var out apitypes.Tokens
	return out.Tokens, c.doPage(ctx, http.MethodGet, "/v1/tokens", nil, &out)
}

// RevokeToken revokes a token by ID or name.
func (c *Client) RevokeToken(ctx context.Context, idOrName string) error {
	return c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(idOrName), nil, nil)
}

// SnapshotTaken is the answer to Snapshot.
type SnapshotTaken struct {
	File  string    `json:"file"`
	Bytes int64     `json:"bytes"`
	At    time.Time `json:"at"`
}

// Snapshot has the daemon write a snapshot of its store to its snapshot
// directory now (an administrator's).
func (c *Client) Snapshot(ctx context.Context) (SnapshotTaken, error) {
	var out SnapshotTaken
	return out, c.do(ctx, http.MethodPost, "/v1/snapshot", struct{}{}, &out)
}

// Package httpjson is what each service's HTTP handlers share: the route
// registrar a service is given, JSON bodies read strictly and written,
// coded errors written as API.md says, and leases as they travel. The API
// package assembles the routes the services register; the services own
// them.
package httpjson

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// DefaultBodyBytes bounds a request body unless the route, or the
// daemon's configuration, says otherwise (WithBodyLimit).
const DefaultBodyBytes = 64 << 10

// maxMessage bounds an error message.
const maxMessage = 512

type bodyLimitKey struct{}

type stoppingKey struct{}

// WithStopping tells the requests of ctx, through Stopping, when their
// server begins to stop (stopping is closed then): a long poll ends at
// once, rather than hold the daemon's stop for its whole wait.
func WithStopping(ctx context.Context, stopping <-chan struct{}) context.Context {
	return context.WithValue(ctx, stoppingKey{}, stopping)
}

// UntilStopping is ctx, cancelled too when the server of its request
// begins to stop (WithStopping): what a long poll waits with. stopped
// says, once the wait ended, whether that was why.
func UntilStopping(ctx context.Context) (wait context.Context, cancel context.CancelFunc, stopped func() bool) {
	wait, cancel = context.WithCancel(ctx)
	ch, _ := ctx.Value(stoppingKey{}).(<-chan struct{})
	if ch == nil {
		return wait, cancel, func() bool { return false }
	}
	var was atomic.Bool
	go func() { // ends with the wait, at the latest when cancel is called
		select {
		case <-ch:
			was.Store(true)
			cancel()
		case <-wait.Done():
		}
	}()
	return wait, cancel, was.Load
}

// ErrStopping is the answer to a wait the daemon's stop ended.
func ErrStopping() error {
	return fault.Limit(apitypes.Stopping, "", 5, "jinid is stopping: this wait ended; try again once it is back")
}

// WithBodyLimit sets the body limit of the requests of a context (the
// API's front sets the daemon's).
func WithBodyLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, bodyLimitKey{}, n)
}

// Body reads r's body whole, bounded by its limit (a byte more: the
// services refuse what passes it), for a request that goes on
// elsewhere (another node of a cluster) or in parts.
func Body(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, BodyLimit(r)+1))
	if err != nil {
		return nil, fault.New(apitypes.InvalidArgument, "reading the request body: %v", err)
	}
	return b, nil
}

// BodyLimit is the body limit of r.
func BodyLimit(r *http.Request) int64 {
	if n, ok := r.Context().Value(bodyLimitKey{}).(int64); ok && n > 0 {
		return n
	}
	return DefaultBodyBytes
}

// Need is what a route asks of its caller (API.md, "Access"): a token
// of a scope at least this, or nothing but the capability in its URL.
type Need int

// The needs, weakest first: a scope that meets one meets those before it.
const (
	// Capability: the URL, or an ID in it, is the capability (a lease, a
	// mailbox listener): anyone who has it may call.
	Capability Need = iota
	// Read: queries, listings, discovery state.
	Read
	// Client: registering and managing one's own registrations.
	Client
	// Admin: the daemon itself (its lookup service's groups, tokens).
	Admin
)

func (n Need) String() string {
	return [...]string{"none (the URL is the capability)", "read", "client", "admin"}[n]
}

// Mux is where a service registers its routes ("METHOD /v1/path"
// patterns), each with what it needs of its caller.
type Mux interface {
	Handle(need Need, pattern string, handler http.HandlerFunc)
}

// Service is a part of the API: what it is called, the prefix its routes
// live under, and the routes.
type Service interface {
	Name() string
	Prefix() string
	Routes(Mux)
}

// Place is where a request belongs when a cluster spreads a service's
// registrations among shards (docs/cluster.md, "Shards"): with the
// registration it names (Key: its shard is the key's), with its
// caller's registrations (Owner: a new one goes where its owner's are,
// so one client's quota is counted in one place), or, the zero Place,
// with the deployment's services. Batch marks a batch whose parts may
// be in several places (the lease grantor's renew and cancel), which
// the service cuts itself (lease.Grantor.ServeSplit).
type Place struct {
	Key   string
	Owner bool
	Batch bool
}

// ByKey places a request with the registration key names ("": with its
// owner's, a request that makes one).
func ByKey(key string) Place {
	if key == "" {
		return Place{Owner: true}
	}
	return Place{Key: key}
}

// A Placer is a Service whose registrations a cluster spreads among
// shards: it says where each of its requests belongs, so that the
// cluster routes them without reading paths or bodies of its own.
type Placer interface {
	Service
	// Place is called with a request its routes matched (r.PathValue
	// and r.Pattern are set).
	Place(r *http.Request) Place
	// Holds says whether this instance holds the registration a key
	// names: one made before the cluster (a single box's state
	// imported) is served by the deployment's services, not a shard.
	Holds(key string) bool
}

// Here is the place, in a batch cut by where its parts belong
// (lease.Grantor.ServeSplit), of the parts the deployment's own
// services hold.
const Here = -1

// Recorder keeps an answer in memory: a part of a batch, or an answer
// given in the process, read before it is passed on (or not).
type Recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *Recorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *Recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *Recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

// Status is the status answered (200 if none was written).
func (r *Recorder) Status() int { return cmp.Or(r.code, http.StatusOK) }

// Body is the body answered.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// CopyTo passes the answer on to w.
func (r *Recorder) CopyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.Status())
	w.Write(r.body.Bytes())
}

// Patterns is a Mux that records the routes registered, for tests that
// list them.
type Patterns map[string]Need

// Handle implements Mux.
func (p Patterns) Handle(need Need, pattern string, _ http.HandlerFunc) { p[pattern] = need }

// WriteError writes err as API.md's error body, with its code's status
// (or the one given). An error without a code is the daemon's own failure
// (a store error, say): the client is told only that, and the error goes
// to whoever wraps w to hear it (the API's front logs it).
func WriteError(w http.ResponseWriter, err error, status ...int) {
	fe := fault.As(err)
	if fault.CodeOf(err) == apitypes.Internal && !fault.Coded(err) {
		if n, ok := w.(interface{ NoteInternal(error) }); ok {
			n.NoteInternal(err)
		}
		fe = &apitypes.Error{Code: apitypes.Internal, Message: "the daemon failed to do it; its log says why"}
	}
	if len(fe.Message) > maxMessage {
		// However a message was made, it echoes no more than this.
		short := *fe
		short.Message = fault.Short(fe.Message[:maxMessage-64]) + " (cut)"
		fe = &short
	}
	if fe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(fe.RetryAfter))
	}
	code := fe.Code.Status()
	if len(status) > 0 {
		code = status[0]
	}
	Write(w, code, apitypes.ErrorBody{Error: *fe})
}

// Write writes v as JSON with a status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Decode reads a JSON body into v: bounded in size, no unknown fields,
// nothing after the value. A bad body changes nothing, and says why.
func Decode(w http.ResponseWriter, r *http.Request, v any) error {
	limit := BodyLimit(r)
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return fault.Limit(apitypes.TooLarge, "bodyBytes", 0, "request body is larger than %d bytes", limit)
		case errors.Is(err, io.EOF):
			return fault.New(apitypes.NullArgument, "request body is empty; a JSON object is required")
		}
		return JSONError("request body", err)
	}
	if dec.More() {
		return fault.New(apitypes.InvalidArgument, "request body: unexpected data after the JSON object")
	}
	return nil
}

// DecodeRequired decodes like Decode, and also requires field to be
// present (where null is a value: "all groups", "no target").
func DecodeRequired(w http.ResponseWriter, r *http.Request, v any, field string) error {
	var raw json.RawMessage
	if err := Decode(w, r, &raw); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return JSONError("request body", err)
	}
	if _, ok := keys[field]; !ok {
		return fault.New(apitypes.NullArgument, "%s is required", field)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return JSONError("request body", err)
	}
	return nil
}

// JSONError says what is wrong with JSON a client sent (what names it:
// "request body", "event") in the API's words: the field and the kind
// of value it wants, never the Go types behind it, as InvalidArgument.
func JSONError(what string, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fault.New(apitypes.InvalidArgument, "%s: %s: want %s, not a JSON %s", what, field, jsonKind(te.Type), te.Value)
	case errors.As(err, &se):
		return fault.New(apitypes.InvalidArgument, "%s: not JSON (at byte %d)", what, se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fault.New(apitypes.InvalidArgument, "%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fault.New(apitypes.InvalidArgument, "%s: the JSON ends too soon", what)
	}
	return fault.New(apitypes.InvalidArgument, "%s: not the JSON it should be", what)
}

// jsonKind names, in JSON's terms, what a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// Required says a duration field is missing (NullArgument), naming it.
func Required(name string, v *int64) error {
	if v == nil {
		return fault.New(apitypes.NullArgument, "%s is required (milliseconds; -1 for ANY, %d for FOREVER)", name, apitypes.Forever)
	}
	return nil
}

// Base is how the client of a connection reaches this daemon: what goes
// into every URL and locator handed to it (API.md; docs/security.md,
// "True addresses"). It is never taken from the Host header, which the
// client writes.
type Base struct {
	// URL is the API's base URL (scheme://host:port), "" if the client
	// has none it could reach (the API listens elsewhere).
	URL string
	// Host is this daemon's address (or advertised name) as the client
	// sees it, IPv6 in brackets.
	Host string
}

type baseKey struct{}

// WithBase records a connection's Base; the server's ConnContext calls it.
func WithBase(ctx context.Context, b Base) context.Context {
	return context.WithValue(ctx, baseKey{}, b)
}

// BaseFrom returns the Base a context carries (WithBase), if one does.
func BaseFrom(ctx context.Context) (Base, bool) {
	b, ok := ctx.Value(baseKey{}).(Base)
	return b, ok
}

// BaseOf returns the Base of r's connection: the one the server recorded,
// or else the local address the client reached.
func BaseOf(r *http.Request) Base {
	if b, ok := r.Context().Value(baseKey{}).(Base); ok {
		return b
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
			host := ap.Addr().String()
			if ap.Addr().Is6() {
				host = "[" + host + "]"
			}
			return Base{URL: scheme + "://" + ap.String(), Host: host}
		}
	}
	return Base{URL: scheme + "://localhost", Host: "localhost"}
}

// Leases renders leases this daemon granted: their grantor is the API
// base URL the client reaches.
type Leases struct {
	// Now is the clock for "remaining"; nil means time.Now.
	Now func() time.Time
}

// Of renders a lease granted here (its ID and expiration), for the
// client of r.
func (l Leases) Of(r *http.Request, id string, expiration int64) apitypes.Lease {
	return apitypes.Lease{Grantor: BaseOf(r).URL, ID: id, Expiration: expiration,
		Remaining: apitypes.Remaining(expiration, l.now())}
}

func (l Leases) now() int64 {
	if l.Now == nil {
		return time.Now().UnixMilli()
	}
	return l.Now().UnixMilli()
}

// Check is one check of a health or readiness answer (GET /healthz,
// /readyz): what it is, whether it passes, and why not.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail says why a check fails (or, when it passes, what it found).
	Detail string `json:"detail,omitempty"`
}

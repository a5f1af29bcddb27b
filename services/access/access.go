// Package access decides who may do what through the API (API.md,
// "Access"; docs/security.md): requests on the local unix socket are the
// machine's administrator, as file permissions say; over the network a
// bearer token's scope (read, client, admin) decides, and a request
// without one gets what the daemon allows anonymous callers. Every
// request over the network must name a Host the daemon answers to (no DNS
// rebinding), and every body must be JSON (no form posts from a web page
// a LAN user happens to open). Changes are logged with who made them.
package access

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/outbound"
)

// Scope is what a token allows.
type Scope string

// The scopes, each allowing what the ones before it do.
const (
	// ScopeNone allows nothing but capability routes (anonymous only).
	ScopeNone   Scope = "none"
	ScopeRead   Scope = "read"
	ScopeClient Scope = "client"
	ScopeAdmin  Scope = "admin"
)

// ParseScope reads a token's scope.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case ScopeRead, ScopeClient, ScopeAdmin:
		return sc, nil
	}
	return "", fault.New(apitypes.InvalidArgument, "scope %q: want read, client or admin", s)
}

// ParseAnonymous reads what anonymous callers may do: a scope, or none.
func ParseAnonymous(s string) (Scope, error) {
	if s == string(ScopeNone) {
		return ScopeNone, nil
	}
	sc, err := ParseScope(s)
	if err != nil {
		return "", fmt.Errorf("anonymous access %q: want none, read, client or admin", s)
	}
	return sc, nil
}

// Allows reports whether s allows what other does (read < client <
// admin; none allows nothing).
func (s Scope) Allows(other Scope) bool {
	level := map[Scope]int{ScopeRead: 1, ScopeClient: 2, ScopeAdmin: 3}
	return level[s] > 0 && level[s] >= level[other]
}

// meets reports whether s allows what need asks.
func (s Scope) meets(need httpjson.Need) bool {
	level := map[Scope]httpjson.Need{ScopeRead: httpjson.Read, ScopeClient: httpjson.Client, ScopeAdmin: httpjson.Admin}
	l, ok := level[s]
	return need == httpjson.Capability || ok && l >= need
}

// Principal is who a request comes from.
type Principal struct {
	// Name is the token's name, "anonymous", or "local" (the unix
	// socket): what the audit log says.
	Name  string
	Scope Scope
	// owner is what owns the registrations it makes, and counts them
	// against its quotas: the token, or an anonymous caller's address.
	owner     string
	anonymous bool
	// local: the host's administrator, over the unix socket.
	local bool
}

// HostLocal says p is the host's administrator, on the unix socket: who
// may name this host's own addresses (loopback included) as listeners,
// targets, grantors and participants, as no network client may.
func (p Principal) HostLocal() bool { return p.local }

// Owner is the key of what p makes, for services that keep one client's
// registrations from another: "" for an administrator (local, or an
// admin token), who may act on anything.
func (p Principal) Owner() string {
	if p.Scope == ScopeAdmin {
		return ""
	}
	return p.owner
}

// MayAct says whether the caller of ctx may act on a registration owner
// made (an Owner): owner itself, or an administrator. Anyone else is
// Forbidden, told what (never who owns it).
func MayAct(ctx context.Context, owner, what string) error {
	by := PrincipalOf(ctx).Owner()
	if by == "" || by == owner {
		return nil
	}
	return fault.New(apitypes.Forbidden, "%s was made by another client: only it, or an administrator, may change it or see its lease", what)
}

// forwarded is a Principal as a node of a cluster tells another, with
// a request it forwards to the node holding the request's shard.
type forwarded struct {
	Name      string `json:"name"`
	Scope     Scope  `json:"scope"`
	Owner     string `json:"owner,omitempty"`
	Anonymous bool   `json:"anonymous,omitempty"`
}

// Forwarded is p as another node of a cluster is told it (a header
// value): the caller as this node authenticated it. The host-local mark
// stays here: the other node is another host, whose own addresses the
// caller has no say in.
func (p Principal) Forwarded() string {
	raw, _ := json.Marshal(forwarded{Name: p.Name, Scope: p.Scope, Owner: p.owner, Anonymous: p.anonymous})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// WithForwarded returns ctx with the caller v names (Forwarded) as its
// principal: for a request another node of the cluster forwarded, on a
// connection that proved to come from a member. A value that does not
// read is an error, and a scope it does not know too.
func WithForwarded(ctx context.Context, v string) (context.Context, error) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) > 1024 {
		return ctx, fmt.Errorf("a forwarded principal that does not read (%d bytes)", len(v))
	}
	var f forwarded
	if err := json.Unmarshal(raw, &f); err != nil {
		return ctx, fmt.Errorf("a forwarded principal that does not read: %w", err)
	}
	if _, err := ParseAnonymous(string(f.Scope)); err != nil {
		return ctx, fmt.Errorf("a forwarded principal: %w", err)
	}
	p := Principal{Name: f.Name, Scope: f.Scope, owner: f.Owner, anonymous: f.Anonymous}
	return context.WithValue(context.WithValue(ctx, principalKey{}, p), forwardedKey{}, true), nil
}

// forwardedKey marks a context whose principal another node told
// (WithForwarded): the guard takes it as that node authenticated it.
type forwardedKey struct{}

// forwardedOf is the principal another node told with the request, if
// one did.
func forwardedOf(ctx context.Context) (Principal, bool) {
	if v, _ := ctx.Value(forwardedKey{}).(bool); !v {
		return Principal{}, false
	}
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

type principalKey struct{}

// PrincipalOf returns the caller of a request's context. A context the
// guard did not see (a service's own tests, calls inside the daemon) is
// the administrator's.
func PrincipalOf(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Principal{Name: "local", Scope: ScopeAdmin, local: true}
}

type localKey struct{}

// LocalConn marks a connection's context as the local unix socket's:
// the server's ConnContext calls it for that listener's connections.
func LocalConn(ctx context.Context) context.Context { return context.WithValue(ctx, localKey{}, true) }

func isLocal(ctx context.Context) bool { v, _ := ctx.Value(localKey{}).(bool); return v }

// GuardConfig configures a Guard.
type GuardConfig struct {
	Tokens *Tokens
	// Anonymous is what a request without a token may do over the
	// network: ScopeNone, or a scope (default ScopeRead).
	Anonymous Scope
	// Host reports whether a request's Host (without its port) is one the
	// daemon answers to: its addresses and names. Nil takes any.
	Host   func(host string) bool
	Logger *slog.Logger
}

// Guard is the API's front door.
type Guard struct {
	cfg GuardConfig
	log *slog.Logger

	mu      sync.Mutex
	quietAt time.Time // anonymous changes are logged once a second at most
}

// NewGuard returns a guard.
func NewGuard(cfg GuardConfig) *Guard {
	if cfg.Anonymous == "" {
		cfg.Anonymous = ScopeRead
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{cfg: cfg, log: cfg.Logger.With("component", "access")}
}

// Handler checks what every request must pass (Host, body type, token),
// then serves it with its principal in the context, and logs the changes.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local := isLocal(r.Context())
		fwd, forwarded := forwardedOf(r.Context())
		if !local && !forwarded && g.cfg.Host != nil {
			if host := hostOnly(r.Host); !g.cfg.Host(host) {
				httpjson.WriteError(w, fault.New(apitypes.MisdirectedRequest,
					"this daemon does not answer to the name %q (DNS rebinding?); use its address, or add the name with --api-host", host))
				return
			}
		}
		if err := checkBody(r); err != nil {
			httpjson.WriteError(w, err)
			return
		}
		p := Principal{Name: "local", Scope: ScopeAdmin, local: true}
		switch {
		case forwarded:
			// A request another node of the cluster forwarded, on a
			// connection proven to come from a member: the node checked
			// its Host and token, and says who the caller is.
			p = fwd
		case !local:
			var err error
			if p, err = g.authenticate(r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="jinid"`)
				httpjson.WriteError(w, err)
				return
			}
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		// The route says whether it only reads (Require): a read sent
		// as a POST (a query, a template in its body) is no change.
		var read bool
		ctx = context.WithValue(ctx, readKey{}, &read)
		// The host's administrator may name this host as a listener,
		// target, grantor or participant; the services keep the mark
		// with what it made.
		ctx = outbound.HostLocalIf(ctx, p.HostLocal())
		next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.internal != nil {
			g.log.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", rec.internal)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !read && rec.status < 400 {
			g.audit(p, r, rec.status)
		}
	})
}

// authenticate returns who the request's token says it is, or the
// anonymous principal when it has none.
func (g *Guard) authenticate(r *http.Request) (Principal, error) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		// Anonymous callers own what they make by address: one cannot
		// change another's, nor use up another's quota.
		src := r.RemoteAddr
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			src = ap.Addr().Unmap().WithZone("").String()
		}
		return Principal{Name: "anonymous", Scope: g.cfg.Anonymous, owner: "anonymous:" + src, anonymous: true}, nil
	}
	// The scheme is case-insensitive (RFC 9110, 11.1).
	scheme, bearer, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || g.cfg.Tokens == nil {
		return Principal{}, fault.New(apitypes.Unauthenticated, "want Authorization: Bearer <token>")
	}
	tok, err := g.cfg.Tokens.verify(strings.TrimSpace(bearer))
	if err != nil {
		return Principal{}, err
	}
	return Principal{Name: tok.Name, Scope: Scope(tok.Scope), owner: "token:" + tok.ID}, nil
}

// audit logs a change: who (never the token itself), from where, what.
func (g *Guard) audit(p Principal, r *http.Request, status int) {
	if p.anonymous {
		// Anyone on the LAN can make these when anonymous callers may
		// change things: at most one line a second.
		g.mu.Lock()
		quiet := time.Since(g.quietAt) < time.Second
		if !quiet {
			g.quietAt = time.Now()
		}
		g.mu.Unlock()
		if quiet {
			return
		}
	}
	g.log.Info("API change", "token", p.Name, "source", r.RemoteAddr, "method", r.Method, "path", shortPath(r.URL.Path), "status", status)
}

// shortPath is a request path with every long segment (an ID: of a
// registration, a lease, a mailbox listener, each a capability to some)
// cut to its first eight characters, for the log: enough to tell one
// from another, not enough to use.
func shortPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if len(s) > 12 {
			segs[i] = s[:8] + "…"
		}
	}
	return strings.Join(segs, "/")
}

// Require wraps a route's handler: it runs only for a caller whose scope
// meets need. The answer otherwise names the scope needed: 401 for an
// anonymous caller (a token would do), 403 for a token whose scope is
// too small.
func (g *Guard) Require(need httpjson.Need, h http.HandlerFunc) http.HandlerFunc {
	return Require(need, h)
}

// Require serves h to a caller whose principal (in the request's
// context, as a guard put it there) meets need, and refuses anyone
// else: what a guard does for each route, for a request placed past the
// routes (a cluster's shard).
func Require(need httpjson.Need, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if read, ok := r.Context().Value(readKey{}).(*bool); ok {
			*read = need == httpjson.Read
		}
		p := PrincipalOf(r.Context())
		if p.Scope.meets(need) {
			h(w, r)
			return
		}
		if p.anonymous {
			w.Header().Set("WWW-Authenticate", `Bearer realm="jinid"`)
			httpjson.WriteError(w, fault.New(apitypes.Unauthenticated, "%s %s needs a token with scope %s or more", r.Method, r.URL.Path, need))
			return
		}
		httpjson.WriteError(w, fault.New(apitypes.Forbidden, "%s %s needs scope %s; token %q has %s", r.Method, r.URL.Path, need, p.Name, p.Scope))
	}
}

// readKey marks, for the guard's audit, a request its route serves as
// a read.
type readKey struct{}

// checkBody refuses a request whose body is not JSON: POST, PUT and PATCH
// always say application/json, and so does any request with a body. A web
// page can send a form or text/plain across sites without asking; it
// cannot send application/json without a CORS preflight, which jinid
// never grants.
func checkBody(r *http.Request) error {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
			return nil
		}
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return fault.New(apitypes.UnsupportedMediaType, "request body of type %q: the API takes application/json only", ct)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// recorder keeps a response's status for the audit log, and the error
// behind an Internal answer for the error log (the client is told no more
// than "internal error").
type recorder struct {
	http.ResponseWriter
	status   int
	internal error
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// NoteInternal implements httpjson's internal-error note.
func (r *recorder) NoteInternal(err error) { r.internal = err }

// Unwrap lets http.ResponseController reach the connection (the
// transaction manager's commit lifts its deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets long polls flush through the recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

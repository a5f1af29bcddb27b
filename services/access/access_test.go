package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

func openTokens(t *testing.T, dir string, clk clock.Clock) *Tokens {
	t.Helper()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tk, err := NewTokens(TokensConfig{Store: st, Clock: clk, BootstrapFile: filepath.Join(dir, "admin.token")})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	tk := openTokens(t, dir, clk)

	// The first start wrote an admin token, 0600, and it works.
	raw, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "admin.token")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file mode %v", fi.Mode().Perm())
	}
	admin := strings.TrimSpace(string(raw))
	if tok, err := tk.verify(admin); err != nil || tok.Scope != "admin" || tok.Name != "admin" {
		t.Fatalf("bootstrap token: %+v %v", tok, err)
	}

	secret, tok, err := tk.Create("ci-bot", ScopeClient, clk.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "jinid_"+tok.ID+"_") {
		t.Fatalf("secret %q for id %s", secret, tok.ID)
	}
	if got, err := tk.verify(secret); err != nil || got.Name != "ci-bot" {
		t.Fatalf("verify: %+v %v", got, err)
	}
	for _, bad := range []string{"", "jinid_", secret + "x", strings.Replace(secret, tok.ID, "0000000000000000", 1), "Bearer " + secret} {
		if _, err := tk.verify(bad); err == nil {
			t.Errorf("verify(%q) succeeded", bad)
		}
	}
	if _, _, err := tk.Create("ci-bot", ScopeRead, time.Time{}); err == nil {
		t.Error("a second token of the same name was made")
	}
	for _, name := range []string{"", "-x", "with space", strings.Repeat("n", 65)} {
		if _, _, err := tk.Create(name, ScopeRead, time.Time{}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	// Stored hashed: the secret is nowhere in the database. (Its secret
	// part is base64url, which may hold "_" itself: cut at the first two
	// only, or a fragment as short as "" would be looked for.)
	db, _ := os.ReadFile(filepath.Join(dir, store.FileName))
	if bytes.Contains(db, []byte(strings.SplitN(secret, "_", 3)[2])) || bytes.Contains(db, []byte(admin[len(admin)-20:])) {
		t.Fatal("a token's secret is in the store")
	}

	// Expired: refused.
	clk.Advance(time.Hour)
	if _, err := tk.verify(secret); err == nil {
		t.Fatal("expired token accepted")
	}
	// Revoked: refused at once, by name or ID.
	if err := tk.Revoke("admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.verify(admin); err == nil {
		t.Fatal("revoked token accepted")
	}
	if err := tk.Revoke(tok.ID); err != nil {
		t.Fatal(err)
	}
	if len(tk.List()) != 0 {
		t.Fatalf("tokens left: %+v", tk.List())
	}

	// A restart loads what is there and makes no new admin token.
	os.Remove(filepath.Join(dir, "admin.token"))
	secret2, _, err := tk.Create("kept", ScopeRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tk.cfg.Store.Close()
	tk2 := openTokens(t, dir, clk)
	if _, err := os.Stat(filepath.Join(dir, "admin.token")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a second start wrote an admin token again")
	}
	if _, err := tk2.verify(secret2); err != nil {
		t.Fatalf("token lost across a restart: %v", err)
	}
}

// A guarded API with one route of each need.
func guardedServer(t *testing.T, tk *Tokens, anonymous Scope) *httptest.Server {
	t.Helper()
	var logs bytes.Buffer
	g := NewGuard(GuardConfig{Tokens: tk, Anonymous: anonymous, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Host: func(h string) bool { return h == "127.0.0.1" || h == "jinid.lan" }})
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]string{"who": PrincipalOf(r.Context()).Name, "owner": PrincipalOf(r.Context()).Owner()})
	}
	for need, pattern := range map[httpjson.Need]string{httpjson.Capability: "POST /cap", httpjson.Read: "GET /read",
		httpjson.Client: "POST /client", httpjson.Admin: "PUT /admin"} {
		mux.HandleFunc(pattern, g.Require(need, ok))
	}
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteError(w, errors.New("bbolt: disk on fire at /var/lib/jinid"))
	})
	srv := httptest.NewUnstartedServer(g.Handler(mux))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if c.LocalAddr().Network() == "unix" {
			return LocalConn(ctx)
		}
		return ctx
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("guard log:\n%s", logs.String())
		}
	})
	return srv
}

type answer struct {
	status int
	code   string
	body   string
}

func call(t *testing.T, c *http.Client, method, url, token, contentType, host string) answer {
	t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader("{}")
	}
	req, _ := http.NewRequest(method, url, body)
	if token != "" {
		if !strings.Contains(token, " ") {
			token = "Bearer " + token
		}
		req.Header.Set("Authorization", token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb apitypes.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return answer{resp.StatusCode, string(eb.Error.Code), string(raw)}
}

func TestGuard(t *testing.T) {
	tk := openTokens(t, t.TempDir(), clock.Real{})
	read, _, _ := tk.Create("reader", ScopeRead, time.Time{})
	cl, clTok, _ := tk.Create("client", ScopeClient, time.Time{})
	admin, _, _ := tk.Create("boss", ScopeAdmin, time.Time{})
	srv := guardedServer(t, tk, ScopeRead)
	c := srv.Client()
	const js = "application/json"
	for _, tc := range []struct {
		name, method, path, token, ctype, host string
		status                                 int
		code, says                             string
	}{
		{"anonymous reads", "GET", "/read", "", "", "", 200, "", `"anonymous"`},
		{"anonymous may not write", "POST", "/client", "", js, "", 401, "Unauthenticated", "scope client"},
		{"anonymous uses a capability", "POST", "/cap", "", js, "", 200, "", ""},
		{"read cannot register", "POST", "/client", read, js, "", 403, "Forbidden", "needs scope client"},
		{"client registers", "POST", "/client", cl, js, "", 200, "", `"token:` + clTok.ID + `"`},
		{"client cannot administer", "PUT", "/admin", cl, js, "", 403, "Forbidden", "needs scope admin"},
		{"admin administers, owning nothing in particular", "PUT", "/admin", admin, js, "", 200, "", `"owner":""`},
		{"a bad token is refused, even for reading", "GET", "/read", "jinid_0000_nope", "", "", 401, "Unauthenticated", "not valid"},
		{"the scheme in lower case (RFC 9110: any case)", "POST", "/client", "bearer " + cl, js, "", 200, "", `"token:` + clTok.ID + `"`},
		{"the scheme in upper case", "POST", "/client", "BEARER " + cl, js, "", 200, "", `"token:` + clTok.ID + `"`},
		{"another scheme", "GET", "/read", "Basic dXNlcjpwYXNz", "", "", 401, "Unauthenticated", "Bearer"},
		{"not a bearer", "GET", "/read", "", "", "", 200, "", ""},
		{"text/plain", "POST", "/client", cl, "text/plain", "", 415, "UnsupportedMediaType", "application/json only"},
		{"a form", "POST", "/cap", "", "application/x-www-form-urlencoded", "", 415, "UnsupportedMediaType", ""},
		{"no type", "POST", "/cap", "", "", "", 415, "UnsupportedMediaType", `type \"none\"`},
		{"json with a charset", "POST", "/cap", "", "application/json; charset=utf-8", "", 200, "", ""},
		{"a foreign Host", "GET", "/read", "", "", "evil.example", 421, "MisdirectedRequest", `name \"evil.example\"`},
		{"a foreign Host with a port", "POST", "/cap", "", js, "evil.example:4162", 421, "MisdirectedRequest", ""},
		{"a configured name", "GET", "/read", "", "", "jinid.lan:4162", 200, "", ""},
		{"an internal error says nothing of itself", "POST", "/fail", admin, js, "", 500, "Internal", "its log says why"},
	} {
		got := call(t, c, tc.method, srv.URL+tc.path, tc.token, tc.ctype, tc.host)
		if got.status != tc.status || got.code != tc.code || !strings.Contains(got.body, tc.says) {
			t.Errorf("%s: %d %s %s; want %d %s saying %q", tc.name, got.status, got.code, got.body, tc.status, tc.code, tc.says)
		}
		if strings.Contains(got.body, "disk on fire") {
			t.Errorf("%s: the error's text reached the client: %s", tc.name, got.body)
		}
	}

	// A revoked token is refused at once.
	if err := tk.Revoke("client"); err != nil {
		t.Fatal(err)
	}
	if got := call(t, c, "POST", srv.URL+"/client", cl, js, ""); got.status != 401 {
		t.Fatalf("revoked token: %+v", got)
	}
}

func TestGuardAnonymousSettings(t *testing.T) {
	tk := openTokens(t, t.TempDir(), clock.Real{})
	none := guardedServer(t, tk, ScopeNone)
	if got := call(t, none.Client(), "GET", none.URL+"/read", "", "", ""); got.status != 401 {
		t.Errorf("anonymous none reads: %+v", got)
	}
	if got := call(t, none.Client(), "POST", none.URL+"/cap", "", "application/json", ""); got.status != 200 {
		t.Errorf("anonymous none, capability route: %+v", got)
	}
	open := guardedServer(t, tk, ScopeClient)
	if got := call(t, open.Client(), "POST", open.URL+"/client", "", "application/json", ""); got.status != 200 || !strings.Contains(got.body, `"owner":"anonymous:127.0.0.1"`) {
		t.Errorf("anonymous client registers: %+v", got)
	}
	if got := call(t, open.Client(), "PUT", open.URL+"/admin", "", "application/json", ""); got.status != 401 {
		t.Errorf("anonymous client administers: %+v", got)
	}
}

// The unix socket is the administrator's: no token, no Host check.
func TestGuardLocalSocket(t *testing.T) {
	tk := openTokens(t, t.TempDir(), clock.Real{})
	g := NewGuard(GuardConfig{Tokens: tk, Anonymous: ScopeNone, Host: func(string) bool { return false }})
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /admin", g.Require(httpjson.Admin, func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]string{"who": PrincipalOf(r.Context()).Name})
	}))
	sock := filepath.Join(t.TempDir(), "jinid.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g.Handler(mux), ConnContext: func(ctx context.Context, c net.Conn) context.Context { return LocalConn(ctx) }}
	go srv.Serve(ln)
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	got := call(t, c, "PUT", "http://whatever/admin", "", "application/json", "")
	if got.status != 200 || !strings.Contains(got.body, `"local"`) {
		t.Fatalf("local admin: %+v", got)
	}
	if got := call(t, c, "PUT", "http://whatever/admin", "", "text/plain", ""); got.status != 415 {
		t.Fatalf("local text/plain: %+v", got)
	}
}

func TestTokenRoutes(t *testing.T) {
	tk := openTokens(t, t.TempDir(), clock.Real{})
	admin, _, _ := tk.Create("boss", ScopeAdmin, time.Time{})
	g := NewGuard(GuardConfig{Tokens: tk})
	mux := http.NewServeMux()
	tk.Routes(muxFunc(func(need httpjson.Need, pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, g.Require(need, h))
	}))
	srv := httptest.NewServer(g.Handler(mux))
	defer srv.Close()
	do := func(method, path, token, body string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	status, raw := do("POST", "/v1/tokens", admin, `{"name":"ci","scope":"client","duration":60000}`)
	var nt apitypes.NewToken
	if err := json.Unmarshal(raw, &nt); status != 201 || err != nil || nt.Secret == "" || nt.Expires == 0 {
		t.Fatalf("create: %d %s", status, raw)
	}
	if status, raw := do("GET", "/v1/tokens", admin, ""); status != 200 || bytes.Contains(raw, []byte(nt.Secret)) || !bytes.Contains(raw, []byte(`"ci"`)) {
		t.Fatalf("list: %d %s", status, raw)
	}
	if status, _ := do("GET", "/v1/tokens", nt.Secret, ""); status != 403 {
		t.Fatalf("a client token lists tokens: %d", status)
	}
	for _, body := range []string{`{"name":"x","scope":"root"}`, `{"name":"x","scope":"read","duration":-1}`, `{"name":"","scope":"read"}`} {
		if status, raw := do("POST", "/v1/tokens", admin, body); status != 400 {
			t.Errorf("%s: %d %s", body, status, raw)
		}
	}
	if status, _ := do("DELETE", "/v1/tokens/ci", admin, ""); status != 204 {
		t.Fatalf("revoke: %d", status)
	}
	if status, _ := do("GET", "/v1/tokens", nt.Secret, ""); status != 401 {
		t.Fatalf("a revoked token: %d", status)
	}
}

type muxFunc func(httpjson.Need, string, http.HandlerFunc)

func (f muxFunc) Handle(n httpjson.Need, p string, h http.HandlerFunc) { f(n, p, h) }

// BenchmarkGuard is what the front door costs a request: the Host check,
// the body type, the token (a SHA-256 and a constant-time compare) and
// the scope.
func BenchmarkGuard(b *testing.B) {
	st, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tk, err := NewTokens(TokensConfig{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	secret, _, err := tk.Create("bench", ScopeClient, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	g := NewGuard(GuardConfig{Tokens: tk, Host: func(h string) bool { return h == "192.0.2.1" }})
	h := g.Handler(g.Require(httpjson.Client, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, c := range []struct{ name, token string }{{"token", secret}, {"anonymous", ""}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("POST", "http://192.0.2.1:4162/v1/x", nil)
			req.Header.Set("Content-Type", "application/json")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// TestTokenNames: 1 to 64 letters, digits, '.', '_' or '-', starting with
// a letter or digit.
func TestTokenNames(t *testing.T) {
	for name, want := range map[string]bool{
		"ci": true, "a": true, "Z9": true, "gw.lab_ops-1": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "-lead": false, ".lead": false, "_lead": false,
		"sp ace": false, "slash/": false, "ümlaut": false, "new\nline": false, "a:b": false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}

// The audit log names paths with their IDs cut short: enough to tell
// them apart, not enough to use (a lease ID, a mailbox listener are the
// power to cancel, to send).
func TestAuditPathsShortened(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/leases/9f86d081884c7d659a2feaa0c55ad015/renew":      "/v1/leases/9f86d081…/renew",
		"/v1/mailbox/listeners/a3f2c9b8e7d6c5b4a3f2c9b8e7d6c5b4": "/v1/mailbox/listeners/a3f2c9b8…",
		"/v1/lookup/groups": "/v1/lookup/groups",
		"/v1/transactions/0123456789abcdef0123456789abcdef/commit": "/v1/transactions/01234567…/commit",
	} {
		if got := shortPath(path); got != want {
			t.Errorf("shortPath(%q) = %q, want %q", path, got, want)
		}
	}
}

// Only a registration's maker, or an administrator, may act on it.
func TestMayAct(t *testing.T) {
	alice := Principal{Name: "alice", Scope: ScopeClient, owner: "token:a"}
	bob := Principal{Name: "bob", Scope: ScopeClient, owner: "token:b"}
	anon := Principal{Name: "anonymous", Scope: ScopeClient, owner: "anonymous:198.18.1.9", anonymous: true}
	admin := Principal{Name: "root", Scope: ScopeAdmin, owner: "token:r"}
	for _, c := range []struct {
		p     Principal
		owner string
		ok    bool
	}{
		{alice, "token:a", true}, {bob, "token:a", false}, {anon, "token:a", false}, {admin, "token:a", true},
		{alice, "", false}, {admin, "", true}, {anon, "anonymous:198.18.1.9", true},
	} {
		ctx := context.WithValue(context.Background(), principalKey{}, c.p)
		if err := MayAct(ctx, c.owner, "thing"); (err == nil) != c.ok {
			t.Errorf("%s on %q's: %v, want allowed %v", c.p.Name, c.owner, err, c.ok)
		}
	}
}

// A principal forwarded by another node of a cluster reads back as it
// was, but for the host-local mark, which stays on its host; what does
// not read is refused.
func TestForwardedPrincipal(t *testing.T) {
	for _, p := range []Principal{
		{Name: "anonymous", Scope: ScopeNone, owner: "anonymous:198.18.1.5", anonymous: true},
		{Name: "ci", Scope: ScopeClient, owner: "token:abc"},
		{Name: "local", Scope: ScopeAdmin, local: true},
	} {
		ctx, err := WithForwarded(context.Background(), p.Forwarded())
		if err != nil {
			t.Fatal(err)
		}
		want := p
		want.local = false
		if got := PrincipalOf(ctx); got != want {
			t.Errorf("forwarded %+v: read back %+v", p, got)
		}
	}
	for _, bad := range []string{"", "!!", "e30", "eyJzY29wZSI6InJvb3QifQ"} { // {} and {"scope":"root"}
		if _, err := WithForwarded(context.Background(), bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// The guard takes a forwarded caller as the forwarding node told it:
// no Host check and no token of its own (the node did both); a request
// without one is checked as ever.
func TestGuardForwarded(t *testing.T) {
	g := NewGuard(GuardConfig{Anonymous: ScopeNone, Host: func(string) bool { return false }})
	var seen Principal
	h := g.Handler(g.Require(httpjson.Client, func(w http.ResponseWriter, r *http.Request) { seen = PrincipalOf(r.Context()) }))
	told := Principal{Name: "ci", Scope: ScopeClient, owner: "token:abc"}
	ctx, err := WithForwarded(context.Background(), told.Forwarded())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://elsewhere/v1/x", nil).WithContext(ctx))
	if rec.Code != http.StatusOK || seen != told {
		t.Errorf("forwarded: %d, caller %+v; want %+v", rec.Code, seen, told)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://elsewhere/v1/x", nil))
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("not forwarded, a Host not this daemon's: %d", rec.Code)
	}
}

// Tokens that follow another daemon's: a token made there verifies
// here, revoked there it does not; a reset forgets what is not in it.
func TestFollowingTokens(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src, err := NewTokens(TokensConfig{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	secret, tok, err := src.Create("ci", ScopeClient, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	changes := func() []store.Change {
		var cs []store.Change
		st.View(func(tx *store.Tx) error {
			return tx.ForEach(TokensBucket, func(k string, raw []byte) error {
				cs = append(cs, store.Change{Bucket: TokensBucket, Key: k, Value: slices.Clone(raw)})
				return nil
			})
		})
		return cs
	}
	copyOf := NewFollowingTokens(nil, nil)
	copyOf.Follow(store.Batch{Changes: append(changes(), store.Change{Bucket: TokensBucket, Key: "junk", Value: []byte("{")}), Reset: true})
	if got, err := copyOf.verify(secret); err != nil || got.ID != tok.ID {
		t.Fatalf("a token made elsewhere: %v %v", got, err)
	}
	if err := src.Revoke(tok.ID); err != nil {
		t.Fatal(err)
	}
	copyOf.Follow(store.Batch{Changes: []store.Change{{Bucket: TokensBucket, Key: tok.ID}}})
	if _, err := copyOf.verify(secret); err == nil {
		t.Error("a token revoked elsewhere still verifies")
	}
	copyOf.Follow(store.Batch{Changes: changes(), Reset: true})
	if n := len(copyOf.List()); n != 0 {
		t.Errorf("after a reset to none: %d tokens", n)
	}
}

// The audit log is of changes: a read its route serves as one, even
// sent as a POST (a query with its template in the body), is not logged
// (a `browse --watch` made each daemon log two "API change" lines a
// second).
func TestAuditLogsChangesOnly(t *testing.T) {
	var logged bytes.Buffer
	g := NewGuard(GuardConfig{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	mux.Handle("POST /v1/lookup/query", Require(httpjson.Read, ok))
	mux.Handle("POST /v1/lookup/services", Require(httpjson.Client, ok))
	h := g.Handler(mux)
	for _, path := range []string{"/v1/lookup/query", "/v1/lookup/services"} {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(LocalConn(r.Context())))
	}
	if got := logged.String(); strings.Contains(got, "/v1/lookup/query") || !strings.Contains(got, "path=/v1/lookup/services") {
		t.Errorf("logged:\n%s\nwant the registration alone", got)
	}
}

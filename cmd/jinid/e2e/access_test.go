package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// rawAnswer is an API answer as a hostile or careless client sees it.
type rawAnswer struct {
	status int
	code   string
	body   string
}

// raw sends one request from inside lab host h, as written: any method,
// token, content type, Host header and body.
func raw(t *testing.T, h *netlab.Host, method, url, token, ctype, host, body string) rawAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if host != "" {
		req.Host = host
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: jinidtest.DialFrom(h)}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb apitypes.ErrorBody
	_ = json.Unmarshal(b, &eb)
	return rawAnswer{resp.StatusCode, string(eb.Error.Code), string(b)}
}

// cliIn runs a jinid command inside lab host h and returns its output.
func cliIn(t *testing.T, bin string, h *netlab.Host, env []string, args ...string) string {
	t.Helper()
	cmd := h.Command(t.Context(), bin, args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(interface{ Stderr() []byte }); ok {
			stderr = string(ee.Stderr())
		}
		t.Fatalf("jinid %v in %s: %v %s", args, h.Name, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// TestAccessOnALAN: a daemon with its defaults, a guest and a client on
// its LAN. Anonymous callers may look, not change; each scope does what
// it says and no more; the CLI on the daemon's host administers over the
// socket without a token; a revoked token is refused at once; bodies
// other than JSON and foreign Host names are refused; and what was
// refused changed nothing, after a restart too.
func TestAccessOnALAN(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, guest, cl := lab.Host("gw"), lab.Host("guest"), lab.Host("client")
	gl := gw.Attach(lan)
	guest.Attach(lan)
	cl.Attach(lan)
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--anonymous", "read", "--no-multicast"}
	d := jinidtest.LabDaemon(t, bin, gw, append(args, "--groups", "lab", "--public-group=false")...)
	api := "http://" + gl.IPv4.String() + ":4162"
	ctx := t.Context()

	// The guest, anonymous: may look (the status page and the metrics
	// too: they need the read scope), may not change.
	for _, path := range []string{"/v1/lookup", "/", "/metrics"} {
		if a := raw(t, guest, "GET", api+path, "", "", "", ""); a.status != 200 {
			t.Fatalf("anonymous read of %s: %+v", path, a)
		}
	}
	// The status page shows where the store is to an administrator only.
	if a := raw(t, guest, "GET", api+"/", "", "", "", ""); strings.Contains(a.body, dir) || !strings.Contains(a.body, "shown to administrators") {
		t.Errorf("the status page shows the data directory to an anonymous caller")
	}
	if a := raw(t, guest, "GET", api+"/", d.AdminToken(t), "", "", ""); !strings.Contains(a.body, dir) {
		t.Errorf("the status page hides the data directory from an administrator")
	}
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/lookup/groups", `{"groups":["pwned"]}`},
		{"POST", "/v1/lookup/services", `{"item":{"types":["x"]},"leaseDuration":60000}`},
		{"POST", "/v1/lds/registrations", `{"groups":["a"],"listener":{"url":"http://198.18.1.99/"},"leaseDuration":60000}`},
		{"POST", "/v1/tokens", `{"name":"mine","scope":"admin"}`},
	} {
		if a := raw(t, guest, c.method, api+c.path, "", "application/json", "", c.body); a.status != 401 || a.code != "Unauthenticated" {
			t.Errorf("anonymous %s %s: %+v, want 401 Unauthenticated", c.method, c.path, a)
		}
	}

	// On the daemon's host the CLI administers over the socket, no token.
	sock := []string{"JINID_SERVER=unix://" + d.Socket}
	reader := cliIn(t, bin, gw, sock, "token", "create", "--name", "reader", "--scope", "read")
	alice := cliIn(t, bin, gw, sock, "token", "create", "--name", "alice", "--scope", "client")
	bob := cliIn(t, bin, gw, sock, "token", "create", "--name", "bob", "--scope", "client")
	if list := cliIn(t, bin, gw, sock, "token", "list"); !strings.Contains(list, "alice") || strings.Contains(list, alice) {
		t.Fatalf("token list:\n%s", list)
	}
	as := func(token string) *client.Client { return jinidtest.LabClient(t, cl, api, client.WithToken(token)) }

	// read: cannot register.
	item := apitypes.Item{Types: []string{"com.example.Printer"}}
	if _, err := as(reader).Register(ctx, item, 60_000); !fault.Is(err, apitypes.Forbidden) {
		t.Fatalf("read token registered: %v", err)
	}
	// client: registers, renews and cancels its own; cannot touch
	// another's, nor the daemon; sees no other's lease IDs.
	reg, err := as(alice).Register(ctx, item, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := as(alice).Renew(ctx, reg.Lease.ID, 60_000); err != nil {
		t.Fatalf("renewing her own: %v", err)
	}
	mine := item
	mine.ServiceID = reg.ServiceID
	if _, err := as(bob).Register(ctx, mine, 60_000); !fault.Is(err, apitypes.Forbidden) {
		t.Errorf("bob replaced alice's item: %v", err)
	}
	if err := as(bob).ChangeAttributes(ctx, reg.ServiceID, apitypes.AttributeChange{Add: []apitypes.Attribute{{Type: "x.Y", Fields: map[string]any{}}}}); !fault.Is(err, apitypes.Forbidden) {
		t.Errorf("bob changed alice's item: %v", err)
	}
	if err := as(bob).SetGroups(ctx, []string{"pwned"}); !fault.Is(err, apitypes.Forbidden) {
		t.Errorf("a client token changed the groups: %v", err)
	}
	for _, path := range []string{"/v1/lookup/services", "/v1/lookup/services/" + reg.ServiceID} {
		if a := raw(t, cl, "GET", api+path, bob, "", "", ""); a.status != 200 || strings.Contains(a.body, reg.Lease.ID) {
			t.Errorf("GET %s shows alice's lease ID to bob: %+v", path, a)
		}
	}
	if err := as(alice).Cancel(ctx, reg.Lease.ID); err != nil {
		t.Fatalf("cancelling her own: %v", err)
	}
	// admin: may change the daemon.
	if err := as(d.AdminToken(t)).SetGroups(ctx, []string{"lab", "ops"}); err != nil {
		t.Fatalf("admin: %v", err)
	}

	// Revoked: refused at once.
	cliIn(t, bin, gw, sock, "token", "revoke", "bob")
	if _, err := as(bob).Register(ctx, item, 60_000); !fault.Is(err, apitypes.Unauthenticated) {
		t.Fatalf("revoked token: %v", err)
	}

	// Browser-safe: JSON only, own names only.
	if a := raw(t, guest, "POST", api+"/v1/lookup/services", alice, "text/plain", "", `{"item":{"types":["x"]},"leaseDuration":60000}`); a.status != 415 || a.code != "UnsupportedMediaType" {
		t.Errorf("text/plain: %+v", a)
	}
	if a := raw(t, guest, "POST", api+"/v1/lookup/services", alice, "application/x-www-form-urlencoded", "", "a=b"); a.status != 415 {
		t.Errorf("a form: %+v", a)
	}
	if a := raw(t, guest, "GET", api+"/v1/lookup", "", "", "evil.example", ""); a.status != 421 || a.code != "MisdirectedRequest" {
		t.Errorf("foreign Host: %+v", a)
	}

	// A restart (groups as stored): what was refused is not there, what
	// was done is.
	d.Process.Signal(syscall.SIGTERM)
	d.Wait()
	jinidtest.LabDaemon(t, bin, gw, args...)
	info, err := as(alice).Lookup(ctx)
	if err != nil {
		t.Fatalf("alice's token after a restart: %v", err)
	}
	got, err := jinidtest.LabClient(t, cl, api).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := raw(t, guest, "GET", api+"/v1/lookup/groups", "", "", "", "")
	if !strings.Contains(groups.body, `"lab","ops"`) || strings.Contains(groups.body, "pwned") || len(got) != 0 || info.ServiceID == "" {
		t.Fatalf("after a restart: groups %s, items %+v", groups.body, got)
	}
	if _, err := as(bob).Lookup(ctx); !fault.Is(err, apitypes.Unauthenticated) {
		t.Fatalf("bob's revoked token after a restart: %v", err)
	}
}

// TestSpoofedHostChangesNoURL: every URL and locator the daemon hands
// out carries the address the client reached, whatever name the Host
// header says (one the daemon answers to); and a daemon whose API is on
// loopback never tells a remote host a loopback registrar URL.
func TestSpoofedHostChangesNoURL(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, cl, lo := lab.Host("gw"), lab.Host("client"), lab.Host("loopback-api")
	gl := gw.Attach(lan)
	cl.Attach(lan)
	ll := lo.Attach(lan)
	d := jinidtest.LabDaemon(t, bin, gw, "--api-host", "gw.lan", "--groups", "lab", "--public-group=false")
	jinidtest.LabDaemon(t, bin, lo, "--api-listen", "127.0.0.1:4162", "--groups", "lab", "--public-group=false")
	api := "http://" + gl.IPv4.String() + ":4162"
	want := "http://" + gl.IPv4.String() + ":4162"
	for _, host := range []string{"", "gw.lan", "localhost", "gw.lan:9999"} {
		info := raw(t, cl, "GET", api+"/v1/lookup", "", "", host, "")
		if !strings.Contains(info.body, `"jini://`+gl.IPv4.String()+`:4160"`) {
			t.Errorf("Host %q: locator in %s", host, info.body)
		}
		reg := raw(t, cl, "POST", api+"/v1/lookup/services", d.AdminToken(t), "application/json", host, `{"item":{"types":["x"]},"leaseDuration":60000}`)
		if !strings.Contains(reg.body, `"grantor":"`+want+`"`) {
			t.Errorf("Host %q: lease %s", host, reg.body)
		}
		mb := raw(t, cl, "POST", api+"/v1/mailbox/registrations", "", "application/json", host, `{"leaseDuration":60000}`)
		if !strings.Contains(mb.body, `"url":"`+want+`/v1/mailbox/listeners/`) {
			t.Errorf("Host %q: mailbox %s", host, mb.body)
		}
	}

	// jinid discover from the client: the loopback-API daemon is found,
	// without a registrar URL (none the client could reach), and no
	// result carries a loopback one.
	rs := discoverIn(t, bin, cl, "--groups", "lab", "--timeout", "2s")
	r, ok := atHost(rs, ll.IPv4.String())
	if !ok || r.APIURL != "" {
		t.Fatalf("loopback-API daemon: %+v (all: %+v)", r, rs)
	}
	for _, r := range rs {
		if strings.Contains(r.APIURL, "127.0.0.1") || strings.Contains(r.APIURL, "[::1]") {
			t.Errorf("a loopback registrar URL: %+v", r)
		}
	}
	if r, ok := atHost(rs, gl.IPv4.String()); !ok || r.APIURL != want {
		t.Errorf("the other daemon: %+v", r)
	}
}

// TestRegistrationsHaveOwners: every kind of registration is its
// maker's. Alice (a client token) makes a mailbox, a discovery
// registration, a renewal set and a transaction; Bob (another client
// token) and an anonymous caller (anonymous callers may be clients here)
// are refused every route that changes them, or reads their events or
// client leases, and are shown none of their lease IDs (each the power to
// cancel); what they tried changed nothing.
func TestRegistrationsHaveOwners(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, guest, cl := lab.Host("gw"), lab.Host("guest"), lab.Host("client")
	gl := gw.Attach(lan)
	guest.Attach(lan)
	cll := cl.Attach(lan)
	d := jinidtest.LabDaemon(t, bin, gw, "--anonymous", "client", "--no-multicast")
	api := "http://" + gl.IPv4.String() + ":4162"
	sock := []string{"JINID_SERVER=unix://" + d.Socket}
	alice := cliIn(t, bin, gw, sock, "token", "create", "--name", "alice", "--scope", "client")
	bob := cliIn(t, bin, gw, sock, "token", "create", "--name", "bob", "--scope", "client")
	listener := "http://" + cll.IPv4.String() + ":9/events"

	var made struct {
		ID    string         `json:"id"`
		Lease apitypes.Lease `json:"lease"`
	}
	create := func(path, body string) (string, string) {
		t.Helper()
		a := raw(t, cl, "POST", api+path, alice, "application/json", "", body)
		if a.status != 200 || json.Unmarshal([]byte(a.body), &made) != nil || made.ID == "" {
			t.Fatalf("alice makes %s: %+v", path, a)
		}
		return made.ID, made.Lease.ID
	}
	mbox, mboxLease := create("/v1/mailbox/registrations", `{"leaseDuration":600000}`)
	if a := raw(t, cl, "PUT", api+"/v1/mailbox/registrations/"+mbox+"/delivery", alice, "application/json", "", `{"target":{"url":"`+listener+`"}}`); a.status != 204 {
		t.Fatalf("alice's delivery: %+v", a)
	}
	lds, ldsLease := create("/v1/lds/registrations", `{"groups":["a"],"listener":{"url":"`+listener+`"},"leaseDuration":600000}`)
	set, setLease := create("/v1/renewal/sets", `{"leaseDuration":600000}`)
	tx, _ := create("/v1/transactions", `{"leaseDuration":600000}`)

	cases := []struct{ method, path, body string }{
		{"POST", "/v1/lds/registrations/" + lds + "/groups", `{"groups":["x"]}`},
		{"PUT", "/v1/lds/registrations/" + lds + "/groups", `{"groups":["x"]}`},
		{"DELETE", "/v1/lds/registrations/" + lds + "/groups", `{"groups":["a"]}`},
		{"POST", "/v1/lds/registrations/" + lds + "/locators", `{"locators":["jini://198.18.1.77"]}`},
		{"PUT", "/v1/lds/registrations/" + lds + "/locators", `{"locators":["jini://198.18.1.77"]}`},
		{"DELETE", "/v1/lds/registrations/" + lds + "/locators", `{"locators":["jini://198.18.1.77"]}`},
		{"POST", "/v1/lds/registrations/" + lds + "/discard", `{"serviceID":"01234567-89ab-cdef-0123-456789abcdef"}`},
		{"GET", "/v1/java/mailbox/" + mbox + "/listener", ``},
		{"PUT", "/v1/mailbox/registrations/" + mbox + "/delivery", `{"target":{"url":"http://198.18.1.99/stolen"}}`},
		{"DELETE", "/v1/mailbox/registrations/" + mbox + "/delivery", ``},
		{"POST", "/v1/mailbox/registrations/" + mbox + "/iterators", `{}`},
		{"GET", "/v1/mailbox/registrations/" + mbox + "/iterators/x/next", ``},
		{"DELETE", "/v1/mailbox/registrations/" + mbox + "/iterators/x", ``},
		{"POST", "/v1/mailbox/registrations/" + mbox + "/unknown-events", `{"events":[{"source":"x","eventID":1}]}`},
		{"POST", "/v1/renewal/sets/" + set + "/leases", `{"lease":{"grantor":"http://198.18.1.99:4162","id":"x","remaining":60000},"desiredDuration":60000}`},
		{"GET", "/v1/renewal/sets/" + set + "/leases", ``},
		{"DELETE", "/v1/renewal/sets/" + set + "/leases/x", ``},
		{"PUT", "/v1/renewal/sets/" + set + "/warning-listener", `{"listener":{"url":"http://198.18.1.99/w"},"minWarning":1000}`},
		{"DELETE", "/v1/renewal/sets/" + set + "/warning-listener", ``},
		{"PUT", "/v1/renewal/sets/" + set + "/failure-listener", `{"listener":{"url":"http://198.18.1.99/f"}}`},
		{"DELETE", "/v1/renewal/sets/" + set + "/failure-listener", ``},
		{"POST", "/v1/transactions/" + tx + "/commit", `{}`},
		{"POST", "/v1/transactions/" + tx + "/abort", `{}`},
	}
	// These are the routes the API document marks x-jinid-owner (but for
	// a service's attributes, the lookup service's tests' own).
	documented := ownerRoutes(t)
	for _, c := range cases {
		if !slices.ContainsFunc(documented, func(r ownerRoute) bool { return r.method == c.method && r.path.MatchString(c.path) }) {
			t.Errorf("%s %s is not marked x-jinid-owner in docs/api/openapi.yaml", c.method, c.path)
		}
	}
	for _, r := range documented {
		if !strings.HasPrefix(r.template, "/v1/lookup/") && !slices.ContainsFunc(cases, func(c struct{ method, path, body string }) bool {
			return r.method == c.method && r.path.MatchString(c.path)
		}) {
			t.Errorf("%s %s is marked x-jinid-owner in docs/api/openapi.yaml but not tried here", r.method, r.template)
		}
	}
	for _, c := range cases {
		for who, token := range map[string]string{"bob": bob, "anonymous": ""} {
			ctype := ""
			if c.body != "" {
				ctype = "application/json"
			}
			if a := raw(t, guest, c.method, api+c.path, token, ctype, "", c.body); a.status != 403 || a.code != "Forbidden" {
				t.Errorf("%s: %s %s: %d %s, want 403 Forbidden", who, c.method, c.path, a.status, a.code)
			}
		}
	}
	// Their lease IDs (and the mailbox's listener, the power to put
	// events in it) are alice's to see.
	for path, secret := range map[string]string{"/v1/mailbox/registrations/" + mbox: mboxLease, "/v1/lds/registrations/" + lds: ldsLease,
		"/v1/renewal/sets/" + set: setLease} {
		for who, token := range map[string]string{"bob": bob, "anonymous": ""} {
			if a := raw(t, guest, "GET", api+path, token, "", "", ""); a.status != 200 || strings.Contains(a.body, secret) || strings.Contains(a.body, "/mailbox/listeners/") {
				t.Errorf("%s: GET %s: %d, shows a capability: %s", who, path, a.status, a.body)
			}
		}
		if a := raw(t, cl, "GET", api+path, alice, "", "", ""); a.status != 200 || !strings.Contains(a.body, secret) {
			t.Errorf("alice: GET %s: her own lease ID not shown: %s", path, a.body)
		}
	}
	// Nothing changed.
	if a := raw(t, cl, "GET", api+"/v1/mailbox/registrations/"+mbox, alice, "", "", ""); !strings.Contains(a.body, listener) {
		t.Errorf("alice's mailbox target changed: %s", a.body)
	}
	if a := raw(t, cl, "GET", api+"/v1/lds/registrations/"+lds, alice, "", "", ""); !strings.Contains(a.body, `"groups":["a"]`) || strings.Contains(a.body, "198.18.1.77") {
		t.Errorf("alice's discovery registration changed: %s", a.body)
	}
	if a := raw(t, cl, "GET", api+"/v1/renewal/sets/"+set, alice, "", "", ""); !strings.Contains(a.body, `"leases":0`) || strings.Contains(a.body, "198.18.1.99") {
		t.Errorf("alice's renewal set changed: %s", a.body)
	}
	if a := raw(t, cl, "GET", api+"/v1/transactions/"+tx, alice, "", "", ""); !strings.Contains(a.body, `"ACTIVE"`) {
		t.Errorf("alice's transaction changed: %s", a.body)
	}
	// And alice may do all of it.
	if a := raw(t, cl, "POST", api+"/v1/transactions/"+tx+"/commit", alice, "application/json", "", `{}`); a.status != 200 {
		t.Errorf("alice commits her transaction: %+v", a)
	}
	if a := raw(t, cl, "PUT", api+"/v1/lds/registrations/"+lds+"/groups", alice, "application/json", "", `{"groups":["b"]}`); a.status != 200 {
		t.Errorf("alice changes her groups: %+v", a)
	}
}

// ownerRoute is an operation the API document marks x-jinid-owner.
type ownerRoute struct {
	method, template string
	path             *regexp.Regexp // the template, each {parameter} one segment
}

// ownerRoutes reads docs/api/openapi.yaml's x-jinid-owner operations.
func ownerRoutes(t *testing.T) []ownerRoute {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("../../../docs/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []ownerRoute
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if owner, _ := op.Extensions["x-jinid-owner"].(bool); owner {
				re := regexp.MustCompile(`\\\{[^}]*\\\}`).ReplaceAllString(regexp.QuoteMeta(path), "[^/]+")
				out = append(out, ownerRoute{method, path, regexp.MustCompile("^" + re + "$")})
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d x-jinid-owner operations in docs/api/openapi.yaml", len(out))
	}
	return out
}

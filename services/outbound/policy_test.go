package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

func TestPolicyCheck(t *testing.T) {
	self := func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}, nil
	}
	p := NewPolicy(PolicyConfig{Self: self})
	for _, c := range []struct {
		addr string
		why  string // "" allowed; else a word of the reason
	}{
		// IPv4
		{"192.0.2.20", ""},
		{"198.51.100.7", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"169.254.169.254", "link-local"},
		{"224.0.0.251", "multicast"},
		{"239.1.2.3", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"192.0.2.10", "this host"},
		// IPv6
		{"2001:db8::20", ""},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"ff02::fb", "multicast"},
		{"ff05::1", "multicast"},
		{"2001:db8::10", "this host"},
		{"2001:db8::10%eth0", "this host"},
		// IPv4 in IPv6 forms
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::ffff:192.0.2.10", "this host"},
		{"::ffff:198.51.100.7", ""},
		{"::127.0.0.1", "loopback"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::c633:6407", ""},
	} {
		err := p.Check(netip.MustParseAddr(c.addr))
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s refused: %v", c.addr, err)
		case c.why != "" && err == nil:
			t.Errorf("%s allowed, want refused (%s)", c.addr, c.why)
		case c.why != "" && (!errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s: %v, want ErrForbidden saying %q", c.addr, err, c.why)
		}
	}
}

func TestPolicyAllow(t *testing.T) {
	p := NewPolicy(PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fe80::/10")}})
	for _, a := range []string{"127.0.0.1", "::ffff:127.0.0.1", "fe80::1%eth0"} {
		if err := p.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s refused though allowed: %v", a, err)
		}
	}
	if err := p.Check(netip.MustParseAddr("::1")); err == nil {
		t.Error("::1 allowed by 127.0.0.0/8")
	}
	if err := (*Policy)(nil).Check(netip.MustParseAddr("127.0.0.1")); err == nil {
		t.Error("the nil policy allowed loopback")
	}
}

func TestCheckURL(t *testing.T) {
	p := NewPolicy(PolicyConfig{})
	for _, c := range []struct {
		url, want string // want: "" accepted, else in the error
	}{
		{"http://192.0.2.1:9000/events", ""},
		{"https://listener.example/events", ""},
		{"http://[2001:db8::1]:80/x", ""},
		{"http://127.0.0.1:9000/", "loopback"},
		{"http://[::1]/", "loopback"},
		{"http://[::ffff:127.0.0.1]/", "loopback"},
		{"http://0.0.0.0:22/", "unspecified"},
		{"http://169.254.169.254/latest/meta-data", "link-local"},
		{"http://[fe80::1%25eth0]:80/", "link-local"},
		{"http://localhost:8080/", "loopback"},
		{"http://api.LOCALHOST./", "loopback"},
		{"http://user:secret@192.0.2.1/", "user name or password"},
		{"http://user@192.0.2.1/", "user name or password"},
		{"ftp://192.0.2.1/", "want an http or https URL"},
		{"http:///x", "want an http or https URL"},
		{"not a url", "want an http or https URL"},
		{"http:192.0.2.1", "want an http or https URL"},
	} {
		err := p.CheckURL(t.Context(), "listener", c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s refused: %v", c.url, err)
		case c.want != "" && (err == nil || fault.CodeOf(err) != apitypes.InvalidArgument || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want InvalidArgument saying %q", c.url, err, c.want)
		}
	}
}

// A name that resolves to a forbidden address is refused when the client
// connects, for every address tried, and counted.
func TestClientRefusesAtConnect(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p := NewPolicy(PolicyConfig{})
	c := New(Config{Policy: p, Timeout: 5 * time.Second})
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		_, err := post(c, u, "")
		if !errors.Is(err, ErrForbidden) || CategoryOf(err) != apitypes.Forbidden {
			t.Errorf("%s: %v, want forbidden", u, err)
		}
	}
	if hits != 0 || p.Refused() < 2 {
		t.Fatalf("%d requests arrived, %d refused", hits, p.Refused())
	}
	// Allowed, it arrives.
	c = New(Config{Policy: NewPolicy(PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})})
	resp, err := post(c, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits != 1 {
		t.Fatalf("%d requests arrived with loopback allowed, want 1", hits)
	}
}

// A redirect is an answer, not a new destination.
func TestClientFollowsNoRedirect(t *testing.T) {
	var reached bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	c := New(Config{Policy: NewPolicy(PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})})
	resp, err := post(c, redirect.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || reached {
		t.Fatalf("status %d, target reached %v", resp.StatusCode, reached)
	}
}

func TestCategories(t *testing.T) {
	for _, c := range []struct {
		err  error
		want fault.Code
	}{
		{fmt.Errorf("dial: %w", ErrForbidden), apitypes.Forbidden},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, apitypes.Refused},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, apitypes.Refused},
		{&net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}, apitypes.Unreachable},
		{&net.OpError{Op: "dial", Err: syscall.ENETUNREACH}, apitypes.Unreachable},
		{&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, apitypes.Unreachable},
		{context.DeadlineExceeded, apitypes.Timeout},
		{&net.DNSError{Err: "timeout", IsTimeout: true}, apitypes.Timeout},
		{errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP status code "Debian-2+deb12u3"`), apitypes.BadAnswer},
	} {
		f := Fault(c.err)
		if f.Code != c.want {
			t.Errorf("%v: %s, want %s", c.err, f.Code, c.want)
		}
		if strings.Contains(f.Message, "Debian") || strings.Contains(f.Message, "refused the connection") != (c.want == apitypes.Refused) {
			t.Errorf("%v: message %q", c.err, f.Message)
		}
	}
}

// BenchmarkPolicyCheck is the check of one address a connection is about
// to be made to (own addresses cached).
func BenchmarkPolicyCheck(b *testing.B) {
	p := NewPolicy(PolicyConfig{Self: func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}, nil
	}})
	a := netip.MustParseAddr("198.51.100.7")
	b.ReportAllocs()
	for b.Loop() {
		if p.Check(a) != nil {
			b.Fatal("refused")
		}
	}
}

// post sends body to url with c.
func post(c *http1.Client, url, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

// The host's administrator (WithHostLocal) may name this host, loopback
// and its own addresses, and its requests connect there; no one else's
// do, and a connection made for it serves no one else's request. Other
// fixed rules (link-local, multicast) hold for it too.
func TestHostLocal(t *testing.T) {
	own := netip.MustParseAddr("192.0.2.7")
	p := NewPolicy(PolicyConfig{Self: func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }})
	admin := WithHostLocal(t.Context())
	for _, tc := range []struct {
		url       string
		admin, by bool // allowed for the administrator, for anyone
	}{
		{"http://127.0.0.1:9000/events", true, false},
		{"http://localhost:9000/", true, false},
		{"http://[::1]:9000/", true, false},
		{"http://192.0.2.7:9000/", true, false},
		{"http://169.254.1.1:9000/", false, false},
		{"http://224.0.0.1:9000/", false, false},
		{"http://198.51.100.1:9000/", true, true},
	} {
		if err := p.CheckURL(admin, "listener", tc.url); (err == nil) != tc.admin {
			t.Errorf("%s for the administrator: %v", tc.url, err)
		}
		if err := p.CheckURL(t.Context(), "listener", tc.url); (err == nil) != tc.by {
			t.Errorf("%s for a network client: %v", tc.url, err)
		}
	}

	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	c := New(Config{Policy: p, Timeout: 5 * time.Second})
	req, _ := http.NewRequestWithContext(admin, http.MethodPost, srv.URL, strings.NewReader("{}"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("the administrator's request to loopback: %v", err)
	}
	resp.Body.Close()
	// Its kept connection is not another's.
	if _, err := post(c, srv.URL, "{}"); !errors.Is(err, ErrForbidden) || hits != 1 {
		t.Fatalf("a network client's request after the administrator's: %v, %d arrived", err, hits)
	}
}

// A listener served inside the daemon may be named by anyone.
func TestInsideListener(t *testing.T) {
	p := NewPolicy(PolicyConfig{Inside: func(u *url.URL) bool { return strings.HasPrefix(u.Path, "/v1/mailbox/listeners/") }})
	if err := p.CheckHTTPListener(t.Context(), "listener", "http://127.0.0.1:4162/v1/mailbox/listeners/abc"); err != nil {
		t.Errorf("an inside listener: %v", err)
	}
	if err := p.CheckHTTPListener(t.Context(), "listener", "http://127.0.0.1:4162/elsewhere"); err == nil {
		t.Error("a loopback listener that is not inside: allowed")
	}
}

// A daemon that may not act (a node of a cluster that lost the store's
// hold) sends nothing: not on a new connection, not on a kept one; the
// client hears Unavailable.
func TestNotActingSendsNothing(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer srv.Close()
	var acting atomic.Bool
	acting.Store(true)
	lost := errors.New("the hold is lost")
	p := NewPolicy(PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Acting: func() error {
			if acting.Load() {
				return nil
			}
			return lost
		}})
	c := New(Config{Policy: p})
	resp, err := post(c, srv.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the connection is kept
	acting.Store(false)
	if _, err := post(c, srv.URL, "{}"); !errors.Is(err, ErrNotActing) || !errors.Is(err, lost) {
		t.Fatalf("a request while not acting: %v", err)
	}
	if _, err := Dialer(Config{Policy: p})(t.Context(), "tcp", srv.Listener.Addr().String()); !errors.Is(err, ErrNotActing) {
		t.Fatalf("a dial while not acting: %v", err)
	}
	if n := reached.Load(); n != 1 {
		t.Fatalf("the server was reached %d times, want once (before)", n)
	}
	if f := Fault(fmt.Errorf("renewing: %w", fmt.Errorf("%w: %w", ErrNotActing, lost))); f.Code != apitypes.Unavailable {
		t.Fatalf("fault %+v", f)
	}
}

// The deployment's own endpoints (etcd, the nodes' ports) are refused
// on their ports alone, whatever is allowed and whoever asks: at the
// URL's check, and at connect time for a name, a redirect's target or
// an endpoint added after the URL was taken.
func TestDeploymentRefused(t *testing.T) {
	var etcdHits, otherHits atomic.Int64
	etcd := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { etcdHits.Add(1) }))
	defer etcd.Close()
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { otherHits.Add(1) }))
	defer other.Close()
	guest := httptest.NewServer(http.RedirectHandler(etcd.URL+"/v3/kv/put", http.StatusTemporaryRedirect))
	defer guest.Close()
	etcdAP := netip.MustParseAddrPort(etcd.Listener.Addr().String())
	var infra atomic.Pointer[[]netip.AddrPort]
	infra.Store(&[]netip.AddrPort{netip.MustParseAddrPort("198.51.100.5:2379"), netip.MustParseAddrPort("[2001:db8::5]:4163")})
	p := NewPolicy(PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Deployment: func() []netip.AddrPort { return *infra.Load() }, DeploymentNames: func() []string { return []string{"etcd1.example.org:2379"} }})
	admin := WithHostLocal(t.Context())
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://198.51.100.5:2379/v3/kv/put", false},
		{"http://[::ffff:198.51.100.5]:2379/", false},
		{"http://198.51.100.5:2380/", true}, // another port of the host
		{"http://198.51.100.5/", true},
		{"https://[2001:db8::5]:4163/", false},
		{"jeri://[2001:db8::5]:4163/b5d1ab42-2a43-4a2e-bd35-cba5b2e6b5a1", false},
		{"jeri://198.51.100.6:4163/b5d1ab42-2a43-4a2e-bd35-cba5b2e6b5a1", true},
		{"http://ETCD1.example.org.:2379/v3/kv/put", false}, // as given, before any resolution
		{"http://etcd1.example.org:2380/", true},
	} {
		for _, ctx := range []context.Context{t.Context(), admin} {
			err := p.CheckListener(ctx, "push target", tc.url)
			if (err == nil) != tc.ok {
				t.Errorf("%s (administrator %v): %v", tc.url, IsHostLocal(ctx), err)
			}
			if err != nil && (!strings.Contains(err.Error(), "endpoint of this deployment") || strings.Contains(err.Error(), "--allow-outbound")) {
				t.Errorf("%s: %v, want the deployment named and no allowance suggested", tc.url, err)
			}
		}
	}

	// Added later (a member that joined, an endpoint resolved anew):
	// refused at connect time, the name and the redirect's target too.
	c := New(Config{Policy: p, Timeout: 5 * time.Second})
	if err := p.CheckURL(t.Context(), "push target", etcd.URL); err != nil {
		t.Fatalf("before it is known to be etcd: %v", err)
	}
	infra.Store(&[]netip.AddrPort{etcdAP})
	for _, u := range []string{etcd.URL + "/v3/kv/put", "http://localhost:" + strconv.Itoa(int(etcdAP.Port())) + "/"} {
		for _, ctx := range []context.Context{t.Context(), admin} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"key":"a2V5","value":"dg=="}`))
			if _, err := c.Do(req); !errors.Is(err, ErrForbidden) {
				t.Errorf("%s: %v, want forbidden", u, err)
			}
		}
	}
	resp, err := post(c, guest.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := post(c, other.URL, "{}"); err != nil {
		t.Fatalf("another server on the same host: %v", err)
	}
	if etcdHits.Load() != 0 || otherHits.Load() != 1 {
		t.Fatalf("etcd reached %d times, the other server %d (want 0 and 1)", etcdHits.Load(), otherHits.Load())
	}
}

// The check every outbound connection makes, with a deployment of three
// etcd members and five nodes (3 ports each) to look through.
func BenchmarkCheckAddrPortDeployment(b *testing.B) {
	var infra []netip.AddrPort
	for i := range 3 {
		infra = append(infra, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 2379))
	}
	for i := range 5 {
		for _, port := range []uint16{4160, 4162, 4163} {
			infra = append(infra, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i)}), port))
		}
	}
	p := NewPolicy(PolicyConfig{Deployment: func() []netip.AddrPort { return infra }})
	to := netip.MustParseAddrPort("198.51.100.77:8080")
	b.ReportAllocs()
	for b.Loop() {
		if err := p.CheckAddrPort(to); err != nil {
			b.Fatal(err)
		}
	}
}

//go:build !jinid_omit_etcd

package cluster

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

// A request a node forwards to the holder's API: it is answered with the
// caller and the base the node gave, the answer says the store's
// revision, which the node is told before it passes the answer on;
// forged headers of the caller's own never get through; a node that
// does not hold the store says so.
func TestHolderAPI(t *testing.T) {
	a, _ := NewIdentity("node-a")
	b, _ := NewIdentity("node-b")
	members := []store.Member{{Node: "node-a", CertSHA256: a.SHA256()}, {Node: "node-b", CertSHA256: b.SHA256()}}
	pa := NewPeers(a, nil, func() []store.Member { return members }, nil, nil)
	pb := NewPeers(b, nil, func() []store.Member { return members }, nil, nil)
	defer pa.Close()

	var got struct{ caller, owner, base, principal string }
	var api http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := access.PrincipalOf(r.Context())
		got.caller, got.owner, got.base, got.principal = p.Name, p.Owner(), httpjson.BaseOf(r).URL, r.Header.Get(principalHeader)
		w.WriteHeader(http.StatusCreated)
	})
	holding := true
	mgr := NewManager(Config{Node: nil, Peers: pb})
	srv := httptest.NewUnstartedServer(mgr.PeerHandler(HolderAPI(func() http.Handler {
		if holding {
			return api
		}
		return nil
	}, func() int64 { return 42 })))
	srv.TLS = pb.ServerTLS()
	srv.StartTLS()
	defer srv.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	nodeB := store.Member{Node: "node-b", Addrs: []netip.Addr{ap.Addr()}, ClusterPort: int(ap.Port()), CertSHA256: b.SHA256()}

	// The caller as node-a's guard authenticated it.
	g := access.NewGuard(access.GuardConfig{Anonymous: access.ScopeClient})
	var seen int64
	rec := httptest.NewRecorder()
	in := httptest.NewRequest("POST", "/v1/lookup/services", nil)
	in.Header.Set(principalHeader, "forged")
	in.Header.Set("Content-Type", "application/json")
	in = in.WithContext(httpjson.WithBase(in.Context(), httpjson.Base{URL: "http://198.18.1.9:4162", Host: "198.18.1.9"}))
	g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := pa.ForwardAPI(w, r, []byte(`{}`), nodeB, func(rev int64) { seen = rev }); err != nil {
			t.Fatal(err)
		}
	})).ServeHTTP(rec, in)
	if rec.Code != http.StatusCreated || seen != 42 {
		t.Errorf("answer %d, revision told %d; want 201, 42", rec.Code, seen)
	}
	if got.caller != "anonymous" || got.owner == "" || got.base != "http://198.18.1.9:4162" || got.principal != "" {
		t.Errorf("the holder's API saw caller %q owner %q base %q, principal header %q", got.caller, got.owner, got.base, got.principal)
	}

	holding = false
	rec = httptest.NewRecorder()
	if err := pa.ForwardAPI(rec, httptest.NewRequest("GET", "/v1/lookup", nil), nil, nodeB, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("from a node not holding the store: %d %v", rec.Code, rec.Header())
	}
}

func TestParseBase(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"http://198.18.1.9:4162 198.18.1.9", true},
		{"https://[2001:db8::1]:4162 [2001:db8::1]", true},
		{" 198.18.1.9", true}, // no URL the client could reach
		{"ftp://x y", false},
		{"http://x/path x", false},
		{"http://x", false},
		{"http://x a b", false},
		{"", false},
	} {
		if _, err := parseBase(tc.in); (err == nil) != tc.ok {
			t.Errorf("parseBase(%q): %v", tc.in, err)
		}
	}
}

//go:build !jinid_omit_etcd

package shards

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/store"
)

// Two nodes speak over TLS pinned to the hashes of their member
// records: a request goes with its shard and its caller; a host whose
// certificate no member names is refused at the handshake; a node that
// cannot be reached is told apart from one that failed to answer.
func TestPeers(t *testing.T) {
	a, err := NewIdentity("node-a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewIdentity("node-b")
	stranger, _ := NewIdentity("stranger")
	members := []store.Member{{Node: "node-a", CertSHA256: a.SHA256()}, {Node: "node-b", CertSHA256: b.SHA256()}}
	pa := NewPeers(a, func() []store.Member { return members }, nil, nil)
	pb := NewPeers(b, func() []store.Member { return members }, nil, nil)
	defer pa.Close()

	var got struct{ shard, caller, body string }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := access.WithForwarded(r.Context(), r.Header.Get(principalHeader))
		if err != nil {
			t.Error(err)
		}
		body, _ := io.ReadAll(r.Body)
		got.shard, got.caller, got.body = r.Header.Get(shardHeader), access.PrincipalOf(ctx).Name, string(body)
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte("answer"))
	}))
	srv.TLS = pb.ServerTLS()
	srv.StartTLS()
	defer srv.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	nodeB := store.Member{Node: "node-b", Addrs: []netip.Addr{ap.Addr()}, ClusterPort: int(ap.Port()), CertSHA256: b.SHA256()}

	r := httptest.NewRequest("POST", "/v1/renewal/sets/x/leases", nil)
	rec := httptest.NewRecorder()
	if err := pa.Forward(rec, r, []byte(`{"x":1}`), nodeB, 7); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusTeapot || rec.Body.String() != "answer" || rec.Header().Get("Retry-After") != "7" {
		t.Errorf("answer passed on: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	if got.shard != "7" || got.caller != "local" || got.body != `{"x":1}` {
		t.Errorf("node-b got shard %q, caller %q, body %q", got.shard, got.caller, got.body)
	}

	// A host that is no member: refused at the handshake.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true,
		Certificates: []tls.Certificate{stranger.cert}}}}
	if resp, err := c.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Error("a stranger's request answered")
	}
	// node-b's record naming another certificate: node-a does not send.
	forged := nodeB
	forged.CertSHA256 = stranger.SHA256()
	if err := pa.Forward(httptest.NewRecorder(), r, nil, forged, 7); err != errUnreachable {
		t.Errorf("to a node whose certificate is not its record's: %v", err)
	}
	// Nothing listening: unreachable, for the caller to look again.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	gone := store.Member{Node: "node-c", Addrs: []netip.Addr{closed.Addr()}, ClusterPort: int(closed.Port()), CertSHA256: b.SHA256()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := pa.Forward(httptest.NewRecorder(), r.WithContext(ctx), nil, gone, 7); err != errUnreachable {
		t.Errorf("to a node not listening: %v", err)
	}
}

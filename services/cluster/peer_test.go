//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/rig/testenv"
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
	pa := NewPeers(a, nil, func() []store.Member { return members }, nil, nil)
	pb := NewPeers(b, nil, func() []store.Member { return members }, nil, nil)
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

// The cluster port gives a connection to members' addresses only: a
// flood of silent connections from a stranger's address is closed as
// it is accepted, holds nothing, and keeps no member's request out; a
// member's own silent connection is closed once the handshake's second
// is up; a request the port closed on accept was not sent, and says so.
func TestClusterPortAdmitsMembersOnly(t *testing.T) {
	a, _ := NewIdentity("node-a")
	b, _ := NewIdentity("node-b")
	memberAddr, strangerAddr := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.9")
	var members atomic.Pointer[[]store.Member]
	set := func(m ...store.Member) { members.Store(&m) }
	read := func() []store.Member { return *members.Load() }
	pa := NewPeers(a, []netip.Addr{memberAddr}, read, nil, nil)
	pb := NewPeers(b, []netip.Addr{memberAddr}, read, nil, nil)
	defer pa.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http1.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "answer") }),
		HandshakeTimeout: HandshakeTimeout, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(pb.Listen(ln)) }()
	defer func() { srv.Close(); <-done }()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	nodeA := store.Member{Node: "node-a", Addrs: []netip.Addr{memberAddr}, CertSHA256: a.SHA256()}
	nodeB := store.Member{Node: "node-b", Addrs: []netip.Addr{ap.Addr()}, ClusterPort: int(ap.Port()), CertSHA256: b.SHA256()}
	set(nodeA, nodeB)

	// 4 x 64 silent connections from a stranger's address, open while
	// node-a's requests go through.
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: strangerAddr.AsSlice()}}
	for range 4 * 64 {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			continue // reset by the port as it connects: closed at once too
		}
		flood = append(flood, c)
	}
	for i := range 20 {
		rec := httptest.NewRecorder()
		if err := pa.Forward(rec, httptest.NewRequest("GET", "/x", nil), nil, nodeB, i%Count); err != nil || rec.Body.String() != "answer" {
			t.Fatalf("a member's request %d during the flood: %v, %d %q", i, err, rec.Code, rec.Body.String())
		}
	}
	testenv.Until(t, "every stranger's connection closed on accept", func() bool { return pb.Strangers() >= int64(len(flood)) })
	for _, c := range flood {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a stranger's connection read from")
		}
	}

	// A member's silent connection: closed when its handshake's time is
	// up (the read ends well before the test's bound of 30 s).
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent member connection: %v, want it closed by the server", err)
	}

	// node-a no longer a member: its request is closed on accept, not
	// sent, and may go elsewhere.
	set(nodeB)
	pa.Close()
	if err := pa.Forward(httptest.NewRecorder(), httptest.NewRequest("POST", "/x", nil), []byte("{}"), nodeB, 1); !errors.Is(err, errUnreachable) {
		t.Fatalf("a request closed on accept: %v, want unreachable (not sent)", err)
	}
}

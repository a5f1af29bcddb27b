//go:build !jinid_omit_etcd

package cluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/jinid/jinid/internal/connlimit"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

// The headers a node puts on a request it forwards to another: the
// shard it is for, and its caller as this node authenticated it
// (access.Principal.Forwarded).
const (
	shardHeader     = "Jinid-Shard"
	principalHeader = "Jinid-Principal"
	// baseHeader, on a request for the holder's API or a shard, is
	// where the client reached the cluster (httpjson.Base: its URL and
	// host, a space between): the URLs in the answer name it.
	baseHeader = "Jinid-Base"
	// revisionHeader, on the holder's answer, is the revision of its
	// store in etcd once it answered: a node with a copy of the store
	// that reached it holds what the request changed.
	revisionHeader = "Jinid-Revision"
)

// maxPeerClients is how many nodes' clients are kept before those of
// nodes gone are dropped.
const maxPeerClients = 32

// maxAnswer bounds what a node reads back from another: the largest
// answer of a shard's routes (a set's 10,000 leases) is a few MB.
const maxAnswer = 64 << 20

// Identity is how a node proves itself to the others: a key and a
// self-signed certificate made at start, for this process only, whose
// SHA-256 the node publishes in its member record in etcd. The nodes
// trust etcd already (it is their store); pinning the hash it holds
// needs no certificate authority, and a LAN guest cannot pose as a node
// or read what the nodes tell one another (tokens are checked where the
// request came in; the callers' identities and bodies go on here).
//
// With a site CA (NewSiteIdentity) a node proves itself with a
// certificate the CA signed: the others admit only such certificates,
// so that writing a member record in etcd (a hash of one's own) makes
// nobody a node; the record only says where a node is.
type Identity struct {
	cert tls.Certificate
	sum  string
	ca   *x509.CertPool // the site's, or nil: pinned hashes alone
}

// NewSiteIdentity loads a node's certificate and key, which the site's
// CA (caFile) signed. It checks the certificate against the CA now: a
// node that could not be admitted by the others does not start.
func NewSiteIdentity(certFile, keyFile, caFile string) (*Identity, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("this node's certificate for the other nodes (--cluster-cert %s, --cluster-key %s): %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("the site's CA (--cluster-ca): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the site's CA (--cluster-ca %s): no PEM certificate in it", caFile)
	}
	id := &Identity{cert: cert, sum: digest(cert.Certificate[0]), ca: pool}
	if err := id.signed(cert.Certificate); err != nil {
		return nil, fmt.Errorf("this node's certificate (--cluster-cert %s) is not one the site's CA (--cluster-ca %s) signed for a node: %w", certFile, caFile, err)
	}
	return id, nil
}

// errNotSigned is the handshake's error with a peer whose certificate
// the site's CA did not sign.
var errNotSigned = errors.New("not a certificate the site's CA signed")

// signed checks that raw (a peer's chain, leaf first) is the site CA's:
// for a node (client and server use), whatever names it holds (nodes
// are reached at the addresses of their records).
func (id *Identity) signed(raw [][]byte) error {
	if len(raw) == 0 {
		return errNotSigned
	}
	leaf, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return fmt.Errorf("%w: %w", errNotSigned, err)
	}
	inter := x509.NewCertPool()
	for _, r := range raw[1:] {
		if c, err := x509.ParseCertificate(r); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: id.ca, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("%w: %w", errNotSigned, err)
	}
	return nil
}

// SiteCA says the node admits only certificates its site's CA signed.
func (id *Identity) SiteCA() bool { return id.ca != nil }

// NewIdentity makes a node's key and certificate.
func NewIdentity(node string) (*Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("a key for the other nodes: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "jinid node " + node},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(20, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("a certificate for the other nodes: %w", err)
	}
	return &Identity{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, sum: digest(der)}, nil
}

func digest(der []byte) string {
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

// SHA256 is the certificate's hash, as the member record carries it.
func (id *Identity) SHA256() string { return id.sum }

// errNotMember is the handshake's error with a peer whose certificate
// no member's record names.
var errNotMember = errors.New("not the certificate of a node of this cluster")

// pinned checks that the peer's certificate is one of those want says.
func pinned(want func(sum string) bool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 || !want(digest(raw[0])) {
			return errNotMember
		}
		return nil
	}
}

// Peers reaches the other nodes of the cluster, and is reached by them.
type Peers struct {
	id      *Identity
	self    []netip.Addr
	members func() []store.Member
	refresh func()
	log     *slog.Logger
	logged  rate.Sometimes

	// Admission on the cluster port (Listen): strangers closed on
	// accept, counted; a read of the members asked when one knocks.
	strangers  atomic.Int64
	rereading  atomic.Bool
	strangerAt rate.Sometimes
	reads      sync.WaitGroup // the reads strangers asked for; Close waits

	mu      sync.Mutex
	clients map[string]*http.Client // by certificate hash
}

// NewPeers returns the peers of a node proving itself with id, whose
// member record names the addresses self (its connections to the others
// come from one of them: they admit members' addresses only), the
// members' records read with members, and read again now with refresh
// (nil: never) when a node that just joined is not among them yet.
func NewPeers(id *Identity, self []netip.Addr, members func() []store.Member, refresh func(), log *slog.Logger) *Peers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if refresh == nil {
		refresh = func() {}
	}
	return &Peers{id: id, self: self, members: members, refresh: refresh, log: log.With("component", "shards"), clients: map[string]*http.Client{},
		logged: rate.Sometimes{Interval: 10 * time.Second}, strangerAt: rate.Sometimes{Interval: time.Minute}}
}

// The cluster port's bounds. Only members' addresses get a connection
// at all, so a LAN host that is no member holds none of them.
const (
	// HandshakeTimeout bounds a TLS handshake on the cluster port.
	HandshakeTimeout = time.Second
	// maxConns and maxPerMember bound the connections held.
	maxConns     = 256
	maxPerMember = 64
)

// Listen serves the cluster port on ln: a connection from an address no
// live member's record names is closed as it is accepted, before any
// TLS (and the members read again, in the background, for a node that
// just joined); the members' own are capped, per member and in all; TLS
// (ServerTLS) then admits the members' certificates only. A server on
// it bounds the handshake (HandshakeTimeout).
func (p *Peers) Listen(ln net.Listener) net.Listener {
	admitted := &memberOnly{Listener: ln, p: p}
	return tls.NewListener(connlimit.Listener(admitted, connlimit.Config{Max: maxConns, PerSource: maxPerMember}), p.ServerTLS())
}

// Strangers counts the connections the cluster port closed on accept.
func (p *Peers) Strangers() int64 { return p.strangers.Load() }

// isMember says a is an address a live member's record names.
func (p *Peers) isMember(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	return slices.ContainsFunc(p.members(), func(m store.Member) bool { return slices.Contains(m.Addrs, a) })
}

// stranger notes a connection closed on accept, and has the members
// read again (one read at a time, rate-limited by refresh): a node that
// joined since is known at its next try.
func (p *Peers) stranger(from net.Addr) {
	p.strangers.Add(1)
	p.strangerAt.Do(func() {
		p.log.Warn("a connection to the cluster port from an address no member's record names was closed (counted; logged once a minute)",
			"from", from.String())
	})
	if p.rereading.CompareAndSwap(false, true) {
		p.reads.Go(func() {
			defer p.rereading.Store(false)
			p.refresh()
		})
	}
}

// memberOnly is a listener that closes, as it accepts them, the
// connections whose source is no member's.
type memberOnly struct {
	net.Listener
	p *Peers
}

func (l *memberOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err == nil && l.p.isMember(ap.Addr()) {
			return c, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset: the caller knows at once nothing was read
		}
		c.Close()
		l.p.stranger(c.RemoteAddr())
	}
}

// ServerTLS is the TLS of the node's cluster listener: TLS 1.3, and a
// client certificate that the site's CA signed, or without one, that a
// member's record names.
func (p *Peers) ServerTLS() *tls.Config {
	if p.id.ca != nil {
		return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.id.cert},
			ClientAuth:            tls.RequireAnyClientCert,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error { return p.id.signed(raw) }}
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.id.cert},
		ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: pinned(func(sum string) bool {
			known := func() bool {
				return slices.ContainsFunc(p.members(), func(m store.Member) bool { return m.CertSHA256 == sum })
			}
			if known() {
				return true
			}
			// A node that joined since the members were last read (a
			// second ago at most); the reading is rate-limited, so a
			// stranger's handshakes cost etcd little.
			p.refresh()
			return known()
		})}
}

// client is the HTTP client for the node whose certificate is sum.
func (p *Peers) client(sum string) *http.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[sum]; ok {
		return c
	}
	// A node started again has a new certificate: the clients of those
	// no member has any more go, before they pile up.
	if len(p.clients) >= maxPeerClients {
		for old, c := range p.clients {
			if !slices.ContainsFunc(p.members(), func(m store.Member) bool { return m.CertSHA256 == old }) {
				c.CloseIdleConnections()
				delete(p.clients, old)
			}
		}
	}
	// The server's certificate is checked against the hash its member
	// record holds, not against a certificate authority (Identity):
	// InsecureSkipVerify only turns the latter off.
	// With a site CA, the certificate must be the CA's too.
	pin := pinned(func(s string) bool { return s == sum })
	verify := pin
	if p.id.ca != nil {
		verify = func(raw [][]byte, chains [][]*x509.Certificate) error {
			if err := p.id.signed(raw); err != nil {
				return err
			}
			return pin(raw, chains)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.id.cert},
		InsecureSkipVerify: true, VerifyPeerCertificate: verify}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg,
		DialContext: p.dial,
		// No bound on the answer's wait but the caller's: a commit
		// waits for its participants' votes, a mailbox's next for
		// an event (the node's own handlers bound them).
		TLSHandshakeTimeout: 5 * time.Second,
		IdleConnTimeout:     30 * time.Second, MaxIdleConnsPerHost: 16, ForceAttemptHTTP2: false},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.clients[sum] = c
	return c
}

// dial connects to another node. The others admit members' addresses
// only: a record naming one address of the target's family (an API
// bound to one) is the connection's source; one naming every address
// of the host (an API on all of them) has the route's pick among them.
func (p *Peers) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if to, err := netip.ParseAddrPort(addr); err == nil {
		var same []netip.Addr
		for _, a := range p.self {
			if a.Is4() == to.Addr().Unmap().Is4() {
				same = append(same, a)
			}
		}
		if len(same) == 1 {
			d.LocalAddr = &net.TCPAddr{IP: same[0].AsSlice()}
		}
	}
	return d.DialContext(ctx, network, addr)
}

// Close ends the connections kept to the other nodes, and waits for a
// read of the members under way.
func (p *Peers) Close() {
	p.mu.Lock()
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
	p.mu.Unlock()
	p.reads.Wait()
}

// passed are the headers of a request that another node's services
// read (the guard, which reads the others, ran here).
var passed = []string{"Content-Type", event.HopsHeader}

// copied are the headers of another node's answer passed on to the
// caller.
var copied = []string{"Content-Type", "Retry-After", "Cache-Control", "WWW-Authenticate", "Location"}

// errUnreachable is Forward's error when no address of the node
// answered: nothing was written, and the request may go elsewhere.
var errUnreachable = errors.New("the node does not answer")

// Forward has node m answer r for shard k, whose body (read already,
// bounded by the API's limit) is body, and passes its answer on. A node
// that cannot be reached is errUnreachable, nothing written (the caller
// may look at the members again); its last error is logged, now and
// then.
func (p *Peers) Forward(w http.ResponseWriter, r *http.Request, body []byte, m store.Member, k int) error {
	// The URLs in the answer (listeners, lease grantors) name where the
	// client reached the cluster, never the node's cluster port.
	b := httpjson.BaseOf(r)
	return p.forward(w, r, body, m, func(h http.Header) {
		h.Set(shardHeader, strconv.Itoa(k))
		h.Set(baseHeader, b.URL+" "+b.Host)
	}, nil,
		fmt.Sprintf("the node serving the shard of this request (%d)", k))
}

// ForwardAPI has node m, which holds the deployment's store, answer r
// as its API would a client of this node's (HolderAPI), and passes its
// answer on once seen has been told the revision of the holder's store
// it reflects. Errors are Forward's.
func (p *Peers) ForwardAPI(w http.ResponseWriter, r *http.Request, body []byte, m store.Member, seen func(rev int64)) error {
	b := httpjson.BaseOf(r)
	return p.forward(w, r, body, m, func(h http.Header) { h.Set(baseHeader, b.URL+" "+b.Host) }, func(resp *http.Response) {
		if rev, err := strconv.ParseInt(resp.Header.Get(revisionHeader), 10, 64); err == nil && rev > 0 {
			seen(rev)
		}
	}, "the node holding the store")
}

// forward sends r to node m with the headers set puts, and passes the
// answer on, once answered (if set) has seen it; what names the node
// in the answer when it may or may not have acted.
func (p *Peers) forward(w http.ResponseWriter, r *http.Request, body []byte, m store.Member, set func(http.Header),
	answered func(*http.Response), what string) error {
	if m.ClusterPort == 0 || m.CertSHA256 == "" || len(m.Addrs) == 0 {
		return errUnreachable
	}
	// A long poll forwarded waits at the other node: this one beginning
	// to stop ends it as it ends its own (it held the stop for its
	// server's whole grace, 5 s).
	ctx, cancel, stopped := httpjson.UntilStopping(r.Context())
	defer cancel()
	r = r.WithContext(ctx)
	var resp *http.Response
	var err error
	var connected bool
	for _, a := range m.Addrs {
		if resp, connected, err = p.send(r, body, netip.AddrPortFrom(a, uint16(m.ClusterPort)), m.CertSHA256, set); err == nil || connected && !unsent(err) {
			break
		}
	}
	if err != nil && !connected {
		// No connection with a member was had: closed on accept,
		// reset, refused, no TLS. Nothing was sent.
		err = fmt.Errorf("%w: %w", errNotSent, err)
	}
	if err != nil && stopped() {
		httpjson.WriteError(w, httpjson.ErrStopping())
		return nil
	}
	if err != nil {
		p.logged.Do(func() { p.log.Warn("forwarding to another node", "node", m.Node, "err", err) })
		if unsent(err) {
			return errUnreachable
		}
		// Sent, perhaps acted on: not sent again. The client hears
		// the outcome is unknown, as from a node that died answering.
		w.Header().Set("Retry-After", "1")
		httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1, "%s was sent this request and did not answer; it may or may not have been done", what))
		return nil
	}
	defer resp.Body.Close()
	if answered != nil {
		answered(resp)
	}
	if resp.StatusCode == http.StatusServiceUnavailable && stoppingAnswer(resp) {
		// The node ended a wait because it is stopping: this node is
		// not, and another node takes the shard over. Passed on, the
		// client would hear that the daemon it asked had stopped.
		w.Header().Set("Retry-After", "1")
		httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1, "%s is stopping: another node takes it over; try again", what))
		return nil
	}
	for _, h := range copied {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, maxAnswer))
	return nil
}

// stoppingAnswer says whether a 503 answer is the Stopping code, read
// from its body (an error body is small; one larger is not that).
func stoppingAnswer(resp *http.Response) bool {
	const maxErrorBody = 4 << 10
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), resp.Body))
	if err != nil || len(b) > maxErrorBody {
		return false
	}
	var e apitypes.ErrorBody
	return json.Unmarshal(b, &e) == nil && e.Error.Code == apitypes.Stopping
}

// errNotSent marks a request that never had a connection to the node:
// nothing of it was sent.
var errNotSent = errors.New("not sent")

// unsent says err stopped a request before it could reach the node: no
// connection (refused, unreachable, timed out dialing), no TLS with a
// member (crypto/tls returns the check's own error), or the node refused
// the handshake (an alert from it: it took this one for no member, and
// read nothing of the request). Such a request may go to another node.
func unsent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "remote error") {
		return true
	}
	return errors.Is(err, errNotMember) || errors.Is(err, errNotSigned) || errors.Is(err, errNotSent)
}

// send makes r's request of the node at ap; connected says a
// connection with the node was had (TLS done) for it: only then may any
// of it have been sent.
func (p *Peers) send(r *http.Request, body []byte, ap netip.AddrPort, sum string, set func(http.Header)) (resp *http.Response, connected bool, err error) {
	u := "https://" + ap.String() + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }}
	out, err := http.NewRequestWithContext(httptrace.WithClientTrace(r.Context(), trace), r.Method, u, rd)
	if err != nil {
		return nil, false, err
	}
	for _, h := range passed {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	set(out.Header)
	out.Header.Set(principalHeader, access.PrincipalOf(r.Context()).Forwarded())
	resp, err = p.client(sum).Do(out)
	return resp, connected, err
}

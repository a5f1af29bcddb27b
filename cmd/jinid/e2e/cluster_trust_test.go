package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/floodtest"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
)

// The cluster's trust boundary, attacked as a client with a token, a
// guest on the LAN and whoever can write etcd would (docs/security.md,
// "Cluster"). The site is the weakest the daemon runs on: etcd over plain
// http with no authentication (--etcd-insecure), so that what keeps the
// attacks out is jinid's own defences, not etcd's. The nodes prove
// themselves by certificates the site's CA signed (--cluster-ca).
func TestClusterTrustBoundary(t *testing.T) {
	t.Parallel()
	s := newInsecureSite(t)
	site := jinidtest.NewCA(t, "site")
	withCA := func(name string) []string {
		cert, key := site.Issue(t, name)
		return []string{"--cluster-ca", site.File, "--cluster-cert", cert, "--cluster-key", key}
	}
	a := s.node(t, "node-a", withCA("node-a")...)
	a.serving(t)
	b := s.node(t, "node-b", withCA("node-b")...)
	c := s.node(t, "node-c", withCA("node-c")...)
	b.waiting(t)
	c.waiting(t)
	s.allShardsHeld(t)
	etcd := newEtcdGateway(t, s)
	admin := jinidtest.LabClient(t, s.client, a.api, client.WithToken(a.AdminToken(t)))

	t.Run("push targets and listeners never reach the deployment", func(t *testing.T) {
		ca := jinidtest.LabClient(t, s.client, b.api)
		ctx := t.Context()
		// The deployment's endpoints as a client could name them: etcd's
		// JSON gateway, every node's cluster, API and discovery ports.
		var targets []string
		for _, ip := range s.etcdIPs {
			targets = append(targets, "http://"+netip.AddrPortFrom(ip, 2379).String()+"/v3/kv/put")
		}
		for _, n := range []*clusterNode{a, b, c} {
			for _, port := range []uint16{4163, 4162, 4160} {
				targets = append(targets, "http://"+netip.AddrPortFrom(n.link.IPv4, port).String()+"/x")
			}
		}
		reg, err := ca.MailboxRegister(ctx, 600_000, false)
		if err != nil {
			t.Fatalf("%v\nA:\n%s\nB:\n%s", err, a.Log(), b.Log())
		}
		set, err := ca.RenewalCreate(ctx, 600_000)
		if err != nil {
			t.Fatal(err)
		}
		isRefused := func(err error) bool {
			var ae *client.Error
			return errors.As(err, &ae) && ae.Err.Code == apitypes.InvalidArgument && regexp.MustCompile(`endpoint of this deployment`).MatchString(ae.Err.Message)
		}
		refused := func(what string, err error) {
			t.Helper()
			if !isRefused(err) {
				t.Errorf("%s: %v, want it refused as an endpoint of the deployment", what, err)
			}
		}
		// Each node reads the members every second: one that joined a
		// moment ago is known to the others within it (and a connection
		// to it is refused at connect time meanwhile, whatever was
		// accepted). The last to join known to the node serving this
		// client's mailbox, the refusals are checked.
		last := "http://" + netip.AddrPortFrom(c.link.IPv4, 4163).String() + "/x"
		testenv.Until(t, "node-c known to the node serving the client's mailbox", func() bool { return isRefused(ca.MailboxEnable(ctx, reg.ID, last)) })
		for _, u := range targets {
			refused("a mailbox push target at "+u, ca.MailboxEnable(ctx, reg.ID, u))
			_, err := ca.Notify(ctx, client.NotifyRequest{Transitions: []string{"NOMATCH_MATCH"}, Listener: u, Duration: 60_000})
			refused("a notify listener at "+u, err)
			_, err = ca.LDSRegister(ctx, client.LDSRequest{Groups: []string{"lab"}, Listener: u, Duration: 60_000})
			refused("a discovery listener at "+u, err)
			refused("a lease grantor at "+u, ca.RenewFor(ctx, set.ID, apitypes.Lease{Grantor: u, ID: "l1", Expiration: time.Now().Add(time.Hour).UnixMilli()}, 600_000, nil))
		}

		// A guest's server that answers a push with a redirect to etcd's
		// JSON gateway: the push reaches the guest, never etcd.
		var pushed atomic.Int64
		guest := jinidtest.ServeIn(t, s.client, s.clientIP.String(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pushed.Add(1)
			http.Redirect(w, r, "http://"+netip.AddrPortFrom(s.etcdIPs[0], 2379).String()+"/v3/kv/put", http.StatusTemporaryRedirect)
		}))
		if err := ca.MailboxEnable(ctx, reg.ID, guest+"/push"); err != nil {
			t.Fatal(err)
		}
		forged := "/jinid/tokens/0000000000000001"
		event := fmt.Sprintf(`{"type":"RemoteEvent","source":{"service":"x","id":"feed"},"eventID":1,"seqNum":1,"key":%q,"value":%q}`,
			b64(forged), b64(`{"id":"0000000000000001","scope":"admin"}`))
		postEvent(t, s, reg.Listener.URL, event)
		testenv.Until(t, "the event pushed to the guest", func() bool { return pushed.Load() > 0 })
		if v, ok := etcd.get(t, forged); ok {
			t.Fatalf("etcd holds %s = %q, written through a redirect", forged, v)
		}
	})

	t.Run("the cluster port admits members only", func(t *testing.T) {
		// 4 hosts x 64 silent connections to every node's cluster
		// port, for 30 s, each made again when closed; cross-node
		// requests meanwhile are all answered.
		ca := jinidtest.LabClient(t, s.client, b.api)
		set, err := ca.RenewalCreate(t.Context(), 600_000)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithTimeout(t.Context(), 31*time.Second)
		defer stop()
		var st floodtest.SilentStats
		var floods []*sync.WaitGroup
		for i := range 4 {
			h := s.lab.Host(fmt.Sprintf("guest%d", i))
			h.Attach(s.lan)
			for _, n := range []*clusterNode{a, b, c} {
				f := floodtest.Connections{Addr: netip.AddrPortFrom(n.link.IPv4, 4163).String(), N: 64, PerSecond: 1000, Reopen: 100 * time.Millisecond}
				floods = append(floods, f.Run(ctx, h.Namespace(), &st))
			}
		}
		ended := time.After(30 * time.Second)
		answered, sent := 0, 0
	requests:
		for i := 0; ; i++ {
			select {
			case <-ended:
				break requests
			default:
			}
			// A write through a standby (to the holder), and a read of
			// a set another node may hold.
			_, err := ca.Register(t.Context(), apitypes.Item{Types: []string{"org.example.Flooded"}}, 60_000)
			sent++
			if err == nil {
				answered++
			} else {
				t.Errorf("a registration through node-b during the flood: %v", err)
			}
			_, err = ca.RenewalLeases(t.Context(), set.ID)
			sent++
			if err == nil {
				answered++
			} else {
				t.Errorf("a renewal set's leases through node-b during the flood: %v", err)
			}
			time.Sleep(500 * time.Millisecond) // time is the subject: requests at a client's pace through the 30 s flood
		}
		stop()
		for _, wg := range floods {
			wg.Wait()
		}
		t.Logf("%d silent connections made to the cluster ports in 30 s (%d closed by the nodes, the longest held %d ms); %d of %d cross-node requests answered",
			st.Opened.Load(), st.Closed.Load(), st.MaxHeldMs.Load(), answered, sent)
		if sent < 15 || answered != sent {
			t.Fatalf("%d of %d cross-node requests answered during the flood", answered, sent)
		}
	})

	t.Run("a member record written in etcd makes no node", func(t *testing.T) {
		// A record under a live lease, with the hash of the attacker's
		// own certificate and its own address: the nodes, which admit
		// only certificates the site's CA signed, refuse its TLS.
		certFile, keyFile := jinidtest.NewCA(t, "evil").Issue(t, "evil")
		own, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(own.Certificate[0])
		lease := etcd.grant(t, 60)
		rec := fmt.Sprintf(`{"node":"evil","addrs":[%q],"clusterPort":4163,"certSHA256":%q}`, s.clientIP, hex.EncodeToString(sum[:]))
		etcd.put(t, "/jinid/.members/evil", rec, lease)
		defer etcd.revoke(t, lease)
		// try makes a request of node n as the forged member, and says
		// how it ended: "" answered, else the error.
		try := func(n *clusterNode) string {
			conn, err := jinidtest.DialFrom(s.client)(t.Context(), "tcp", netip.AddrPortFrom(n.link.IPv4, 4163).String())
			if err != nil {
				return err.Error()
			}
			tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{own}, MinVersion: tls.VersionTLS13})
			defer tc.Close()
			tc.SetDeadline(time.Now().Add(10 * time.Second))
			if err := tc.Handshake(); err != nil {
				return err.Error()
			}
			// TLS 1.3: the server's refusal of the client's certificate
			// comes with the first read.
			fmt.Fprintf(tc, "GET /v1/tokens HTTP/1.1\r\nHost: x\r\nJinid-Principal: admin\r\n\r\n")
			if _, err := tc.Read(make([]byte, 1)); err != nil {
				return err.Error()
			}
			return ""
		}
		for _, n := range []*clusterNode{a, b, c} {
			// Until the node has read the record (a connection from its
			// address is then no longer closed on accept), and the
			// certificate is what it refuses: an alert of TLS.
			var last string
			testenv.Until(t, n.name+" refusing the forged member's certificate", func() bool {
				last = try(n)
				if last == "" {
					t.Fatalf("%s answered a request of a member whose certificate the site's CA did not sign", n.name)
				}
				return strings.Contains(last, "remote error: tls")
			})
		}
	})

	t.Run("tokens follow etcd on every node, the holder too", func(t *testing.T) {
		tok, err := admin.CreateToken(t.Context(), "ops", "admin", 0)
		if err != nil {
			t.Fatal(err)
		}
		clients := map[string]*client.Client{}
		for _, n := range []*clusterNode{a, b, c} {
			clients[n.name] = jinidtest.LabClient(t, s.client, n.api, client.WithToken(tok.Secret))
		}
		for name, cl := range clients {
			testenv.Until(t, "the token working at "+name, func() bool { _, err := cl.Tokens(t.Context()); return err == nil })
		}
		// Revoked in etcd itself (a restore, another writer): refused by
		// every node within the staleness bound.
		etcd.del(t, "/jinid/tokens/"+tok.ID)
		start := time.Now()
		for name, cl := range clients {
			testenv.Until(t, "the token refused at "+name, func() bool {
				_, err := cl.Tokens(t.Context())
				var ae *client.Error
				return errors.As(err, &ae) && ae.Status == http.StatusUnauthorized
			})
		}
		t.Logf("a token deleted in etcd refused by all three nodes %v later", time.Since(start).Round(time.Millisecond))
		for _, n := range []*clusterNode{a, b} {
			list, err := jinidtest.LabClient(t, s.client, n.api, client.WithToken(a.AdminToken(t))).Tokens(t.Context())
			if err != nil || slices.ContainsFunc(list, func(tk client.Token) bool { return tk.ID == tok.ID }) {
				t.Errorf("token list through %s: %v, %v", n.name, list, err)
			}
		}
	})

	t.Run("a member record under no lease is no node", func(t *testing.T) {
		etcd.put(t, "/jinid/.members/ghost", `{"node":"ghost","addrs":["198.18.0.66"],"clusterPort":4163}`, "")
		for _, n := range []*clusterNode{a, b, c} {
			n.WaitLog(t, n.name+" ignoring the record", regexp.MustCompile(`member record under no live etcd lease is ignored.*ghost`))
		}
		// (The shards handed to the forged member of the subtest before
		// come back once its lease is revoked.)
		var st clusterStatus
		var exit int
		testenv.Until(t, "every shard held by a live node", func() bool { st, exit = s.status(t); return exit == 0 && st.ShardsHeld == cluster.Count })
		if slices.ContainsFunc(st.Nodes, func(n statusNode) bool { return n.Node == "ghost" }) {
			t.Fatalf("cluster status with a record under no lease: %+v", st)
		}
		// Named as a shard's holder, under no lease: status exits 1,
		// naming the shard.
		etcd.put(t, "/jinid/.shardholds/07", "ghost", "")
		out, err := s.client.Command(t.Context(), s.bin, append([]string{"cluster", "status"}, s.clusterFlags()...)...).CombinedOutput()
		if err == nil || !regexp.MustCompile(`07 \("ghost"\)`).Match(out) {
			t.Fatalf("cluster status with a shard held by no live member: %v\n%s", err, out)
		}
		// Named as the store's holder, under no lease: exits 1 naming it.
		etcd.put(t, "/jinid/.holder", "ghost", "")
		out, err = s.client.Command(t.Context(), s.bin, append([]string{"cluster", "status"}, s.clusterFlags()...)...).CombinedOutput()
		if err == nil || !regexp.MustCompile(`held by "ghost", which is no live member`).Match(out) {
			t.Fatalf("cluster status with the store held by no live member: %v\n%s", err, out)
		}
	})
}

// allShardsHeld waits until every shard is held.
func (s *clusterSite) allShardsHeld(t *testing.T) {
	t.Helper()
	testenv.Until(t, "every shard held", func() bool { st, _ := s.status(t); return st.ShardsHeld == cluster.Count })
}

// postEvent sends a remote event to a listener URL from the client host.
func postEvent(t *testing.T, s *clusterSite, url, body string) {
	t.Helper()
	tr := &http.Transport{DialContext: jinidtest.DialFrom(s.client)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: tr}).Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("the event posted to %s: %s", url, resp.Status)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// etcdGateway is etcd's JSON gateway as whoever reaches etcd uses it,
// from the site's client host.
type etcdGateway struct {
	base string
	hc   *http.Client
}

func newEtcdGateway(t *testing.T, s *clusterSite) *etcdGateway {
	tr := &http.Transport{DialContext: jinidtest.DialFrom(s.client)}
	t.Cleanup(tr.CloseIdleConnections)
	return &etcdGateway{base: "http://" + netip.AddrPortFrom(s.etcdIPs[0], 2379).String(), hc: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
}

func (g *etcdGateway) call(t *testing.T, path string, in map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(in)
	resp, err := g.hc.Post(g.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: %s %s", path, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("etcd %s: %s: %v", path, raw, err)
		}
	}
}

// put writes key under lease ("": none).
func (g *etcdGateway) put(t *testing.T, key, value, lease string) {
	t.Helper()
	in := map[string]any{"key": b64(key), "value": b64(value)}
	if lease != "" {
		in["lease"] = lease
	}
	g.call(t, "/v3/kv/put", in, nil)
}

func (g *etcdGateway) get(t *testing.T, key string) (string, bool) {
	t.Helper()
	var out struct{ Kvs []struct{ Value string } }
	g.call(t, "/v3/kv/range", map[string]any{"key": b64(key)}, &out)
	if len(out.Kvs) == 0 {
		return "", false
	}
	v, _ := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	return string(v), true
}

// keys lists the keys under prefix.
func (g *etcdGateway) keys(t *testing.T, prefix string) []string {
	t.Helper()
	end := []byte(prefix)
	end[len(end)-1]++
	var out struct{ Kvs []struct{ Key string } }
	g.call(t, "/v3/kv/range", map[string]any{"key": b64(prefix), "range_end": b64(string(end)), "keys_only": true}, &out)
	var keys []string
	for _, kv := range out.Kvs {
		k, _ := base64.StdEncoding.DecodeString(kv.Key)
		keys = append(keys, string(k))
	}
	return keys
}

func (g *etcdGateway) del(t *testing.T, key string) {
	t.Helper()
	g.call(t, "/v3/kv/deleterange", map[string]any{"key": b64(key)}, nil)
}

// grant makes a lease of ttl seconds and returns its ID.
func (g *etcdGateway) grant(t *testing.T, ttl int) string {
	t.Helper()
	var out struct{ ID string }
	g.call(t, "/v3/lease/grant", map[string]any{"TTL": strconv.Itoa(ttl)}, &out)
	return out.ID
}

func (g *etcdGateway) revoke(t *testing.T, id string) {
	t.Helper()
	g.call(t, "/v3/lease/revoke", map[string]any{"ID": id}, nil)
}

// A daemon refuses etcd on another host over plain http, or TLS without
// a client certificate, unless --etcd-insecure says so: it exits 2 before
// connecting, naming the endpoint and the flag. (In a lab: the endpoint
// is a lab host's, with no etcd.)
func TestDaemonRefusesInsecureEtcd(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	h := lab.Host("node")
	h.Attach(lan)
	other := lab.Host("etcd")
	ip := other.Attach(lan).IPv4
	for _, ep := range []string{"http://" + netip.AddrPortFrom(ip, 2379).String(), "https://" + netip.AddrPortFrom(ip, 2379).String()} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := h.Command(ctx, bin, "daemon", "--no-multicast", "--data-dir", t.TempDir(), "--store", "etcd", "--etcd-endpoints", ep)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), ep) || !strings.Contains(string(out), "--etcd-insecure") {
			t.Errorf("jinid daemon on %s: %v, exit %d:\n%s", ep, err, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// 300 announcements of made-up lookup services from one host of a
// node's segment, then a real lookup service announces: the node shares
// it with the others (its record in etcd, cluster.heard) at once, and
// notes only a few of the made-up ones (8 from one host).
func TestClusterHeardAfterSpoofedBurst(t *testing.T) {
	t.Parallel()
	s := newInsecureSite(t)
	seg := s.lab.LAN()
	a := s.gateway(t, "node-a", seg, "--groups", "lab")
	a.serving(t)
	etcd := newEtcdGateway(t, s)
	spoofer := s.lab.Host("spoofer")
	sl := spoofer.Attach(seg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sent, err := floodtest.Announcements(ctx, spoofer.Namespace(), sl.Name, []string{"lab"}, sl.IPv4.String(), 4160, floodtest.Pace{PerSecond: 1000, Count: 300})
	if err != nil || sent != 300 {
		t.Fatalf("the burst: %d sent, %v", sent, err)
	}
	a.WaitLog(t, "node-a bounding the spoofer", regexp.MustCompile(`a host announces more lookup services than a node shares of one host`))
	burstEnd := time.Now()

	lusHost := s.lab.Host("lus")
	lusHost.Attach(seg)
	lus := jinidtest.LabDaemon(t, s.bin, lusHost, "--groups", "lab", "--announce-interval", "2s")
	lusID := regexp.MustCompile(`jinid started.* lookup=(\S+)`).FindStringSubmatch(lus.Log())[1]
	var last time.Time
	var keys []string
	testenv.Until(t, "the real lookup service shared in etcd", func() bool {
		if time.Since(last) < 100*time.Millisecond {
			return false
		}
		last = time.Now()
		keys = etcd.keys(t, "/jinid/cluster.heard/")
		return slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, "/"+lusID) })
	})
	t.Logf("the real lookup service shared %v after the burst's end (it announces every 2 s)", time.Since(burstEnd).Round(time.Millisecond))
	if len(keys) > 8+1 {
		t.Fatalf("%d lookup services noted after a burst from one host and one real one: %v", len(keys), keys)
	}
}

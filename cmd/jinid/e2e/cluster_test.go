package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/jinid/jinid/announce/dnssd"
	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
)

// clusterSite is a site of docs/cluster.md on one lab LAN: three etcd
// members, each on a host of its own, a client host (where the fake
// grantor, listeners and participants run) and the jinid nodes the test
// adds, each in a host of its own, on the store in etcd.
type clusterSite struct {
	bin       string
	lab       *netlab.Lab
	lan       *netlab.LAN
	etcdIPs   []netip.Addr
	etcd      []*jinidtest.EtcdMember
	endpoints string
	// etcdFlags are the nodes' flags for etcd: its endpoints, and TLS
	// with a client certificate (plain http with --etcd-insecure on an
	// insecure site).
	etcdFlags []string
	client    *netlab.Host
	clientIP  netip.Addr
}

// clusterTTL is the nodes' hold lease in these tests: short, so that
// take-overs are quick (the default is 10 s).
const clusterTTL = 3 * time.Second

// newClusterSite makes the site, etcd authenticating its clients by
// certificate as docs/cluster.md deploys it.
func newClusterSite(t *testing.T, etcdArgs ...string) *clusterSite {
	t.Helper()
	return newSite(t, true, etcdArgs)
}

// newInsecureSite makes the site with etcd over plain http, with no
// authentication, and the nodes told to accept it (--etcd-insecure):
// what the deployment's own defences must hold on their own.
func newInsecureSite(t *testing.T, etcdArgs ...string) *clusterSite {
	t.Helper()
	return newSite(t, false, etcdArgs)
}

func newSite(t *testing.T, withTLS bool, etcdArgs []string) *clusterSite {
	t.Helper()
	s := &clusterSite{bin: jinidtest.Binary(t), lab: netlab.New(t)}
	s.lan = s.lab.LAN()
	var hosts []*netlab.Host
	for i := range 3 {
		h := s.lab.Host(fmt.Sprintf("etcd%d", i))
		ip := h.Attach(s.lan).IPv4
		hosts, s.etcdIPs = append(hosts, h), append(s.etcdIPs, ip)
	}
	if withTLS {
		s.etcd = jinidtest.EtcdClusterOn(t, hosts, s.etcdIPs, etcdArgs...)
	} else {
		s.etcd = jinidtest.EtcdClusterOnInsecure(t, hosts, s.etcdIPs, etcdArgs...)
	}
	var eps []string
	for _, m := range s.etcd {
		eps = append(eps, m.Endpoint)
	}
	s.endpoints = strings.Join(eps, ",")
	s.etcdFlags = jinidtest.EtcdFlags(s.etcd)
	if !withTLS {
		s.etcdFlags = append(s.etcdFlags, "--etcd-insecure")
	}
	s.client = s.lab.Host("client")
	s.clientIP = s.client.Attach(s.lan).IPv4
	return s
}

// clusterFlags are the site's etcd flags a client command takes (not
// --etcd-insecure, the daemon's).
func (s *clusterSite) clusterFlags() []string {
	return slices.DeleteFunc(slices.Clone(s.etcdFlags), func(f string) bool { return f == "--etcd-insecure" })
}

// clusterNode is one jinid of the site.
type clusterNode struct {
	*jinidtest.LabProc
	name string
	h    *netlab.Host
	link *netlab.Link // on the site's LAN
	seg  *netlab.Link // on its segment, for a gateway
	api  string
	args []string // its daemon's
}

// node starts a jinid on the site's store, multicast off; it may wait
// (a standby).
func (s *clusterSite) node(t *testing.T, name string, extra ...string) *clusterNode {
	t.Helper()
	return s.start(t, name, nil, append([]string{"--no-multicast"}, extra...))
}

// gateway starts a jinid on the site's store that is also the gateway
// of segment seg (its second link, multicast on, routing between the
// site's LAN and the segment).
func (s *clusterSite) gateway(t *testing.T, name string, seg *netlab.LAN, extra ...string) *clusterNode {
	t.Helper()
	return s.start(t, name, seg, extra)
}

func (s *clusterSite) start(t *testing.T, name string, seg *netlab.LAN, extra []string) *clusterNode {
	t.Helper()
	h := s.lab.Host(name)
	n := &clusterNode{name: name, h: h, link: h.Attach(s.lan)}
	n.api = "http://" + netip.AddrPortFrom(n.link.IPv4, 4162).String()
	if seg != nil {
		n.seg = h.Attach(seg)
		h.Forward()
	}
	n.args = append(append([]string{"--store", "etcd"}, s.etcdFlags...),
		append([]string{"--etcd-lease-ttl", clusterTTL.String(), "--node", name, "--anonymous", "client"}, extra...)...)
	n.LabProc = jinidtest.LabNode(t, s.bin, h, n.args...)
	return n
}

// restart starts node n's jinid again, as it was started, on its host
// (after it was killed).
func (s *clusterSite) restart(t *testing.T, n *clusterNode) *clusterNode {
	t.Helper()
	again := *n
	again.LabProc = jinidtest.LabNode(t, s.bin, n.h, n.args...)
	return &again
}

// pair starts node-a, which holds the store, then node-b, which waits.
func (s *clusterSite) pair(t *testing.T, extra ...string) (a, b *clusterNode) {
	t.Helper()
	a = s.node(t, "node-a", extra...)
	a.serving(t)
	b = s.node(t, "node-b", extra...)
	b.waiting(t)
	return a, b
}

// serving waits until the node holds the store and serves.
func (n *clusterNode) serving(t *testing.T) {
	t.Helper()
	n.WaitLog(t, n.name+" serving", regexp.MustCompile(`jinid started`))
}

// waiting waits until the node says it waits for another to end.
func (n *clusterNode) waiting(t *testing.T) {
	t.Helper()
	n.WaitLog(t, n.name+" waiting", regexp.MustCompile(`held by another jinid: waiting to take over`))
}

// cutOff has the node lose every packet to the etcd members.
func (s *clusterSite) cutOff(n *clusterNode) {
	for _, ip := range s.etcdIPs {
		n.h.CutOff(n.link, ip)
	}
}

// clusterStatus is jinid cluster status -o json, as the tests read it.
type clusterStatus struct {
	Holder     string       `json:"holder"`
	ShardsHeld int          `json:"shardsHeld"`
	Nodes      []statusNode `json:"nodes"`
	Etcd       []struct {
		Name, State, Leader string
	} `json:"etcd"`
}

// statusNode is a node as jinid cluster status shows it.
type statusNode struct {
	Node, Role string
	Shards     []string
}

// status runs jinid cluster status -o json on the client host.
func (s *clusterSite) status(t *testing.T) (st clusterStatus, exit int) {
	t.Helper()
	cmd := s.client.Command(t.Context(), s.bin, append(append([]string{"cluster", "status"}, s.clusterFlags()...), "-o", "json")...)
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("jinid cluster status printed %q: %v", out, err)
	}
	return st, cmd.ProcessState.ExitCode()
}

// leaseGrantor is a fake grantor of leases: it renews any lease it
// granted for at most max, and logs every renewal: when, from which
// node (by address), and whether the lease had lapsed by then.
type leaseGrantor struct {
	url string
	max time.Duration

	mu     sync.Mutex
	exp    map[string]time.Time
	calls  []renewalCall
	lapsed []string
}

type renewalCall struct {
	at   time.Time
	from netip.Addr
	ids  []string
}

func newLeaseGrantor(t *testing.T, s *clusterSite, max time.Duration) *leaseGrantor {
	g := &leaseGrantor{max: max, exp: map[string]time.Time{}}
	g.url = jinidtest.ServeIn(t, s.client, s.clientIP.String(), http.HandlerFunc(g.renew))
	return g
}

// grant makes a lease of the grantor's, as the client that hands it to
// a renewal set holds it: the i-th of n ends from 0.6 to 1 times the
// maximum from now, so that their renewals are spread out and one is
// due at any moment.
func (g *leaseGrantor) grant(id string, i, n int) apitypes.Lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp := time.Now().Add(g.max * time.Duration(6*n+4*i) / time.Duration(10*n))
	g.exp[id] = exp
	return apitypes.Lease{Grantor: g.url, ID: id, Expiration: exp.UnixMilli(), Remaining: g.max.Milliseconds()}
}

func (g *leaseGrantor) renew(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Leases []apitypes.Renewal `json:"leases"`
	}
	if r.URL.Path != "/v1/leases/renew" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "not a renewal", http.StatusBadRequest)
		return
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	from, _ := netip.ParseAddr(host)
	now := time.Now()
	g.mu.Lock()
	c := renewalCall{at: now, from: from.Unmap()}
	var res []apitypes.BatchResult
	for _, l := range req.Leases {
		exp, ok := g.exp[l.ID]
		if !ok {
			res = append(res, apitypes.BatchResult{ID: l.ID, Error: &apitypes.Error{Code: apitypes.UnknownLease, Message: "not granted here"}})
			continue
		}
		if now.After(exp) {
			g.lapsed = append(g.lapsed, fmt.Sprintf("%s lapsed %v before it was renewed (by %s)", l.ID, now.Sub(exp).Round(time.Millisecond), c.from))
		}
		d := g.max
		if l.Duration > 0 && time.Duration(l.Duration)*time.Millisecond < d {
			d = time.Duration(l.Duration) * time.Millisecond
		}
		g.exp[l.ID] = now.Add(d)
		c.ids = append(c.ids, l.ID)
		res = append(res, apitypes.BatchResult{ID: l.ID, Expiration: now.Add(d).UnixMilli()})
	}
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(apitypes.BatchResults{Results: res})
}

// renewedBy counts the distinct leases a node renewed since t0.
func (g *leaseGrantor) renewedBy(from netip.Addr, t0 time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range g.calls {
		if c.from == from && !c.at.Before(t0) {
			for _, id := range c.ids {
				seen[id] = true
			}
		}
	}
	return len(seen)
}

// span is when a node's first and last renewal calls came.
func (g *leaseGrantor) span(from netip.Addr) (first, last time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.calls {
		if c.from == from {
			if first.IsZero() {
				first = c.at
			}
			last = c.at
		}
	}
	return first, last
}

// check fails the test if a lease lapsed, or one is past its end now.
func (g *leaseGrantor) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.lapsed) > 0 {
		t.Errorf("%d renewals of lapsed leases, the first: %s", len(g.lapsed), g.lapsed[0])
	}
	now := time.Now()
	for id, exp := range g.exp {
		if now.After(exp) {
			t.Errorf("lease %s lapsed at %v, unrenewed", id, exp)
		}
	}
}

// keepLeases has the renewal service keep count leases of g's, in sets
// of 250 made through node n by the site's client, until ten minutes
// from now, and waits until each has been renewed once. It returns the
// address of the node that renewed them: the one holding the client's
// shard.
func keepLeases(t *testing.T, s *clusterSite, n *clusterNode, g *leaseGrantor, count int) netip.Addr {
	t.Helper()
	c := jinidtest.LabClient(t, s.client, n.api)
	start := time.Now()
	var set string
	renew := g.max.Milliseconds()
	for i := range count {
		if i%250 == 0 {
			rs, err := c.RenewalCreate(t.Context(), 3_600_000)
			if err != nil {
				t.Fatal(err)
			}
			set = rs.ID
		}
		if err := c.RenewFor(t.Context(), set, g.grant(fmt.Sprintf("lease-%04d", i), i, count), 600_000, &renew); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
	}
	t.Logf("%d leases handed to %s in %v", count, n.name, time.Since(start).Round(time.Millisecond))
	testenv.Until(t, "every lease renewed once", func() bool { return len(g.renewedSince(start)) == count })
	by := g.renewedSince(start)
	from := by["lease-0000"]
	for id, f := range by {
		if f != from {
			t.Fatalf("the client's leases renewed by two nodes (%s by %s, lease-0000 by %s): its sets are in one shard", id, f, from)
		}
	}
	return from
}

// forget has the grantor answer UnknownLease for id from now on.
func (g *leaseGrantor) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.exp, id)
}

// renewedSince maps each lease renewed since t0 to the node that renewed
// it last.
func (g *leaseGrantor) renewedSince(t0 time.Time) map[string]netip.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	by := map[string]netip.Addr{}
	for _, c := range g.calls {
		if !c.at.Before(t0) {
			for _, id := range c.ids {
				by[id] = c.from
			}
		}
	}
	return by
}

// spanOf is when a node first and last renewed the lease id, since t0.
func (g *leaseGrantor) spanOf(from netip.Addr, id string, t0 time.Time) (first, last time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.calls {
		if c.from == from && !c.at.Before(t0) && slices.Contains(c.ids, id) {
			if first.IsZero() {
				first = c.at
			}
			last = c.at
		}
	}
	return first, last
}

// renewalLeases are the leases renewalSite has its holder keep.
const renewalLeases = 1000

// renewalSite is a site of two nodes, node-a holding the store, that
// keeps renewalLeases leases of a fake grantor (granted for 10 s, renewed
// 6 s before their end), each renewed once: owner is the node that
// renews them (which holds their shard), other the other one.
func renewalSite(t *testing.T) (s *clusterSite, g *leaseGrantor, owner, other *clusterNode) {
	t.Helper()
	s = newClusterSite(t)
	g = newLeaseGrantor(t, s, 10*time.Second)
	a, b := s.pair(t, "--renewal-margin", "6s")
	if keepLeases(t, s, a, g, renewalLeases) == b.link.IPv4 {
		return s, g, b, a
	}
	return s, g, a, b
}

// The node that keeps 1,000 leases in renewal sets is killed (SIGKILL):
// the one waiting takes over once the hold's lease ends and renews them
// all, none lapsing (the grantor grants 10 s, the sets renew 6 s before
// the end), and the two never renew at once.
func TestClusterRenewalFailover(t *testing.T) {
	t.Parallel()
	s, g, a, b := renewalSite(t) // a renews the leases; b takes over
	const count = renewalLeases
	st, exit := s.status(t)
	if exit != 0 || st.Holder != "node-a" || len(st.Nodes) != 2 || st.Nodes[1].Node != "node-b" || st.Nodes[1].Role != "standby" ||
		len(st.Etcd) != 3 || st.ShardsHeld != 16 || len(st.Nodes[0].Shards) == 0 || len(st.Nodes[1].Shards) == 0 {
		t.Fatalf("cluster status (exit %d): %+v", exit, st)
	}

	a.Kill()
	killed := time.Now()
	holder := st.Holder == a.name
	if holder {
		b.serving(t)
	}
	serving := time.Since(killed)
	testenv.Until(t, "every lease renewed by "+b.name, func() bool { return g.renewedBy(b.link.IPv4, killed) == count })
	all := time.Since(killed)
	t.Logf("%s (holding the store: %v) killed: %s serves after %v, has renewed all %d leases after %v (hold lease %v)",
		a.name, holder, b.name, serving.Round(time.Millisecond), count, all.Round(time.Millisecond), clusterTTL)
	g.check(t)
	_, lastA := g.span(a.link.IPv4)
	firstB, _ := g.span(b.link.IPv4)
	if !lastA.Before(firstB) {
		t.Errorf("%s renewed at %v, before %s's last renewal at %v", b.name, firstB, a.name, lastA)
	}
	// The holder's figures say it holds, and that it is the one member
	// left.
	tr := &http.Transport{DialContext: jinidtest.DialFrom(s.client)}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(b.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"\njinid_cluster_holding 1\n", "\njinid_cluster_members 1\n", "\njinid_cluster_hold_left_seconds ", "\njinid_cluster_shards_held "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("%s's /metrics has no %q", b.name, strings.TrimSpace(want))
		}
	}

	// An etcd member gone: the status says so, and fails.
	s.etcd[2].Kill()
	st, exit = s.status(t)
	// The status lists the members in etcd's order (by ID): m2 by name.
	m2 := slices.IndexFunc(st.Etcd, func(m struct{ Name, State, Leader string }) bool { return m.Name == "m2" })
	if exit != 1 || st.Holder != b.name || len(st.Nodes) != 1 || m2 < 0 || st.Etcd[m2].State != "does not answer" {
		t.Errorf("cluster status with a member killed (exit %d): %+v", exit, st)
	}
}

// The work spread among the nodes: three nodes hold the 16 shards
// between them (jinid cluster status), and the sets of six clients,
// made through the node holding the store, are renewed by the nodes
// holding their shards, each lease by one node. A node that holds
// shards but not the store is killed (SIGKILL): its shards go to the
// others once its lease ends, which renew its leases from then on, none
// lapsing and never two nodes one lease at once; the sets are served
// throughout. Started again, it takes its shards back from the others,
// which let them go first.
func TestClusterRenewalShards(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	g := newLeaseGrantor(t, s, 10*time.Second)
	flags := []string{"--no-multicast", "--renewal-margin", "6s"}
	a := s.node(t, "node-a", flags...)
	a.serving(t)
	nodes := []*clusterNode{a, s.node(t, "node-b", flags...), s.node(t, "node-c", flags...)}
	for _, n := range nodes[1:] {
		n.waiting(t)
	}
	byAddr := map[netip.Addr]*clusterNode{}
	for _, n := range nodes {
		byAddr[n.link.IPv4] = n
	}
	defer func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("%s:\n%s", n.name, n.Log())
			}
		}
	}()
	testenv.Until(t, "the 16 shards held, each node holding some", func() bool {
		st, _ := s.status(t)
		if st.ShardsHeld != 16 || len(st.Nodes) != 3 {
			return false
		}
		for _, n := range st.Nodes {
			if len(n.Shards) == 0 {
				return false
			}
		}
		return true
	})

	const clients, perSet = 6, 100
	start := time.Now()
	renew := g.max.Milliseconds()
	sets := map[string]string{} // lease: its set
	var cs []*client.Client
	for i := range clients {
		h := s.lab.Host(fmt.Sprintf("user-%d", i))
		h.Attach(s.lan)
		c := jinidtest.LabClient(t, h, a.api)
		cs = append(cs, c)
		rs, err := c.RenewalCreate(t.Context(), 3_600_000)
		if err != nil {
			t.Fatal(err)
		}
		for j := range perSet {
			id := fmt.Sprintf("lease-%d-%03d", i, j)
			if err := c.RenewFor(t.Context(), rs.ID, g.grant(id, i*perSet+j, clients*perSet), 600_000, &renew); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			sets[id] = rs.ID
		}
	}
	testenv.Until(t, "every lease renewed once", func() bool { return len(g.renewedSince(start)) == clients*perSet })
	by := g.renewedSince(start)
	per := map[*clusterNode][]string{}
	for id, from := range by {
		per[byAddr[from]] = append(per[byAddr[from]], id)
	}
	for n, ids := range per {
		t.Logf("%s renews %d leases", n.name, len(ids))
	}
	if len(per) < 2 {
		t.Fatalf("the leases of %d clients renewed by %d node(s): the work is not spread", clients, len(per))
	}
	// Each set's leases by one node (the set's shard's).
	bySet := map[string]netip.Addr{}
	for id, from := range by {
		if f, ok := bySet[sets[id]]; ok && f != from {
			t.Errorf("set %s renewed by %s and %s", sets[id], f, from)
		}
		bySet[sets[id]] = from
	}

	// What the routing costs (logged for docs/performance.md, not
	// judged): a set's leases read through node-a, the set in a shard
	// node-a holds, and in one another node holds.
	local := slices.IndexFunc(cs, func(c *client.Client) bool {
		return by[fmt.Sprintf("lease-%d-000", slices.Index(cs, c))] == a.link.IPv4
	})
	remote := slices.IndexFunc(cs, func(c *client.Client) bool {
		return by[fmt.Sprintf("lease-%d-000", slices.Index(cs, c))] != a.link.IPv4
	})
	for _, j := range []int{local, remote} {
		if j < 0 {
			continue
		}
		const reads = 50
		start := time.Now()
		for range reads {
			if _, err := cs[j].RenewalLeases(t.Context(), sets[fmt.Sprintf("lease-%d-000", j)]); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("a set of %d leases read through node-a, its shard on %s: %v a read", perSet,
			byAddr[by[fmt.Sprintf("lease-%d-000", j)]].name, (time.Since(start) / reads).Round(10*time.Microsecond))
	}

	// A renewal failure (a lease its grantor no longer knows) in the set
	// of a client whose shard a node other than node-a holds goes to
	// the failure listener of that set: the pull mailbox of a client
	// whose shard is on yet another node. The event goes from the one
	// node to the other, and the mailbox's client takes it through
	// node-a.
	from, to := -1, -1
	for i := range clients {
		if n := byAddr[by[fmt.Sprintf("lease-%d-000", i)]]; n != a && from < 0 {
			from = i
		}
	}
	for i := range clients {
		if from >= 0 && by[fmt.Sprintf("lease-%d-000", i)] != by[fmt.Sprintf("lease-%d-000", from)] {
			to = i
		}
	}
	if from < 0 || to < 0 {
		t.Fatalf("no two clients' sets on two nodes, one not node-a: %v", per)
	}
	failing := fmt.Sprintf("lease-%d-001", from)
	mbox, err := cs[to].MailboxRegister(t.Context(), 600_000, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.shardHolder(t, mbox.ID, nodes...).link.IPv4; got != by[fmt.Sprintf("lease-%d-000", to)] {
		t.Errorf("client %d's mailbox is held by %s, its sets by %s: one client's shard is one", to, got, by[fmt.Sprintf("lease-%d-000", to)])
	}
	if _, err := cs[from].RenewalFailures(t.Context(), sets[failing], mbox.Listener.URL, nil); err != nil {
		t.Fatal(err)
	}
	g.forget(failing)
	it, err := cs[to].MailboxIterator(t.Context(), mbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Asked a second at a time (the client's requests have a deadline of
	// 5 s): the failure comes at the lease's next renewal, seconds away.
	var ev []byte
	testenv.Until(t, fmt.Sprintf("client %d's mailbox holding the failure of %s", to, failing), func() bool {
		e, err := cs[to].MailboxNext(t.Context(), mbox.ID, it, 1_000)
		if err != nil {
			t.Fatalf("client %d's mailbox, for the failure of %s in client %d's set: %v", to, failing, from, err)
		}
		ev = e
		return e != nil
	})
	if !strings.Contains(string(ev), failing) || !strings.Contains(string(ev), apitypes.RenewalFailureEventType) {
		t.Fatalf("client %d's mailbox, for the failure of %s in client %d's set: %s", to, failing, from, ev)
	}
	t.Logf("the failure of %s (renewed by %s) in the mailbox held by %s", failing, byAddr[by[failing]].name, byAddr[by[fmt.Sprintf("lease-%d-000", to)]].name)
	delete(sets, failing)
	per[byAddr[by[failing]]] = slices.DeleteFunc(per[byAddr[by[failing]]], func(id string) bool { return id == failing })

	// A transaction of that client is that node's too: its participant
	// is called from there.
	// (Two participants: with one, the manager would ask it
	// prepareAndCommit, which the test's participant does not answer.)
	part, part2 := newTxnParticipant(t, s, false), newTxnParticipant(t, s, false)
	tx, err := cs[from].TxnCreate(t.Context(), 600_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*txnParticipant{part, part2} {
		if err := cs[from].TxnJoin(t.Context(), tx.ID, p.url, 1); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := cs[from].TxnCommit(t.Context(), tx.ID, -1); err != nil || st != "COMMITTED" {
		t.Fatalf("commit: %q, %v (the participant heard %q)", st, err, part.heard())
	}
	heard := part.heard()
	if len(heard) == 0 || slices.ContainsFunc(heard, func(h string) bool { return !strings.HasSuffix(h, " "+by[failing].String()) }) {
		t.Errorf("client %d's transaction: its participant heard %q, want every call from %s", from, heard, byAddr[by[failing]].name)
	}

	// The victim: the node renewing the most leases, of those not
	// holding the store (the API's node stays).
	var victim *clusterNode
	for _, n := range nodes[1:] {
		if victim == nil || len(per[n]) > len(per[victim]) {
			victim = n
		}
	}
	if len(per[victim]) == 0 {
		t.Fatalf("neither node-b nor node-c renews a lease: %v", per)
	}
	// Event registrations of a client whose shard the victim holds: a
	// notify registration and a lookup discovery registration (of the
	// cluster's own lookup service, by locator), their events in a pull
	// mailbox of the client's.
	ec := slices.IndexFunc(cs, func(c *client.Client) bool {
		return by[fmt.Sprintf("lease-%d-000", slices.Index(cs, c))] == victim.link.IPv4
	})
	evBox, err := cs[ec].MailboxRegister(t.Context(), 600_000, true)
	if err != nil {
		t.Fatal(err)
	}
	evIt, err := cs[ec].MailboxIterator(t.Context(), evBox.ID)
	if err != nil {
		t.Fatal(err)
	}
	watched := apitypes.Template{Types: []string{"org.example.Watched"}}
	nr, err := cs[ec].Notify(t.Context(), client.NotifyRequest{Template: watched, Listener: evBox.Listener.URL, Duration: 600_000,
		Transitions: []string{apitypes.MatchNoMatch, apitypes.NoMatchMatch, apitypes.MatchMatch}})
	if err != nil {
		t.Fatal(err)
	}
	lr, err := cs[ec].LDSRegister(t.Context(), client.LDSRequest{Groups: []string{}, Listener: evBox.Listener.URL, Duration: 600_000,
		Locators: []string{"jini://" + a.link.IPv4.String() + ":4160"}})
	if err != nil {
		t.Fatal(err)
	}
	wreg, err := cs[0].Register(t.Context(), apitypes.Item{Types: watched.Types}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	// seen reads the mailbox's events until want are in: the notify
	// registration's sequence numbers, and whether the lookup
	// discovery service's discovered event came.
	var seqs []int64
	discovered := false
	seen := func(what string, n int, lds bool) {
		t.Helper()
		testenv.Until(t, what, func() bool {
			raw, err := cs[ec].MailboxNext(t.Context(), evBox.ID, evIt, 1_000)
			var e struct {
				Source  apitypes.EventSource `json:"source"`
				EventID int64                `json:"eventID"`
				SeqNum  int64                `json:"seqNum"`
			}
			switch {
			case err != nil || json.Unmarshal(raw, &e) != nil:
			case e.Source.Service == "lookup" && e.EventID == nr.EventID:
				seqs = append(seqs, e.SeqNum)
			case e.Source.Service == "lds" && e.EventID == lr.EventID:
				discovered = true
			}
			return len(seqs) >= n && (!lds || discovered)
		})
	}
	seen("the notify registration's first event, and the lookup discovery service's", 1, true)

	victim.Kill()
	killed := time.Now()
	testenv.Until(t, "the leases "+victim.name+" renewed, renewed by another node", func() bool {
		now := g.renewedSince(killed)
		for _, id := range per[victim] {
			if from, ok := now[id]; !ok || from == victim.link.IPv4 {
				return false
			}
		}
		return true
	})
	t.Logf("%s killed: its %d leases all renewed by the others %v later (lease TTL %v)", victim.name, len(per[victim]),
		time.Since(killed).Round(time.Millisecond), clusterTTL)
	g.check(t)
	after := g.renewedSince(killed)
	for _, id := range per[victim] {
		_, last := g.spanOf(victim.link.IPv4, id, time.Time{})
		first, _ := g.spanOf(after[id], id, time.Time{})
		if !last.Before(first) {
			t.Errorf("%s: renewed by %s at %v, before %s's last renewal at %v", id, after[id], first, victim.name, last)
		}
	}
	// Every set is still served, through the node holding the store
	// (a client tries again on 503: node-a's look at the members may
	// still name the dead node for a second).
	for i, c := range cs {
		want := perSet
		if i == from {
			want-- // the failed lease
		}
		var ls []apitypes.ClientLease
		var err error
		testenv.Until(t, fmt.Sprintf("client %d's set served", i), func() bool {
			ls, err = c.RenewalLeases(t.Context(), sets[fmt.Sprintf("lease-%d-000", i)])
			var ae *client.Error
			return !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable
		})
		if err != nil || len(ls) != want {
			t.Errorf("client %d's set: %d leases, %v", i, len(ls), err)
		}
	}
	// Its shards that held no lease move too (the two others may take
	// them a moment apart).
	testenv.Until(t, "every shard held by the two nodes left", func() bool {
		st, _ := s.status(t)
		return st.ShardsHeld == 16 && len(st.Nodes) == 2
	})

	// The event registrations went with the shard: the node that took it
	// sends the notify registration's next event, numbered on from the
	// victim's; the lookup discovery registration is served, with the
	// lookup service it had discovered.
	named := apitypes.AttributeChange{Add: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "w"}}}}
	if err := cs[0].ChangeAttributes(t.Context(), wreg.ServiceID, named); err != nil {
		t.Fatal(err)
	}
	seen("the notify registration's event after "+victim.name+" died", 2, false)
	if !slices.Equal(seqs, []int64{1, 2}) {
		t.Errorf("the notify registration's events numbered %v; want 1, 2", seqs)
	}
	if rs, err := cs[ec].LDSRegistrars(t.Context(), lr.ID); err != nil || len(rs) != 1 {
		t.Errorf("the lookup discovery registration after %s died: %v, %v", victim.name, rs, err)
	}
	t.Logf("%s killed: the notify registration's next event sent by the node that took its shard %v later", victim.name,
		time.Since(killed).Round(time.Millisecond))

	// The victim back, under its name: rendezvous hashing gives it its
	// shards again. The nodes holding them let them go, and it renews
	// their leases from then on: no lease lapses, and none is renewed
	// by another node after the victim's first renewal of it.
	back := time.Now()
	s.restart(t, victim)
	testenv.Until(t, victim.name+" renewing its leases again", func() bool {
		now := g.renewedSince(back)
		for _, id := range per[victim] {
			if now[id] != victim.link.IPv4 {
				return false
			}
		}
		return true
	})
	t.Logf("%s back: its leases renewed by it again %v later", victim.name, time.Since(back).Round(time.Millisecond))
	g.check(t)
	for _, id := range per[victim] {
		first, _ := g.spanOf(victim.link.IPv4, id, back)
		for _, n := range nodes {
			if _, last := g.spanOf(n.link.IPv4, id, back); n != victim && !last.IsZero() && !last.Before(first) {
				t.Errorf("%s: renewed by %s at %v, after %s's first renewal at %v: two nodes at once", id, n.name, last, victim.name, first)
			}
		}
	}
}

// A node cut off from etcd (its packets to the members dropped, nothing
// refused) stops renewing within the hold's lease, before the node
// waiting takes over: the grantor's log has no renewal of the first
// after the second's first, and no lease lapses. The cut node says why
// it stops, and ends.
func TestClusterCutOffNodeStopsActing(t *testing.T) {
	t.Parallel()
	s, g, a, b := renewalSite(t) // a renews the leases
	const count = renewalLeases

	s.cutOff(a)
	cut := time.Now()
	// Holding the store or waiting for it, the node says it stops.
	stopping := regexp.MustCompile(`lost the hold of the store|no longer holds the store`)
	a.WaitLog(t, a.name+" stopping", stopping)
	// The renewals go at the pace the machine allows (1,000 of them on a
	// loaded CI machine took longer than one wait): what must not happen
	// is that they stop, so each one seen starts the wait anew.
	for last := -1; ; {
		var n int
		testenv.Until(t, fmt.Sprintf("every lease renewed by %s (%d so far)", b.name, max(last, 0)), func() bool {
			n = g.renewedBy(b.link.IPv4, cut)
			return n == count || n > last
		})
		if n == count {
			break
		}
		last = n
	}
	g.check(t)
	_, lastA := g.span(a.link.IPv4)
	firstB, _ := g.span(b.link.IPv4)
	t.Logf("cut off at 0: %s's last renewal at %v, %s's first at %v", a.name, lastA.Sub(cut).Round(time.Millisecond), b.name, firstB.Sub(cut).Round(time.Millisecond))
	if !lastA.Before(firstB) {
		t.Errorf("%s renewed at %v, after %s's first renewal at %v: two nodes acted at once", a.name, lastA.Sub(cut), b.name, firstB.Sub(cut))
	}
	if lastA.Sub(cut) > clusterTTL {
		t.Errorf("%s renewed %v after it was cut off, past its lease (%v)", a.name, lastA.Sub(cut), clusterTTL)
	}
	if i := slices.IndexFunc(strings.Split(a.Log(), "\n"), stopping.MatchString); i < 0 {
		t.Errorf("%s did not say why it stopped", a.name)
	}
}

// A push mailbox whose node (the one holding its shard) is killed while
// events stream in, after one of the three etcd members was: every
// event the cluster acknowledged reaches the target, pushed by the node
// that took the shard over. The event source sends each event until a node
// acknowledges it, to whichever node serves (as it would to the site's
// one address, moved to the holder by keepalived, docs/cluster.md).
// Duplicates are allowed where EM allows them (an event pushed, whose
// delivery the killed node had not yet recorded, is pushed again: the
// target tells them apart by source, eventID and seqNum); the test
// counts them.
func TestClusterMailboxFailover(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a, b := s.pair(t)
	reg, sink, listener := s.pushMailbox(t, a)
	tr := &http.Transport{DialContext: jinidtest.DialFrom(s.client)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	send := func(seq int) bool {
		body := fmt.Sprintf(`{"type":"RemoteEvent","source":{"service":"test","id":"feed"},"eventID":7,"seqNum":%d}`, seq)
		for _, n := range []*clusterNode{a, b} {
			resp, err := hc.Post(n.api+listener, "application/json", strings.NewReader(body))
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return true
			}
		}
		return false
	}
	// The node pushing: the one holding the registration's shard.
	pusher := s.shardHolder(t, reg.ID, a, b)
	const count, memberAt, killAt = 400, 75, 150
	var killed time.Time
	for seq := 1; seq <= count; seq++ {
		if seq == memberAt {
			s.etcd[0].Kill() // the etcd cluster goes on with two of three
		}
		if seq == killAt {
			pusher.Kill()
			killed = time.Now()
			// The failover first (the lease's TTL, the members seen
			// gone, the shard taken: with two etcd members of three on
			// a loaded CI machine it took longer than one wait for the
			// event), then the event.
			survivor := a
			if pusher == a {
				survivor = b
			}
			s.shardHolder(t, reg.ID, survivor)
		}
		testenv.Until(t, fmt.Sprintf("event %d acknowledged by a node", seq), func() bool { return send(seq) })
	}
	pushed := func() map[int]int { return pushedBySeq(sink) }
	testenv.Until(t, "every acknowledged event pushed", func() bool { return len(pushed()) == count })
	dups := 0
	for _, n := range pushed() {
		dups += n - 1
	}
	t.Logf("an etcd member killed at event %d, %s (pushing) at event %d; all %d events pushed %v later, %d pushed twice",
		memberAt, pusher.name, killAt, count, time.Since(killed).Round(time.Millisecond), dups)
}

// pushMailbox registers a push mailbox through node n for the site's
// client, its target a sink on the client host's "/push", and returns
// it, the sink and the path of its listener (at any node).
func (s *clusterSite) pushMailbox(t *testing.T, n *clusterNode) (client.MailboxRegistration, *jinidtest.Sink, string) {
	t.Helper()
	c := jinidtest.LabClient(t, s.client, n.api)
	reg, err := c.MailboxRegister(t.Context(), 600_000, false)
	if err != nil {
		t.Fatal(err)
	}
	sink := jinidtest.NewSink(t, s.client, s.clientIP.String())
	if err := c.MailboxEnable(t.Context(), reg.ID, sink.URL+"/push"); err != nil {
		t.Fatal(err)
	}
	lu, err := url.Parse(reg.Listener.URL)
	if err != nil {
		t.Fatal(err)
	}
	return reg, sink, lu.Path
}

// shardHolder is the node of nodes holding the shard of the ID id, as
// jinid cluster status says once the shard is held.
func (s *clusterSite) shardHolder(t *testing.T, id string, nodes ...*clusterNode) *clusterNode {
	t.Helper()
	shard := cluster.Name(cluster.Of(id))
	var holder *clusterNode
	testenv.Until(t, "shard "+shard+" held", func() bool {
		st, _ := s.status(t)
		for _, sn := range st.Nodes {
			if slices.Contains(sn.Shards, shard) {
				for _, n := range nodes {
					if n.name == sn.Node {
						holder = n
						return true
					}
				}
			}
		}
		return false
	})
	return holder
}

// txnParticipant is a participant on the client host that votes
// PREPARED and records who told it what; while refusing, it answers
// commit with 503 (not heard: the manager must tell it again).
type txnParticipant struct {
	url string

	mu       sync.Mutex
	refusing bool
	refused  int
	told     []string // "op from-address"
}

func newTxnParticipant(t *testing.T, s *clusterSite, refusing bool) *txnParticipant {
	p := &txnParticipant{refusing: refusing}
	p.url = jinidtest.ServeIn(t, s.client, s.clientIP.String(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb apitypes.ParticipantCall
		if json.NewDecoder(r.Body).Decode(&cb) != nil {
			http.Error(w, "bad callback", http.StatusBadRequest)
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		p.mu.Lock()
		if cb.Op == apitypes.OpCommit && p.refusing {
			p.refused++
			p.mu.Unlock()
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		p.told = append(p.told, string(cb.Op)+" "+host)
		p.mu.Unlock()
		if cb.Op == apitypes.OpPrepare {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"vote":"PREPARED"}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})) + "/tx"
	return p
}

func (p *txnParticipant) heard() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.told)
}

// A transaction decided COMMITTED whose roll-forward is under way (one
// participant of three has not heard commit yet) when its node (the one
// holding its shard) is killed: the node that takes the shard over
// tells that participant commit, and no participant hears abort.
func TestClusterTransactionRollForward(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a, b := s.pair(t)
	ps := []*txnParticipant{newTxnParticipant(t, s, false), newTxnParticipant(t, s, false), newTxnParticipant(t, s, true)}
	ca := jinidtest.LabClient(t, s.client, a.api)
	tx, err := ca.TxnCreate(t.Context(), 600_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := ca.TxnJoin(t.Context(), tx.ID, p.url, 1); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := ca.TxnCommit(t.Context(), tx.ID, -1); err != nil || st != "COMMITTED" {
		t.Fatalf("commit: %q, %v", st, err)
	}
	testenv.Until(t, "the third participant refusing commit", func() bool {
		ps[2].mu.Lock()
		defer ps[2].mu.Unlock()
		return ps[2].refused > 0
	})
	// The node rolling it forward: the one holding its shard; the
	// other takes the shard (and the store, if it was the holder's).
	rolling := s.shardHolder(t, tx.ID, a, b)
	other := b
	if rolling == b {
		other = a
	}
	rolling.Kill()
	ps[2].mu.Lock()
	ps[2].refusing = false
	ps[2].mu.Unlock()
	if rolling == a {
		b.serving(t)
	}
	fromOther := string(apitypes.OpCommit) + " " + other.link.IPv4.String()
	testenv.Until(t, "the third participant told commit by "+other.name, func() bool { return slices.Contains(ps[2].heard(), fromOther) })
	for i, p := range ps {
		for _, h := range p.heard() {
			if strings.HasPrefix(h, string(apitypes.OpAbort)) {
				t.Errorf("participant %d heard %s", i, h)
			}
		}
	}
	if st, err := jinidtest.LabClient(t, s.client, other.api).TxnState(t.Context(), tx.ID); err != nil || st != "COMMITTED" {
		t.Errorf("the transaction on %s: %q, %v", other.name, st, err)
	}
}

// TestClusterRenewalScale (opt-in: JINID_PERF=1, several minutes):
// 100,000 leases of a fake grantor in renewal sets on a site of three
// nodes (one holding the store, two waiting, each holding its shards) on
// three etcd members (--max-txn-ops 10240, as docs/cluster.md asks),
// each renewed every 30 s (the grantor grants 60 s, the sets renew 30 s
// before the end). The sets are made by 32 clients, each on a host of
// its own, through the node holding the store; their shards spread them
// over the nodes. It prints the figures of docs/performance.md: how fast
// the leases were handed in, and each node's renewal calls of one cycle
// and the leases they renewed.
func TestClusterRenewalScale(t *testing.T) {
	if os.Getenv("JINID_PERF") == "" {
		t.Skip("opt-in: JINID_PERF=1 keeps 100,000 leases on a three-node site")
	}
	s := newClusterSite(t, "-max-txn-ops", "10240")
	g := newLeaseGrantor(t, s, time.Minute)
	flags := []string{"--no-multicast", "--renewal-margin", "30s", "--limit", "renewalSets=1000", "--limit", "renewalSetsPerClient=1000"}
	a := s.node(t, "node-a", flags...)
	a.serving(t)
	nodes := []*clusterNode{a}
	for _, n := range []string{"node-b", "node-c"} {
		nodes = append(nodes, s.node(t, n, flags...))
		nodes[len(nodes)-1].waiting(t)
	}
	testenv.Until(t, "the 16 shards held", func() bool { st, _ := s.status(t); return st.ShardsHeld == 16 })
	const count, perSet, workers = 100_000, 250, 32
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	renew := g.max.Milliseconds()
	for w := range workers {
		h := s.lab.Host(fmt.Sprintf("user-%d", w))
		h.Attach(s.lan)
		c := jinidtest.LabClient(t, h, a.api)
		wg.Go(func() {
			for {
				set := int(next.Add(1)) - 1
				if set*perSet >= count {
					return
				}
				rs, err := c.RenewalCreate(t.Context(), 3_600_000)
				if err != nil {
					t.Error(err)
					return
				}
				for i := set * perSet; i < (set+1)*perSet; i++ {
					if err := c.RenewFor(t.Context(), rs.ID, g.grant(fmt.Sprintf("lease-%06d", i), i, count), 3_600_000, &renew); err != nil {
						t.Errorf("lease %d: %v", i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	handed := time.Since(start)
	t.Logf("%d leases in %d sets handed to node-a in %v (%.0f /s, %d clients)", count, count/perSet, handed.Round(time.Millisecond),
		float64(count)/handed.Seconds(), workers)
	// The steady state: every lease renewed once since the last was
	// handed in (within a renewal cycle, 30 s: longer than Until waits).
	lastIn := start.Add(handed)
	poll, gaveUp := time.NewTicker(100*time.Millisecond), time.After(2*time.Minute)
	defer poll.Stop()
	for len(g.renewedSince(lastIn)) < count {
		select {
		case <-poll.C:
		case <-gaveUp:
			t.Fatalf("%d leases of %d renewed in the 2 minutes after the last was handed in", len(g.renewedSince(lastIn)), count)
		}
	}
	cycle := time.Now()
	time.Sleep(30 * time.Second) // one 30 s renewal cycle, measured: protocol time is the subject
	g.mu.Lock()
	type tally struct{ calls, leases int }
	per := map[netip.Addr]*tally{}
	all := tally{}
	for _, c := range g.calls {
		if c.at.After(cycle) {
			if per[c.from] == nil {
				per[c.from] = &tally{}
			}
			per[c.from].calls++
			per[c.from].leases += len(c.ids)
			all.calls++
			all.leases += len(c.ids)
		}
	}
	g.mu.Unlock()
	for _, n := range nodes {
		if tl := per[n.link.IPv4]; tl != nil {
			t.Logf("one 30 s cycle, %s: %d renewal calls, %d leases (%.1f a call)", n.name, tl.calls, tl.leases, float64(tl.leases)/float64(max(tl.calls, 1)))
		} else {
			t.Logf("one 30 s cycle, %s: no renewal call", n.name)
		}
	}
	t.Logf("one 30 s cycle, in all: %d renewal calls, %d leases renewed (%.1f a call); all renewed since the start: %d",
		all.calls, all.leases, float64(all.leases)/float64(max(all.calls, 1)), len(g.renewedSince(start)))
	g.check(t)
}

// One lookup service across segments. Three nodes on the site's LAN:
// node-a on segment A holds the store; node-b, segment B's gateway, and
// node-c, segment A's, wait and are the registry's doors there,
// announcing the cluster's lookup service with their own addresses and
// forwarding what reaches them to node-a (and answering multicast
// requests, by connecting back). A service registered through node-a by a
// client on segment A is found by a client on segment B, which
// discovered the lookup service there; one registered through node-b is
// found through node-a; an LDS registration made on segment B gets the
// discovered event of a lookup service only segment A hears, and one
// made on segment A that of a lookup service only segment B hears; a Java
// JoinManager service on segment A is found by a Java
// ServiceDiscoveryManager on segment B (not with -short). Last, node-a
// is killed: one of the others takes over, and each segment still
// reaches the registry at its own node.
func TestClusterAcrossSegments(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	segA, segB := s.lab.LAN(), s.lab.LAN()
	flags := []string{"--groups", "lab", "--announce-interval", "2s", "--java-register-from", "198.18.0.0/16"}
	a := s.gateway(t, "node-a", segA, flags...)
	a.serving(t)
	b := s.gateway(t, "node-b", segB, flags...)
	b.waiting(t)
	c := s.gateway(t, "node-c", segA, flags...)
	c.waiting(t)
	for _, n := range []*clusterNode{b, c} {
		n.WaitLog(t, n.name+" announcing on its segment", regexp.MustCompile(`standby: announcing the cluster's lookup service`))
	}
	defer func() {
		if t.Failed() {
			t.Logf("node-a:\n%s\nnode-b:\n%s\nnode-c:\n%s", a.Log(), b.Log(), c.Log())
		}
	}()
	hostA, hostB := s.lab.Host("client-a"), s.lab.Host("client-b")
	la, lb := hostA.Attach(segA), hostB.Attach(segB)
	// node-b routes segment B to the site's LAN, node-c segment A (node-a
	// is on segment A too), in both families.
	hostA.Route(netip.MustParsePrefix("0.0.0.0/0"), c.seg.IPv4)
	hostA.Route(netip.MustParsePrefix("::/0"), c.seg.IPv6)
	hostB.Route(netip.MustParsePrefix("0.0.0.0/0"), b.seg.IPv4)
	hostB.Route(netip.MustParsePrefix("::/0"), b.seg.IPv6)
	segA4, segA6 := segA.Subnets()
	segB4, segB6 := segB.Subnets()
	for _, n := range []*clusterNode{a, c} {
		n.h.Route(segB4, b.link.IPv4)
		n.h.Route(segB6, b.link.IPv6)
	}
	b.h.Route(segA4, c.link.IPv4)
	b.h.Route(segA6, c.link.IPv6)
	lookupID := regexp.MustCompile(`jinid started.* lookup=(\S+)`).FindStringSubmatch(a.Log())[1]

	// Segment B finds the cluster's lookup service: node-b answers its
	// multicast request (besides announcing it).
	found := discoverIn(t, s.bin, hostB, "--groups", "lab", "--timeout", "5s")
	if !slices.ContainsFunc(found, func(r finder.Result) bool {
		return r.ServiceID == lookupID && slices.Contains(r.How, finder.ViaRequest)
	}) {
		t.Fatalf("on segment B: %+v; want the cluster's lookup service %s, answering a multicast request", found, lookupID)
	}

	// ... and over DNS-SD, at node-b, under node-b's own name.
	dnssdAt(t, hostB, "node-b", lookupID, b.seg.IPv4)

	ca := jinidtest.LabClient(t, hostA, "http://"+netip.AddrPortFrom(a.seg.IPv4, 4162).String())
	cb := jinidtest.LabClient(t, hostB, "http://"+netip.AddrPortFrom(b.seg.IPv4, 4162).String())
	regA, err := ca.Register(t.Context(), apitypes.Item{Types: []string{"org.example.Printer"}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	if items, _, err := cb.Query(t.Context(), apitypes.Template{ServiceID: regA.ServiceID}, 10); err != nil || len(items) != 1 {
		t.Fatalf("segment A's registration, looked up on segment B: %v %v", items, err)
	}
	regB, err := cb.Register(t.Context(), apitypes.Item{Types: []string{"org.example.Scanner"}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	if items, _, err := ca.Query(t.Context(), apitypes.Template{ServiceID: regB.ServiceID}, 10); err != nil || len(items) != 1 {
		t.Fatalf("segment B's registration, looked up on segment A: %v %v", items, err)
	}
	// Forwarded, a client keeps its own address: another anonymous client
	// of segment B may not change what the first registered through the
	// same node; the first may.
	otherB := s.lab.Host("client-b2")
	otherB.Attach(segB)
	cb2 := jinidtest.LabClient(t, otherB, "http://"+netip.AddrPortFrom(b.seg.IPv4, 4162).String())
	named := apitypes.AttributeChange{Add: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "scanner"}}}}
	var ae *client.Error
	if err := cb2.ChangeAttributes(t.Context(), regB.ServiceID, named); !errors.As(err, &ae) || ae.Err.Code != apitypes.Forbidden {
		t.Fatalf("another client of segment B changing a registration it does not own, through node-b: %v", err)
	}
	if err := cb.ChangeAttributes(t.Context(), regB.ServiceID, named); err != nil {
		t.Fatalf("its owner changing it, through node-b: %v", err)
	}

	// A lookup service only segment A hears; an LDS registration made on
	// segment B hears of it. And the other way: one only segment B
	// hears, which node-b notes for node-a's lookup discovery service;
	// an LDS registration made on segment A hears of it.
	s.ldsAcross(t, "A", segA, c.seg, cb, hostB, lb)
	s.ldsAcross(t, "B", segB, b.seg, ca, hostA, la)

	// Java (below) before the failover: a client on each segment at its
	// own node, node-c for segment A.
	defer func() {
		if !t.Failed() {
			failoverAcrossSegments(t, a, b, c, jinidtest.LabClient(t, hostA, "http://"+netip.AddrPortFrom(c.seg.IPv4, 4162).String()), cb, regA, regB)
		}
	}()

	// Java: a JoinManager service on segment A joins the lookup service
	// it discovers there (node-a); a ServiceDiscoveryManager on segment
	// B discovers it at node-b and finds the service.
	if testing.Short() {
		return
	}
	riverpeer.Java(t)
	join := riverpeer.Start(t, hostA, nil, "JoinService", "--groups", "lab", "--name", "join-a", "--secs", "600",
		"--request-host", la.IPv4.String())
	joinID := strings.Fields(join.WaitLine(t, regexp.MustCompile(`serviceID `), 30*time.Second))[2]
	join.WaitLine(t, regexp.MustCompile(`joined `+lookupID), 30*time.Second)
	out, err := riverpeer.Run(t, hostB, 60*time.Second, []string{"-Dorg.apache.river.sdm.insecureLookup=true"}, "SdmLookup",
		"--groups", "lab", "--secs", "5", "--listen-host", lb.IPv4.String())
	if err != nil || !strings.Contains(out, "item "+joinID) || !strings.Contains(out, "registrar "+lookupID) {
		t.Fatalf("SdmLookup on segment B: %v\n%s", err, out)
	}
}

// dnssdAt asks segment host h over mDNS for the _jini._tcp services
// until the cluster's lookup service (lookupID) answers from node's
// segment address at, under node's name, its API there.
func dnssdAt(t *testing.T, h *netlab.Host, node, lookupID string, at netip.Addr) {
	t.Helper()
	id, err := discovery.ParseServiceID(lookupID)
	if err != nil {
		t.Fatal(err)
	}
	name := dnssd.NodeName(id, node)
	var answered atomic.Bool
	var mu sync.Mutex
	var heard []string
	p := mdnsObserver(t, h, func(p mcast.Packet) {
		var m dns.Msg
		if m.Unpack(p.Data) != nil || !m.Response {
			return
		}
		var srv, txt, addr bool
		for _, rr := range append(m.Answer, m.Extra...) {
			switch rr := rr.(type) {
			case *dns.SRV:
				srv = srv || rr.Hdr.Name == name+"."+dnssd.ServiceType && rr.Target == name+".local." && rr.Port == 4160
			case *dns.TXT:
				txt = txt || slices.Contains(rr.Txt, "serviceID="+lookupID) && slices.Contains(rr.Txt, "api=http://"+at.String()+":4162/")
			case *dns.A:
				addr = addr || rr.Hdr.Name == name+".local." && rr.A.String() == at.String()
			}
		}
		mu.Lock()
		heard = append(heard, m.String())
		mu.Unlock()
		if srv && txt && addr && p.Src.Addr() == at {
			answered.Store(true)
		}
	})
	q := new(dns.Msg)
	q.SetQuestion(dnssd.ServiceType, dns.TypePTR)
	b, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	ask := func() {
		p.SendTo(func(f int) netip.Addr {
			if f == 4 {
				return dnssd.MDNSGroupV4
			}
			return netip.Addr{}
		}, func(mcast.Joined) ([][]byte, error) { return [][]byte{b}, nil })
	}
	defer func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("mDNS answers heard on %s:\n%s", h.Name, strings.Join(heard, "\n"))
		}
	}()
	// Asked again each second: a query, like any datagram, may be lost.
	var asked time.Time
	testenv.Until(t, "DNS-SD: the cluster's lookup service at "+node, func() bool {
		if answered.Load() {
			return true
		}
		if time.Since(asked) > time.Second {
			ask()
			asked = time.Now()
		}
		return false
	})
}

// ldsAcross starts a lookup service only segment seg (gateway gw) hears,
// and has a client of another segment register with the lookup
// discovery service through its own node (c), its listener on its host
// (h, l): it must get the discovered event.
func (s *clusterSite) ldsAcross(t *testing.T, name string, seg *netlab.LAN, gw *netlab.Link, c *client.Client, h *netlab.Host, l *netlab.Link) {
	t.Helper()
	lusHost := s.lab.Host("lus-" + strings.ToLower(name))
	lusHost.Attach(seg)
	lusHost.Route(netip.MustParsePrefix("0.0.0.0/0"), gw.IPv4) // its segment's gateway
	lusHost.Route(netip.MustParsePrefix("::/0"), gw.IPv6)
	lus := jinidtest.LabDaemon(t, s.bin, lusHost, "--groups", "lab", "--announce-interval", "500ms")
	lusID := regexp.MustCompile(`jinid started.* lookup=(\S+)`).FindStringSubmatch(lus.Log())[1]
	sink := jinidtest.NewSink(t, h, l.IPv4.String())
	if _, err := c.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL + "/lds", Duration: 600_000}); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the discovered event of segment "+name+"'s lookup service on the other", func() bool {
		for _, e := range sink.Events("/lds") {
			raw, _ := json.Marshal(e)
			if strings.Contains(string(raw), lusID) {
				return true
			}
		}
		return false
	})
}

// failoverAcrossSegments: the holder killed, one of the two others
// takes over, and each segment still reaches the registry at its own
// node (the new holder, or its door).
func failoverAcrossSegments(t *testing.T, a, b, c *clusterNode, cA, cB *client.Client, regA, regB client.Registered) {
	t.Helper()
	a.Kill()
	testenv.Until(t, "node-b or node-c serving", func() bool {
		return strings.Contains(b.Log(), "jinid started") || strings.Contains(c.Log(), "jinid started")
	})
	for _, q := range []struct {
		c   *client.Client
		id  string
		seg string
	}{{cA, regB.ServiceID, "A"}, {cB, regA.ServiceID, "B"}} {
		testenv.Until(t, "segment "+q.seg+" reaching the registry after the take-over", func() bool {
			items, _, err := q.c.Query(t.Context(), apitypes.Template{ServiceID: q.id}, 10)
			return err == nil && len(items) == 1
		})
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
)

// Every URL an answer hands a client, through every node, names the
// node the client reached and works there, for a client whose shard a
// node other than the holder holds: the lease grantors of
// mailbox registrations, renewal sets, transactions, notify and
// discovery registrations, and a mailbox's listener, whichever node
// holds the registration's shard (never a node's cluster port, which no
// client can reach).
func TestClusterURLsReachable(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a, b, c := s.threeNodes(t)
	// A client whose registrations go to a shard a node other than the
	// holder holds (an anonymous client's go to the shard its address
	// hashes to).
	h, hIP := s.clientOfShardAt(t, func(n *clusterNode) bool { return n != a }, a, b, c)
	tr := &http.Transport{DialContext: jinidtest.DialFrom(h)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	for _, n := range []*clusterNode{a, b, c} {
		cl := jinidtest.LabClient(t, h, n.api)
		ctx := t.Context()
		mb, err := cl.MailboxRegister(ctx, 600_000, false)
		if err != nil {
			t.Fatal(err)
		}
		set, err := cl.RenewalCreate(ctx, 600_000)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := cl.TxnCreate(ctx, 600_000)
		if err != nil {
			t.Fatal(err)
		}
		sink := jinidtest.NewSink(t, h, hIP)
		nr, err := cl.Notify(ctx, client.NotifyRequest{Transitions: []string{"NOMATCH_MATCH"}, Listener: sink.URL + "/n", Duration: 600_000})
		if err != nil {
			t.Fatal(err)
		}
		lr, err := cl.LDSRegister(ctx, client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL + "/l", Duration: 600_000})
		if err != nil {
			t.Fatal(err)
		}
		for what, l := range map[string]apitypes.Lease{"mailbox registration": mb.Lease, "renewal set": set.Lease, "transaction": tx.Lease,
			"notify registration": nr.Lease, "discovery registration": lr.Lease} {
			at := fmt.Sprintf("%s made through %s", what, n.name)
			reachedThrough(t, at+": its lease's grantor", l.Grantor, n)
			g := jinidtest.LabClient(t, h, l.Grantor)
			if _, _, err := g.Renew(ctx, l.ID, 600_000); err != nil {
				t.Errorf("%s: renewing at its grantor %s: %v", at, l.Grantor, err)
			}
		}
		reachedThrough(t, "the listener of a mailbox made through "+n.name, mb.Listener.URL, n)
		// The transaction's manager is the node reached too, and names
		// the same manager through every node: a transaction nested in
		// it through another node is nested there, not refused as
		// another manager's.
		reachedThrough(t, "the manager of a transaction made through "+n.name, tx.Manager, n)
		for _, m := range []*clusterNode{a, b, c} {
			nested, err := jinidtest.LabClient(t, h, m.api).TxnCreateNested(ctx, 600_000, client.TxnParent{Manager: tx.Manager, ID: tx.ID})
			if err != nil {
				t.Errorf("a transaction nested through %s in one made through %s (manager %s): %v", m.name, n.name, tx.Manager, err)
				continue
			}
			reachedThrough(t, "the manager of a nested transaction made through "+m.name, nested.Manager, m)
		}
		resp, err := hc.Post(mb.Listener.URL, "application/json",
			strings.NewReader(`{"type":"RemoteEvent","source":{"service":"test","id":"urls"},"eventID":1,"seqNum":1}`))
		if err != nil {
			t.Fatalf("an event to %s: %v", mb.Listener.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("an event to the listener %s: %s", mb.Listener.URL, resp.Status)
		}
	}
}

// reachedThrough checks that u names node n's API, where the client
// reached it.
func reachedThrough(t *testing.T, what, u string, n *clusterNode) {
	t.Helper()
	pu, err := url.Parse(u)
	want, _ := url.Parse(n.api)
	if err != nil || pu.Scheme != want.Scheme || pu.Host != want.Host {
		t.Errorf("%s: %s, want a URL of %s (where the client reached the cluster)", what, u, n.api)
	}
}

// allShardsHeldBy waits until every shard is held and n nodes hold them.
func (s *clusterSite) allShardsHeldBy(t *testing.T, n int) {
	t.Helper()
	var last time.Time
	testenv.Until(t, fmt.Sprintf("every shard held, by %d nodes", n), func() bool {
		if time.Since(last) < 100*time.Millisecond {
			return false
		}
		last = time.Now()
		st, _ := s.status(t)
		holders := 0
		for _, sn := range st.Nodes {
			if len(sn.Shards) > 0 {
				holders++
			}
		}
		return st.ShardsHeld == cluster.Count && holders == n
	})
}

// A node waiting for the store serves its host's administrator on its
// local socket as the holder does: reads from its copy, changes through
// the holder, as the administrator (no token); once it takes the hold,
// the same socket goes on serving.
func TestClusterStandbySocket(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a, b := s.pair(t)
	cli := func(args ...string) (string, error) {
		out, err := b.h.Command(t.Context(), s.bin, append(args, "--server", "unix://"+b.Socket)...).CombinedOutput()
		return string(out), err
	}
	if out, err := cli("token", "create", "--name", "ops", "--scope", "client"); err != nil || !strings.Contains(out, "jinid_") {
		t.Fatalf("an administrator's token made on the standby's socket: %v\n%s", err, out)
	}
	if out, err := cli("lookup", "register", "--type", "org.example.Local", "--duration", "10m"); err != nil {
		t.Fatalf("a registration on the standby's socket: %v\n%s", err, out)
	}
	if out, err := cli("lookup", "list"); err != nil || !strings.Contains(out, "org.example.Local") {
		t.Fatalf("the registry read on the standby's socket: %v\n%s", err, out)
	}
	a.Kill()
	b.serving(t)
	if out, err := cli("token", "list"); err != nil || !strings.Contains(out, "ops") {
		t.Fatalf("the tokens on the socket of the standby that took over: %v\n%s", err, out)
	}
}

// threeNodes starts three nodes on the site, node-a holding the store,
// and waits for every shard to be held, by the three.
func (s *clusterSite) threeNodes(t *testing.T) (a, b, c *clusterNode) {
	t.Helper()
	a = s.node(t, "node-a")
	a.serving(t)
	b, c = s.node(t, "node-b"), s.node(t, "node-c")
	b.waiting(t)
	c.waiting(t)
	s.allShardsHeldBy(t, 3)
	return a, b, c
}

// clientOfShardAt is a new client host on the site's LAN (and its
// address) whose registrations go to a shard held by a node of nodes
// that want takes (an anonymous client's go to the shard its address
// hashes to); nodes[0] is asked.
func (s *clusterSite) clientOfShardAt(t *testing.T, want func(*clusterNode) bool, nodes ...*clusterNode) (*netlab.Host, string) {
	t.Helper()
	for i := range 16 {
		h := s.lab.Host(fmt.Sprintf("client%d", i))
		ip := h.Attach(s.lan).IPv4.String()
		mb, err := jinidtest.LabClient(t, h, nodes[0].api).MailboxRegister(t.Context(), 60_000, true)
		if err != nil {
			t.Fatal(err)
		}
		if want(s.shardHolder(t, mb.ID, nodes...)) {
			return h, ip
		}
	}
	t.Fatal("no client host of 16 has its shard held by the node wanted")
	return nil, ""
}

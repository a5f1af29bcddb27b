package e2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
)

// The walks of a cluster's requests and contacts are straight: nothing
// goes around a loop (N → holder → N), and nothing is done once per
// shard that can be done once per node.

// A write for a shard held on the node that receives it is served there
// (no request to the holder of the store, none to another node), and
// one for a shard held elsewhere goes straight to that node, never
// through the holder: each node counts the requests other nodes forward
// to it (jinid_cluster_forwarded_total).
func TestClusterWalksAreStraight(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a, b, c := s.threeNodes(t)
	// A client whose shard node-b (not the holder) holds.
	h, _ := s.clientOfShardAt(t, func(n *clusterNode) bool { return n == b }, a, b, c)
	tr := &http.Transport{DialContext: jinidtest.DialFrom(h)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	forwarded := func() map[string]int {
		out := map[string]int{}
		for _, n := range []*clusterNode{a, b, c} {
			resp, err := hc.Get(n.api + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s's /metrics: %s", n.name, resp.Status)
			}
			for _, line := range strings.Split(string(body), "\n") {
				var what string
				var v int
				if _, err := fmt.Sscanf(line, `jinid_cluster_forwarded_total{for=%q} %d`, &what, &v); err == nil {
					out[n.name+" "+what] = v
				}
			}
		}
		return out
	}
	// writes makes and changes a client's registrations through n.
	writes := func(n *clusterNode) int {
		cl := jinidtest.LabClient(t, h, n.api)
		ctx := t.Context()
		ops := 0
		check := func(what string, err error) {
			t.Helper()
			ops++
			if err != nil {
				t.Fatalf("%s through %s: %v", what, n.name, err)
			}
		}
		mb, err := cl.MailboxRegister(ctx, 600_000, true)
		check("a mailbox registration", err)
		set, err := cl.RenewalCreate(ctx, 600_000)
		check("a renewal set", err)
		tx, err := cl.TxnCreate(ctx, 600_000)
		check("a transaction", err)
		for _, l := range []apitypes.Lease{mb.Lease, set.Lease, tx.Lease} {
			_, _, err := cl.Renew(ctx, l.ID, 600_000)
			check("renewing a lease", err)
		}
		_, err = cl.MailboxGet(ctx, mb.ID)
		check("reading the mailbox registration", err)
		_, err = cl.TxnCommit(ctx, tx.ID, 0)
		check("committing the transaction", err)
		for _, l := range []apitypes.Lease{mb.Lease, set.Lease} {
			check("cancelling a lease", cl.Cancel(ctx, l.ID))
		}
		return ops
	}
	before := forwarded()
	ops := writes(b)
	if after := forwarded(); !maps.Equal(before, after) {
		t.Errorf("%d writes through node-b for its own shard: requests forwarded between the nodes: %v, before %v; want none", ops, after, before)
	}
	// Through node-c, the same client's writes go to node-b alone.
	before = forwarded()
	ops = writes(c)
	after := forwarded()
	if after["node-a api"] != before["node-a api"] || after["node-a shard"] != before["node-a shard"] {
		t.Errorf("writes through node-c for node-b's shard reached the holder of the store: %v, before %v", after, before)
	}
	if got := after["node-b shard"] - before["node-b shard"]; got != ops {
		t.Errorf("writes through node-c for node-b's shard: %d forwarded to node-b, want %d", got, ops)
	}
}

// One lookup service new to a node holding k shards, each with lookup
// discovery registrations interested in its group, is contacted once
// (not once per shard's engine), and every registration is told of it.
func TestClusterContactsOnce(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	// One node, multicast on the site's LAN: it holds the store and
	// every shard.
	a := s.start(t, "node-a", nil, nil)
	a.serving(t)
	s.allShardsHeldBy(t, 1)
	type registration struct {
		id   string
		sink *jinidtest.Sink
	}
	var regs []registration
	shards := map[int]bool{}
	for i := 0; len(shards) < 4; i++ {
		if i == 16 {
			t.Fatalf("16 clients' registrations in %d shards, want 4", len(shards))
		}
		h := s.lab.Host(fmt.Sprintf("client%d", i))
		ip := h.Attach(s.lan).IPv4.String()
		sink := jinidtest.NewSink(t, h, ip)
		r, err := jinidtest.LabClient(t, h, a.api).LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL + "/lds", Duration: 600_000})
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, registration{r.ID, sink})
		shards[cluster.Of(r.ID)] = true
	}
	lh := s.lab.Host("lus")
	lh.Attach(s.lan)
	id := discovery.ServiceID{0x4b, 1}
	lus, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: 2, ServiceID: id, Groups: []string{"lab"},
		Namespace: lh.Namespace(), Announce: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lus.Close)
	for _, r := range regs {
		testenv.Until(t, "registration "+r.id+" told of the new lookup service", func() bool {
			for _, e := range r.sink.Events("/lds") {
				if strings.Contains(fmt.Sprint(e), id.String()) {
					return true
				}
			}
			return false
		})
	}
	if n := lus.Contacts(); n != 1 {
		t.Errorf("a lookup service new to %d registrations in %d shards of one node contacted %d times, want once", len(regs), len(shards), n)
	}
}

package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/regcheck"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
)

// readStaleness is the bound docs/cluster.md promises: a read at any
// node reflects every change committed at least this long before it.
const readStaleness = time.Second

// The cluster's promises under injected failures, checked on what its
// clients saw (as etcd's robustness tests check etcd): clients on hosts
// of their own register, register again, change the attributes of,
// cancel and look up items by ServiceID through random nodes, while
// nodes are killed and started again (the holder too), a node is cut
// off from etcd, a node is cut off from the other nodes, and the etcd
// leader is killed. The registry's
// history must be linearizable, reads at any node allowed the
// staleness bound; the leases the renewal service keeps meanwhile must
// neither lapse nor be renewed by two nodes at once; every event a node
// acknowledged to a push mailbox must reach its target.
//
// The short run (about 40 s of operations) is in the suite;
// JINID_ROBUSTNESS_ROUNDS=N repeats its schedule N times (make
// robustness runs 5).
func TestClusterRobustness(t *testing.T) {
	t.Parallel()
	rounds := 1
	if v := os.Getenv("JINID_ROBUSTNESS_ROUNDS"); v != "" {
		fmt.Sscan(v, &rounds)
	}
	s := newClusterSite(t)
	g := newLeaseGrantor(t, s, 10*time.Second)
	margin := []string{"--renewal-margin", "6s"}
	nodes := map[string]*clusterNode{}
	nodes["node-a"] = s.node(t, "node-a", margin...)
	nodes["node-a"].serving(t)
	for _, name := range []string{"node-b", "node-c"} {
		nodes[name] = s.node(t, name, margin...)
		nodes[name].waiting(t)
	}
	s.allShardsHeldBy(t, 3)
	keepLeases(t, s, nodes["node-a"], g, 100)
	apis := []string{nodes["node-a"].api, nodes["node-b"].api, nodes["node-c"].api}
	// A push mailbox, fed events through random nodes: every event a
	// node acknowledged must reach its target.
	_, sink, listener := s.pushMailbox(t, nodes["node-a"])
	var acked robustAcks

	var hist robustHistory
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 6 {
		h := s.lab.Host(fmt.Sprintf("robust%d", i))
		h.Attach(s.lan)
		var cs []*client.Client
		for _, api := range apis {
			cs = append(cs, jinidtest.LabClient(t, h, api))
		}
		wg.Go(func() { robustClient(ctx, t, i, cs, &hist) })
	}
	wg.Go(func() { feedMailbox(ctx, s, apis, listener, &acked) })
	defer func() {
		stop()
		wg.Wait()
	}()

	// load lets the clients have n more operations acknowledged: the
	// workload runs through each fault.
	load := func(n int) { hist.grow(t, n) }
	holder := func() *clusterNode {
		var st clusterStatus
		var last time.Time
		testenv.Until(t, "a node holding the store", func() bool {
			if time.Since(last) < 200*time.Millisecond {
				return false
			}
			last = time.Now()
			st, _ = s.status(t)
			return nodes[st.Holder] != nil
		})
		return nodes[st.Holder]
	}
	standby := func() *clusterNode {
		h := holder()
		for _, name := range []string{"node-a", "node-b", "node-c"} {
			if nodes[name] != h {
				return nodes[name]
			}
		}
		return nil
	}
	restart := func(n *clusterNode) {
		nodes[n.name] = s.restart(t, n)
		nodes[n.name].waiting(t)
	}
	// Each scenario is a phase of the schedule: its operations are
	// counted apart, and each must have some acknowledged.
	type phase struct {
		name     string
		from, to time.Time
	}
	var phases []phase
	begin := func(name string) {
		now := time.Now()
		if len(phases) > 0 {
			phases[len(phases)-1].to = now
		}
		phases = append(phases, phase{name: name, from: now})
	}
	var faults []string
	for range rounds {
		begin("no fault")
		load(600)

		victim := standby()
		faults = append(faults, "SIGKILL "+victim.name+" (waiting)")
		begin("a waiting node SIGKILLed")
		victim.Kill()
		load(300)
		begin("a waiting node restarted")
		restart(victim)
		load(150)

		old := holder()
		faults = append(faults, "SIGKILL "+old.name+" (holding the store)")
		begin("the holder SIGKILLed")
		old.Kill()
		testenv.Until(t, "another node holding the store", func() bool { st, _ := s.status(t); return st.Holder != "" && st.Holder != old.name })
		load(300)
		restart(old)

		cut := standby()
		faults = append(faults, "cut "+cut.name+" off from etcd")
		begin("a node cut off from etcd")
		s.cutOff(cut)
		s.goneFromMembers(t, cut) // past its lease: it stopped acting, and the others took its shards
		cut.Kill()
		for _, ip := range s.etcdIPs {
			cut.h.Heal(ip)
		}
		load(150)
		restart(cut)

		lone := standby()
		faults = append(faults, "cut "+lone.name+" off from the other nodes")
		begin("a node cut off from the other nodes")
		var others []*clusterNode
		for _, n := range nodes {
			if n != lone {
				others = append(others, n)
				lone.h.CutOff(lone.link, n.link.IPv4)
				n.h.CutOff(n.link, lone.link.IPv4)
			}
		}
		// Through the lone node, changes wait for the client's
		// deadline: a few operations, not the usual count.
		load(20)
		for _, n := range others {
			lone.h.Heal(n.link.IPv4)
			n.h.Heal(lone.link.IPv4)
		}
		begin("healed")
		load(600)

		// An etcd member lost and started again, then the leader: the
		// cluster goes on with two of its three members each time.
		for _, leader := range []bool{false, true} {
			member := -1
			testenv.Until(t, "an etcd leader elected", func() bool {
				st, _ := s.status(t)
				for _, m := range st.Etcd {
					// The members are named m0, m1, m2 as s.etcd has them
					// (the status lists them in etcd's order, by ID).
					if (m.Leader == "leader") == leader && m.State == "healthy" {
						_, err := fmt.Sscanf(m.Name, "m%d", &member)
						return err == nil && member >= 0 && member < len(s.etcd)
					}
				}
				return false
			})
			what := "an etcd follower"
			if leader {
				what = "the etcd leader"
			}
			faults = append(faults, fmt.Sprintf("SIGKILL %s (m%d), started again", what, member))
			begin(what + " SIGKILLed")
			s.etcd[member].Kill()
			load(600)
			begin(what + " started again")
			s.etcd[member].Restart(t)
			load(300)
		}
	}
	stop()
	wg.Wait()
	phases[len(phases)-1].to = time.Now()

	ops := hist.ops()
	began := time.Now()
	r := regcheck.Check(ops, 2*time.Minute)
	checked := time.Since(began)
	counts := map[regcheck.Outcome]int{}
	for _, o := range ops {
		counts[o.Outcome]++
	}
	t.Logf("faults: %s", strings.Join(faults, "; "))
	for _, p := range phases {
		c := map[regcheck.Outcome]int{}
		for _, o := range ops {
			if !o.Start.Before(p.from) && o.Start.Before(p.to) {
				c[o.Outcome]++
			}
		}
		t.Logf("  %-40s %6v: %4d done, %3d failed, %2d unknown", p.name, p.to.Sub(p.from).Round(100*time.Millisecond),
			c[regcheck.Done], c[regcheck.Failed], c[regcheck.Unknown])
		if c[regcheck.Done] == 0 {
			t.Errorf("%s: no operation acknowledged", p.name)
		}
	}
	t.Logf("%d operations (%d done, %d failed, %d of unknown outcome), %d checked in %v: linearizable %v",
		len(ops), counts[regcheck.Done], counts[regcheck.Failed], counts[regcheck.Unknown], r.Checked, checked.Round(time.Millisecond), r.Linearizable)
	if r.TimedOut || !r.Linearizable {
		t.Errorf("the registry's history is not linearizable (reads allowed %v of staleness): timed out %v", readStaleness, r.TimedOut)
		// Which item's history fails, and what it was: for the next look.
		byKey := map[string][]regcheck.Op{}
		for _, o := range ops {
			byKey[o.Key] = append(byKey[o.Key], o)
		}
		for key, kops := range byKey {
			if kr := regcheck.Check(kops, 10*time.Second); kr.Linearizable {
				continue
			}
			t.Logf("item %s: its %d operations are not linearizable:", key, len(kops))
			for _, o := range kops {
				t.Logf("  %s  %s .. %s", o, o.Start.Format("15:04:05.000000"), o.End.Format("15:04:05.000000"))
			}
		}
	}
	if counts[regcheck.Done] < 200 {
		t.Errorf("only %d operations acknowledged: the workload did not run", counts[regcheck.Done])
	}
	g.check(t)
	if d := g.doubleRenewals(time.Second); len(d) > 0 {
		t.Errorf("%d leases renewed by two nodes within a second, the first: %s", len(d), d[0])
	}
	// Every event acknowledged is pushed (again only as EM allows: the
	// same source, event ID and sequence number).
	want := acked.list()
	pushed := func() map[int]int { return pushedBySeq(sink) }
	var last time.Time
	testenv.Until(t, fmt.Sprintf("the %d events acknowledged pushed", len(want)), func() bool {
		if time.Since(last) < 100*time.Millisecond {
			return false
		}
		last = time.Now()
		got := pushed()
		return !slices.ContainsFunc(want, func(seq int) bool { return got[seq] == 0 })
	})
	dups := 0
	for _, n := range pushed() {
		dups += n - 1
	}
	t.Logf("mailbox: %d events acknowledged, all pushed, %d pushed twice", len(want), dups)
	if len(want) < 100 {
		t.Errorf("only %d events acknowledged: the feed did not run", len(want))
	}
}

// robustAcks are the sequence numbers of the events a node acknowledged.
type robustAcks struct {
	mu   sync.Mutex
	seqs []int
}

func (a *robustAcks) add(seq int) {
	a.mu.Lock()
	a.seqs = append(a.seqs, seq)
	a.mu.Unlock()
}

func (a *robustAcks) list() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seqs)
}

// feedMailbox posts events, numbered on, to the mailbox listener at path
// of a random node of apis, from the site's client host, until ctx ends,
// noting those a node acknowledged.
func feedMailbox(ctx context.Context, s *clusterSite, apis []string, path string, acked *robustAcks) {
	tr := &http.Transport{DialContext: jinidtest.DialFrom(s.client)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	pick := func(n int) int { v, _ := rand.Int(rand.Reader, big.NewInt(int64(n))); return int(v.Int64()) }
	for seq := 1; ctx.Err() == nil; seq++ {
		body := fmt.Sprintf(`{"type":"RemoteEvent","source":{"service":"robust","id":"feed"},"eventID":7,"seqNum":%d}`, seq)
		resp, err := hc.Post(apis[pick(len(apis))]+path, "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				acked.add(seq)
			}
		}
		time.Sleep(20 * time.Millisecond) // time is the subject: an event source's pace
	}
}

// robustHistory is the clients' operations, as they saw them.
type robustHistory struct {
	mu   sync.Mutex
	all  []regcheck.Op
	done int // how many were acknowledged
}

func (h *robustHistory) add(o regcheck.Op) {
	h.mu.Lock()
	h.all = append(h.all, o)
	if o.Outcome == regcheck.Done {
		h.done++
	}
	h.mu.Unlock()
}

// grow waits until the clients had n more operations acknowledged (a
// run of fast refusals, while the cluster recovers, is no workload).
func (h *robustHistory) grow(t *testing.T, n int) {
	t.Helper()
	done := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.done
	}
	want := done() + n
	// The clients go at the pace the machine allows: what must not
	// happen is that they stop being served, so each operation
	// acknowledged starts the wait anew.
	last := -1
	for {
		var now int
		testenv.Until(t, fmt.Sprintf("%d more operations of the clients acknowledged (none meanwhile)", n), func() bool {
			now = done()
			return now >= want || now > last
		})
		if now >= want {
			return
		}
		last = now
	}
}

// found counts the reads begun after since that found their item.
func (h *robustHistory) found(since time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, o := range h.all {
		if o.Kind == regcheck.Get && o.Found && o.Start.After(since) {
			n++
		}
	}
	return n
}

// goneFromMembers waits until node n is no member any more (its etcd
// lease ended) and every shard is held by the others.
func (s *clusterSite) goneFromMembers(t *testing.T, n *clusterNode) {
	t.Helper()
	var last time.Time
	testenv.Until(t, n.name+" gone from the members, its shards held by the others", func() bool {
		if time.Since(last) < 200*time.Millisecond {
			return false
		}
		last = time.Now()
		st, _ := s.status(t)
		return st.ShardsHeld == cluster.Count && !slices.ContainsFunc(st.Nodes, func(m statusNode) bool { return m.Node == n.name })
	})
}

func (h *robustHistory) ops() []regcheck.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.all)
}

// robustClient is client id: three items of its own, registered, registered
// again with a new Name, cancelled and looked up through random nodes
// (cs) until ctx ends.
func robustClient(ctx context.Context, t *testing.T, id int, cs []*client.Client, h *robustHistory) {
	keys := make([]string, 3)
	leases := map[string]string{}
	for i := range keys {
		sid, err := discovery.RandomServiceID(rand.Reader)
		if err != nil {
			t.Error(err)
			return
		}
		keys[i] = sid.String()
	}
	pick := func(n int) int { v, _ := rand.Int(rand.Reader, big.NewInt(int64(n))); return int(v.Int64()) }
	for n := 0; ctx.Err() == nil; n++ {
		c, key := cs[pick(len(cs))], keys[pick(len(keys))]
		// Each request has a deadline of its own: one cut short by the
		// end of the run is of unknown outcome, as any other.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		op := regcheck.Op{Client: id, Key: key, Start: time.Now()}
		switch k := pick(20); {
		case k < 6:
			op.Kind, op.Value = regcheck.Put, fmt.Sprintf("c%d-%d", id, n)
			if lease := put(rctx, c, &op); lease != "" {
				leases[key] = lease
			}
		case k < 9:
			op.Kind, op.Value = regcheck.Change, fmt.Sprintf("c%d-%d", id, n)
			named := apitypes.AttributeChange{Set: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": op.Value}}}}
			err := c.ChangeAttributes(rctx, key, named)
			var ae *client.Error
			switch {
			case err == nil:
				op.Found = true
			case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
				op.Outcome = regcheck.Done // done: nothing was there to change
			default:
				op.Outcome = writeOutcome(err)
			}
		case k < 10:
			op.Kind = regcheck.Delete
			lease, ok := leases[key]
			if !ok {
				cancel()
				continue
			}
			op.Outcome = writeOutcome(c.Cancel(rctx, lease))
		default:
			op.Kind, op.Slack = regcheck.Get, readStaleness
			get(rctx, c, &op)
		}
		op.End = time.Now()
		cancel()
		h.add(op)
	}
}

// put registers op.Key again with op.Value as its Name, and notes the
// outcome in op; it returns the lease, if acknowledged.
func put(ctx context.Context, c *client.Client, op *regcheck.Op) (lease string) {
	reg, err := c.Register(ctx, apitypes.Item{ServiceID: op.Key, Types: []string{"org.example.Robust"},
		Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": op.Value}}}}, 600_000)
	op.Outcome = writeOutcome(err)
	return reg.Lease.ID
}

// get looks op.Key up, noting what it found in op (a read that got no
// answer is failed: nothing to check).
func get(ctx context.Context, c *client.Client, op *regcheck.Op) {
	svc, err := c.Get(ctx, op.Key)
	var ae *client.Error
	switch {
	case err == nil:
		op.Found, op.Value = true, nameOf(svc.Item.Attributes)
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	default:
		op.Outcome = regcheck.Failed
	}
}

// writeOutcome sorts a write's error: none is done; a refusal (4xx), a
// connection refused, or a 503 that says the request was not sent is
// failed; anything else (a timeout, a 503 of a node that may have acted,
// a connection lost) is unknown.
func writeOutcome(err error) regcheck.Outcome {
	var ae *client.Error
	switch {
	case err == nil:
		return regcheck.Done
	case errors.As(err, &ae) && ae.Status < 500:
		return regcheck.Failed
	case errors.As(err, &ae) && strings.Contains(ae.Err.Message, "was not sent"):
		return regcheck.Failed
	case errors.Is(err, syscall.ECONNREFUSED):
		return regcheck.Failed
	}
	return regcheck.Unknown
}

// nameOf is the name of an item's Name attribute.
func nameOf(attrs []apitypes.Attribute) string {
	for _, a := range attrs {
		if a.Type == "net.jini.lookup.entry.Name" {
			if v, ok := a.Fields["name"].(string); ok {
				return v
			}
		}
	}
	return ""
}

// doubleRenewals lists the leases two nodes renewed within window of
// each other.
func (g *leaseGrantor) doubleRenewals(window time.Duration) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	type renewal struct {
		at   time.Time
		from string
	}
	last := map[string]renewal{}
	var out []string
	for _, c := range g.calls {
		for _, id := range c.ids {
			if p, ok := last[id]; ok && p.from != c.from.String() && c.at.Sub(p.at) < window {
				out = append(out, fmt.Sprintf("%s by %s and %s %v apart", id, p.from, c.from, c.at.Sub(p.at).Round(time.Millisecond)))
			}
			last[id] = renewal{at: c.at, from: c.from.String()}
		}
	}
	return out
}

// The checker can fail: a build whose nodes answer reads from their
// copy without etcd's confirmation that it is current (the fault
// fault_stale_reads) serves stale reads at a node cut off from
// etcd, and the history is not linearizable within the staleness bound.
// (The real build in the same scenario: TestClusterRobustness, whose
// schedule cuts a node off from etcd while reads go to every node.)
func TestRobustnessCatchesStaleReads(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	s.bin = jinidtest.FaultBinary(t, "stale_reads")
	// A lease of 10 s: the node cut off from etcd acts (and reads from
	// its copy) for 8 s more, time for reads well past the bound.
	a, b := s.pair(t, "--etcd-lease-ttl", "10s")
	h := s.lab.Host("client2")
	h.Attach(s.lan)
	cw, cr := jinidtest.LabClient(t, h, a.api), jinidtest.LabClient(t, h, b.api)
	sid, err := discovery.RandomServiceID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := sid.String()
	var hist robustHistory
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { // writes through the holder
		for n := 0; ctx.Err() == nil; n++ {
			op := regcheck.Op{Client: 0, Kind: regcheck.Put, Key: key, Value: fmt.Sprintf("v%d", n), Start: time.Now()}
			put(context.Background(), cw, &op)
			op.End = time.Now()
			hist.add(op)
			// Time is the subject: a write every 200 ms, so that a
			// read's second of slack spans a few (the checker's search
			// stays small).
			time.Sleep(200 * time.Millisecond)
		}
	})
	wg.Go(func() { // reads through the node that will be cut off
		for ctx.Err() == nil {
			op := regcheck.Op{Client: 1, Kind: regcheck.Get, Key: key, Slack: readStaleness, Start: time.Now()}
			get(context.Background(), cr, &op)
			op.End = time.Now()
			hist.add(op)
			// Time is the subject: a read every 250 ms, so that few
			// reads are concurrent within a read's slack (each subset of
			// them is a state of the checker's search of its own).
			time.Sleep(250 * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()
	testenv.Until(t, "the item read through "+b.name, func() bool { return hist.found(time.Time{}) >= 3 })
	s.cutOff(b)
	// Its copy is stale from the cut on: reads well past the staleness
	// bound, answered.
	cut := time.Now()
	testenv.Until(t, "reads through "+b.name+" answered past the bound after the cut", func() bool {
		return hist.found(cut.Add(readStaleness+readStaleness/2)) >= 6
	})
	stop()
	wg.Wait()
	ops := hist.ops()
	began := time.Now()
	r := regcheck.Check(ops, time.Minute)
	t.Logf("%d operations, %d checked in %v: linearizable %v", len(ops), r.Checked, time.Since(began).Round(time.Millisecond), r.Linearizable)
	if r.TimedOut || r.Linearizable {
		t.Errorf("linearizable %v (timed out %v): the stale reads of the faulty build not caught", r.Linearizable, r.TimedOut)
	}
}

// pushedBySeq counts the events sink was pushed at /push, by sequence
// number.
func pushedBySeq(sink *jinidtest.Sink) map[int]int {
	got := map[int]int{}
	for _, e := range sink.Events("/push") {
		if n, ok := e["seqNum"].(float64); ok {
			got[int(n)]++
		}
	}
	return got
}

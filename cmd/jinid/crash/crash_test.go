package crash

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// Under a steady stream of registrations the daemon is killed (SIGKILL)
// at random moments, 20 times. After each restart every registration the
// client saw acknowledged is there, whole; nothing the client did not send
// appears; what was in flight is either wholly there or not at all; and
// event sequence numbers never go backwards.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	l := jinidtest.NewSink(t, nil, "")

	type sent struct {
		item  apitypes.Item
		acked bool
	}
	all := map[string]*sent{}
	var notifyID int64
	for round := 0; round < 20; round++ {
		d := jinidtest.StartDaemon(t, bin, dir)
		c, err := client.New(d.API, freshHTTP(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()

		// What survived the last kill.
		items, err := c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		present := map[string]apitypes.Item{}
		for _, it := range items {
			if !ownService(it) {
				present[it.ServiceID] = it
			}
		}
		for id, s := range all {
			it, ok := present[id]
			if s.acked && !ok {
				t.Fatalf("round %d: acknowledged registration %s lost", round, id)
			}
			if ok && (len(it.Attributes) != 1 || it.Attributes[0].Fields["n"] != s.item.Attributes[0].Fields["n"]) {
				t.Fatalf("round %d: registration %s half-applied: %+v", round, id, it)
			}
			if ok {
				svc, err := c.Get(ctx, id)
				if err != nil || svc.Expiration <= time.Now().UnixMilli() {
					t.Fatalf("round %d: registration %s without a live lease: %+v %v", round, id, svc, err)
				}
				s.acked = true // it is there: from now on it must stay
			}
		}
		for id := range present {
			if all[id] == nil {
				t.Fatalf("round %d: registration %s that was never sent", round, id)
			}
		}
		if round == 0 {
			n, err := c.Notify(ctx, client.NotifyRequest{Transitions: []string{apitypes.NoMatchMatch},
				Listener: l.URL, Duration: 3_600_000})
			if err != nil {
				t.Fatal(err)
			}
			notifyID = n.EventID
		}

		// A steady stream of registrations until the kill.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id, _ := discovery.RandomServiceID(crand.Reader)
				it := apitypes.Item{ServiceID: id.String(), Types: []string{"com.example.Thing"},
					Attributes: []apitypes.Attribute{{Type: "com.example.N", Fields: map[string]any{"n": float64(round*100000 + i)}}}}
				s := &sent{item: it}
				mu.Lock()
				all[it.ServiceID] = s
				mu.Unlock()
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := c.Register(rctx, it, 3_600_000)
				cancel()
				if err != nil {
					return // the daemon is gone
				}
				mu.Lock()
				s.acked = true
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond) // a random moment to crash
		d.Kill()
		close(stop)
		wg.Wait()
	}
	acked := 0
	for _, s := range all {
		if s.acked {
			acked++
		}
	}
	if acked < 100 {
		t.Fatalf("only %d registrations acknowledged in 20 rounds: the stream was not steady", acked)
	}
	// Sequence numbers of the notify registration's events, in the order
	// the listener received them, across every restart.
	var seqs []int64
	for _, ev := range l.Events("") {
		if int64(ev["eventID"].(float64)) == notifyID {
			seqs = append(seqs, int64(ev["seqNum"].(float64)))
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("sequence number went from %d to %d", seqs[i-1], seqs[i])
		}
	}
	t.Logf("20 kills: %d registrations acknowledged and all kept; %d events with rising sequence numbers (last %d)", acked, len(seqs), slices.Max(seqs))
}

// TestRenewalCrash kills the renewing daemon at random moments and brings
// it back at once: no client lease due for renewal expires because of the
// crashes.
func TestRenewalCrash(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	grantor := jinidtest.StartDaemon(t, bin, t.TempDir())
	defer grantor.Stop(t)
	dir := t.TempDir()
	renewer := jinidtest.StartDaemon(t, bin, dir, "--renewal-margin", "3s")
	g, _ := client.New(grantor.API, freshHTTP(30*time.Second))
	r, _ := client.New(renewer.API, freshHTTP(30*time.Second))
	set, err := r.RenewalCreate(t.Context(), 3_600_000)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var ids []string
	for i := range n {
		reg, err := g.Register(t.Context(), apitypes.Item{Types: []string{"com.example.Kept"}}, 4000+int64(i)*100)
		if err != nil {
			t.Fatal(err)
		}
		// Renewed 4 s at a time: due every 2 s, so the kills land in
		// renewal windows.
		four := int64(4000)
		if err := r.RenewFor(t.Context(), set.ID, reg.Lease, 3_600_000, &four); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ServiceID)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(20 * time.Second)
	kills := 0
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond) // a random moment to crash
		renewer.Kill()
		kills++
		renewer = jinidtest.StartDaemon(t, bin, dir, "--renewal-margin", "3s")
		for _, id := range ids {
			if _, err := g.Get(t.Context(), id); err != nil {
				t.Fatalf("after %d kills: registration %s lapsed: %v\n%s", kills, id, err, renewer.Log())
			}
		}
	}
	renewer.Stop(t)
	t.Logf("%d kills, all %d leases kept", kills, n)
	if !strings.Contains(renewer.Log(), "jinid started") || kills < 5 {
		t.Fatalf("only %d kills", kills)
	}
}

// TestMailboxCrash posts events from several sources concurrently while
// the daemon is SIGKILLed at random moments (and restarted at once, on
// the same port): afterwards every event the mailbox acknowledged is
// pulled exactly once, none twice, and each source's in the order sent.
func TestMailboxCrash(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	addr := jinidtest.FreeAddr(t)
	d := jinidtest.StartDaemon(t, bin, dir, "--api-listen", addr)
	c, _ := client.New(d.API, freshHTTP(30*time.Second))
	reg, err := c.MailboxRegister(t.Context(), 3_600_000, true)
	if err != nil {
		t.Fatal(err)
	}
	const sources = 4
	var mu sync.Mutex
	acked := map[string]map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	hc := freshHTTP(2 * time.Second)
	for s := range sources {
		acked[fmt.Sprintf("s%d", s)] = map[int]bool{}
	}
	// The map is whole before any poster reads it: adding a source while
	// one posts was the race CI's race detector found.
	for s := range sources {
		src := fmt.Sprintf("s%d", s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"source":{"service":"crash","id":%q},"eventID":1,"seqNum":%d,"type":"T","handback":null}`, src, seq)
				resp, err := hc.Post(reg.Listener.URL, "application/json", strings.NewReader(body))
				if err != nil {
					time.Sleep(20 * time.Millisecond) // down: the next one may or may not be stored
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == 204 {
					mu.Lock()
					acked[src][seq] = true
					mu.Unlock()
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const kills = 20
	for range kills {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond) // a random moment to crash
		d.Kill()
		d = jinidtest.StartDaemon(t, bin, dir, "--api-listen", addr)
	}
	// The stream runs on after the last restart: until the restarted
	// daemon has acknowledged more.
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, seqs := range acked {
			n += len(seqs)
		}
		return n
	}
	before := count()
	testenv.Until(t, "notifications acknowledged after the last restart", func() bool { return count() > before+sources })
	close(stop)
	wg.Wait()
	defer d.Stop(t)

	it, err := c.MailboxIterator(t.Context(), reg.ID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[int]bool{}
	last := map[string]int{}
	total := 0
	for {
		raw, err := c.MailboxNext(t.Context(), reg.ID, it, 500)
		if err != nil {
			t.Fatal(err)
		}
		if raw == nil {
			break
		}
		var ev struct {
			Source struct {
				ID string `json:"id"`
			} `json:"source"`
			SeqNum int `json:"seqNum"`
		}
		json.Unmarshal(raw, &ev)
		src := ev.Source.ID
		if seen[src] == nil {
			seen[src] = map[int]bool{}
		}
		if seen[src][ev.SeqNum] {
			t.Fatalf("%s seq %d pulled twice", src, ev.SeqNum)
		}
		if ev.SeqNum <= last[src] {
			t.Fatalf("%s seq %d after %d: out of order", src, ev.SeqNum, last[src])
		}
		seen[src][ev.SeqNum], last[src] = true, ev.SeqNum
		total++
	}
	nacked := 0
	for src, m := range acked {
		for seq := range m {
			nacked++
			if !seen[src][seq] {
				t.Errorf("%s seq %d was acknowledged but never pulled", src, seq)
			}
		}
	}
	t.Logf("%d kills; %d events acknowledged, %d pulled (the rest were in flight at a kill)", kills, nacked, total)
	if nacked < 100 {
		t.Fatalf("only %d events acknowledged: the test did not exercise much", nacked)
	}
}

// freshHTTP is a client of the test's own that opens a connection per
// request. The daemon is killed under these requests many times: with
// no connection kept or shared (not even http.DefaultTransport's pool,
// with the package's other tests), a request is never retried on a
// dead connection behind the test's back, and what was acknowledged is
// exactly what a 2xx answered.
func freshHTTP(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// ownService tells jinid's own services, as Java finds them (its helper
// services, with River's proxy classes), from the test's registrations.
func ownService(it apitypes.Item) bool {
	var svc struct{ Service, API string }
	return len(it.Types) > 0 && strings.HasPrefix(it.Types[0], "org.apache.river.") &&
		json.Unmarshal(it.Service, &svc) == nil && strings.HasPrefix(svc.API, "/v1/")
}

package e2e

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

// crashStage is when a kill happens, relative to one commit.
type crashStage int

const (
	atRandom       crashStage = iota // after a random pause, wherever the stream is
	beforeDecision                   // the last participant is being asked to prepare
	afterDurable                     // a participant hears commit: the decision is on disk
	midwayCommits                    // a second participant is being told commit
)

func (s crashStage) String() string {
	return [...]string{"at a random moment", "before the decision", "right after the decision is durable", "midway through the commit calls"}[s]
}

// recorder is a participant that votes PREPARED (the second one, ABORTED
// on about one transaction in eight) and records, per
// transaction, what the manager told it. The test's gate sees each call
// first: it may refuse it (503, not recorded: the participant did not
// hear it) or have the manager SIGKILLed once the call is recorded.
type recorder struct {
	index int
	gate  func(index int, op apitypes.ParticipantOp, id string) (refuse, kill bool)
	kill  func()

	mu                        sync.Mutex
	prepared, commits, aborts map[string]int
}

func newRecorder(t *testing.T, index int, gate func(int, apitypes.ParticipantOp, string) (bool, bool), kill func()) (*recorder, string) {
	r := &recorder{index: index, gate: gate, kill: kill, prepared: map[string]int{}, commits: map[string]int{}, aborts: map[string]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL + "/tx"
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var cb apitypes.ParticipantCall
	if err := json.NewDecoder(req.Body).Decode(&cb); err != nil {
		http.Error(w, "bad callback", http.StatusBadRequest)
		return
	}
	refuse, kill := r.gate(r.index, cb.Op, cb.ID)
	if refuse {
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	switch cb.Op {
	case apitypes.OpPrepare:
		r.prepared[cb.ID]++
	case apitypes.OpPrepareAndCommit: // answered COMMITTED below
		r.prepared[cb.ID]++
		r.commits[cb.ID]++
	case apitypes.OpCommit:
		r.commits[cb.ID]++ // rolled forward, whether or not the answer arrives
	case apitypes.OpAbort:
		r.aborts[cb.ID]++
	}
	r.mu.Unlock()
	if kill {
		r.kill()
	}
	w.Header().Set("Content-Type", "application/json")
	switch cb.Op {
	case apitypes.OpPrepare:
		if r.index == 1 && strings.ContainsAny(cb.ID[len(cb.ID)-1:], "07") {
			io.WriteString(w, `{"vote":"ABORTED"}`) // one in eight, about
			return
		}
		io.WriteString(w, `{"vote":"PREPARED"}`)
	case apitypes.OpPrepareAndCommit:
		io.WriteString(w, `{"vote":"COMMITTED"}`)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// told reports what the participant heard of transaction id.
func (r *recorder) told(id string) (prepared, committed, aborted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prepared[id] > 0, r.commits[id] > 0, r.aborts[id] > 0
}

// outcome is what the client was told of a commit.
type outcome int

const (
	sawNothing   outcome = iota // the call failed: the daemon died under it
	sawCommitted                // 200 COMMITTED
	sawAborted                  // 409 CannotCommit
)

// The transaction manager's commit point survives SIGKILL. Under a
// steady stream of transactions with three participants each, the daemon
// is killed 20 times, five at each stage of a commit, and restarted on
// the same store and address. In the end no participant heard both commit
// and abort of one transaction, every transaction a client saw commit was
// committed at each participant, none a client saw abort was committed
// anywhere, a transaction committed anywhere was committed everywhere,
// and one nobody heard commit reads as unknown (presumed abort), never
// COMMITTED.
func TestTransactionsSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	addr := jinidtest.FreeAddr(t)
	api := "http://" + addr

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	var (
		current atomic.Pointer[jinidtest.Daemon]
		armed   atomic.Int32 // the stage whose trigger kills, or -1
		fired   = make(chan struct{}, 1)
		gateMu  sync.Mutex
		first   = map[string]int{}  // commit calls let through per transaction, ever
		held    = map[string]bool{} // commits refused until checked after the restart
	)
	armed.Store(-1)
	kill := func() {
		if d := current.Load(); d != nil {
			d.Kill()
		}
	}
	// gate arms the kill of the stage armed. A kill in the commit calls
	// holds the transaction's other commit calls (503) until recovered
	// has checked it, so that it is still rolling forward then.
	gate := func(index int, op apitypes.ParticipantOp, id string) (refuse, now bool) {
		gateMu.Lock()
		defer gateMu.Unlock()
		if op == apitypes.OpCommit && held[id] {
			return true, false
		}
		// Commit calls are counted whether or not a kill is armed: one
		// armed while a transaction's calls are under way must not take
		// its last call for its first, or all three participants hear
		// commit and nothing is left rolling forward.
		n := 0
		if op == apitypes.OpCommit {
			n = first[id]
			first[id]++
		}
		stage := crashStage(armed.Load())
		switch {
		case stage == beforeDecision && op == apitypes.OpPrepare && index == 2:
			now = true
		case op == apitypes.OpCommit:
			now = stage == afterDurable && n == 0 || stage == midwayCommits && n == 1
		}
		if !now || !armed.CompareAndSwap(int32(stage), -1) {
			return false, false
		}
		if op == apitypes.OpCommit {
			held[id] = true
		}
		return false, true
	}
	killed := func() {
		kill()
		fired <- struct{}{}
	}
	var ps []*recorder
	var urls []string
	for i := range 3 {
		p, u := newRecorder(t, i, gate, killed)
		ps, urls = append(ps, p), append(urls, u)
	}

	start := func() {
		t.Helper()
		current.Store(jinidtest.StartDaemon(t, bin, dir, "--api-listen", addr))
	}
	start()

	// The stream: four clients, each creating, joining the three and
	// committing, again and again.
	var (
		outMu    sync.Mutex
		outcomes = map[string]outcome{}
		stop     = make(chan struct{})
		clients  sync.WaitGroup
	)
	hc := &http.Client{Timeout: 20 * time.Second}
	post := func(path, body string, out any) (int, error) {
		resp, err := hc.Post(api+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if out != nil {
			json.Unmarshal(raw, out)
		}
		return resp.StatusCode, nil
	}
	get := func(path string, out any) (int, error) {
		resp, err := hc.Get(api + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out)
	}
	checkedPending := 0
	one := func() {
		var created struct{ ID string }
		if code, err := post("/v1/transactions", `{"leaseDuration":60000}`, &created); err != nil || code != 200 {
			select { // the daemon is restarting: try again a little later
			case <-stop:
			case <-time.After(5 * time.Millisecond):
			}
			return
		}
		for _, u := range urls {
			if code, err := post("/v1/transactions/"+created.ID+"/participants", `{"participant":{"url":"`+u+`"},"crashCount":1}`, nil); err != nil || code != 204 {
				return
			}
		}
		outMu.Lock()
		outcomes[created.ID] = sawNothing
		outMu.Unlock()
		var st struct{ State string }
		code, err := post("/v1/transactions/"+created.ID+"/commit", `{}`, &st)
		o := sawNothing
		switch {
		case err == nil && code == 200 && st.State == "COMMITTED":
			o = sawCommitted
		case err == nil && code == 409:
			o = sawAborted
		}
		outMu.Lock()
		outcomes[created.ID] = o
		outMu.Unlock()
	}
	for range 4 {
		clients.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					one()
				}
			}
		})
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		clients.Wait()
	}()

	committedSoFar := func() int {
		outMu.Lock()
		defer outMu.Unlock()
		n := 0
		for _, o := range outcomes {
			if o == sawCommitted {
				n++
			}
		}
		return n
	}
	// recovered checks, right after a restart, that the daemon answers
	// COMMITTED for every transaction whose decision is known to be
	// durable (a client saw it commit, or a participant heard commit)
	// while a participant has yet to hear commit: recovery ran before
	// the API answered, so a participant recovering and asking never
	// hears "unknown transaction" for a committed one (TX.2.8.1).
	recovered := func(kill int) {
		t.Helper()
		outMu.Lock()
		var pending []string
		for id, o := range outcomes {
			some, all := o == sawCommitted, true
			for _, p := range ps {
				_, c, _ := p.told(id)
				some, all = some || c, all && c
			}
			if some && !all {
				pending = append(pending, id)
			}
		}
		outMu.Unlock()
		for _, id := range pending {
			var st struct{ State string }
			if code, err := get("/v1/transactions/"+id, &st); err != nil || code != 200 || st.State != "COMMITTED" {
				t.Errorf("after kill %d: committed transaction %s still rolling forward reads %d %q (%v), want COMMITTED", kill, id, code, st.State, err)
			}
		}
		checkedPending += len(pending)
		gateMu.Lock()
		clear(held)
		gateMu.Unlock()
	}
	for i := range 20 {
		stage := crashStage(i % 4)
		// Let the stream run between kills: a few more commits each time.
		before := committedSoFar()
		testenv.Until(t, "the stream commits again", func() bool { return committedSoFar() >= before+3 })
		if stage == atRandom {
			time.Sleep(time.Duration(rng.IntN(50_000)) * time.Microsecond) // a random moment to kill
			kill()
		} else {
			armed.Store(int32(stage))
			select {
			case <-fired:
			case <-time.After(15 * time.Second):
				t.Fatalf("kill %d (%s) never triggered:\n%s", i+1, stage, current.Load().Log())
			}
		}
		t.Logf("kill %d: %s", i+1, stage)
		start()
		recovered(i + 1)
	}
	before := committedSoFar()
	testenv.Until(t, "the stream commits after the last restart", func() bool { return committedSoFar() >= before+3 })
	close(stop)
	clients.Wait()

	outMu.Lock()
	defer outMu.Unlock()
	var ids []string
	for id := range outcomes {
		ids = append(ids, id)
	}
	// Every decision rolls forward: wait until each transaction that any
	// participant heard commit of, or a client saw commit, is committed
	// at all three.
	rolledForward := func(id string) bool {
		anyCommit, all := outcomes[id] == sawCommitted, true
		for _, p := range ps {
			_, c, _ := p.told(id)
			anyCommit = anyCommit || c
			all = all && c
		}
		return !anyCommit || all
	}
	testenv.Until(t, "every committed transaction rolled forward at every participant", func() bool {
		for _, id := range ids {
			if !rolledForward(id) {
				return false
			}
		}
		return true
	})
	counts := map[outcome]int{}
	for _, id := range ids {
		o := outcomes[id]
		counts[o]++
		committedAnywhere := false
		for i, p := range ps {
			prepared, c, a := p.told(id)
			if c && a {
				t.Errorf("transaction %s: participant %d heard both commit and abort", id, i)
			}
			if c && !prepared {
				t.Errorf("transaction %s: participant %d heard commit without having prepared", id, i)
			}
			if o == sawAborted && c {
				t.Errorf("transaction %s: the client saw it abort, participant %d committed", id, i)
			}
			committedAnywhere = committedAnywhere || c
		}
		if committedAnywhere {
			continue
		}
		// Nobody rolled it forward: the manager must not say COMMITTED
		// to a participant recovering and asking (TX.2.8.1).
		var st struct{ State string }
		if _, err := get("/v1/transactions/"+id, &st); err != nil && st.State == "" {
			// 404's body decodes too; only a failed request lands here.
			t.Fatal(err)
		}
		if st.State == "COMMITTED" {
			t.Errorf("transaction %s: COMMITTED, yet no participant heard commit", id)
		}
	}
	t.Logf("%d transactions: %d seen committed, %d seen aborted, %d cut off by a kill; %d read COMMITTED right after a restart while rolling forward",
		len(ids), counts[sawCommitted], counts[sawAborted], counts[sawNothing], checkedPending)
	// Each kill in the commit calls leaves its transaction rolling
	// forward (its other commits held), so at least ten were checked.
	if checkedPending < 10 {
		t.Errorf("%d transactions checked while rolling forward after a restart, want 10 or more", checkedPending)
	}
	if counts[sawCommitted] < 60 || counts[sawAborted] == 0 {
		t.Errorf("%d transactions committed, %d aborted: the stream hardly ran", counts[sawCommitted], counts[sawAborted])
	}
}

// A transaction nested across two real daemons: B's nested transaction
// joins A's parent through its link (so B's manager URL must be one A
// can call), B's commit promotes its participant into A's parent, and the
// participant hears A's prepare and commit.
func TestNestedAcrossDaemons(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	a := jinidtest.StartDaemon(t, bin, t.TempDir())
	b := jinidtest.StartDaemon(t, bin, t.TempDir())
	p, pURL := newRecorder(t, 0, func(int, apitypes.ParticipantOp, string) (bool, bool) { return false, false }, nil)
	hc := &http.Client{Timeout: 20 * time.Second}
	post := func(base, path, body string, out any) int {
		t.Helper()
		resp, err := hc.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if out != nil {
			json.Unmarshal(raw, out)
		}
		if resp.StatusCode/100 != 2 {
			t.Logf("POST %s%s: %d %s", base, path, resp.StatusCode, raw)
		}
		return resp.StatusCode
	}
	var parent, nested struct{ ID, Manager string }
	if post(a.API, "/v1/transactions", `{"leaseDuration":60000}`, &parent) != 200 {
		t.Fatal("create the parent")
	}
	if post(b.API, "/v1/transactions", `{"leaseDuration":60000,"parent":{"manager":"`+parent.Manager+`","id":"`+parent.ID+`"}}`, &nested) != 200 {
		t.Fatalf("create the nested transaction:\n%s", b.Log())
	}
	if post(b.API, "/v1/transactions/"+nested.ID+"/participants", `{"participant":{"url":"`+pURL+`"},"crashCount":1}`, nil) != 204 {
		t.Fatal("join")
	}
	var st struct{ State string }
	if post(b.API, "/v1/transactions/"+nested.ID+"/commit", `{}`, &st); st.State != "COMMITTED" {
		t.Fatalf("nested commit: %s", st.State)
	}
	if prepared, committed, _ := p.told(nested.ID); !prepared || committed {
		t.Fatalf("after the nested commit: prepared %v, committed %v", prepared, committed)
	}
	if post(a.API, "/v1/transactions/"+parent.ID+"/commit", `{"waitFor":10000}`, &st); st.State != "COMMITTED" {
		t.Fatalf("parent commit: %s", st.State)
	}
	if prepared, committed, aborted := p.told(parent.ID); !prepared || !committed || aborted {
		t.Fatalf("the promoted participant on the parent: prepared %v, committed %v, aborted %v", prepared, committed, aborted)
	}
	// What an operator sees: each daemon counted one commit (B's the
	// promotion), and the status page counts the transactions.
	for _, d := range []*jinidtest.Daemon{a, b} {
		for path, want := range map[string]string{
			"/metrics": `jinid_transactions_completed_total{outcome="committed"} 1`,
			"/":        "rolling forward",
		} {
			resp, err := hc.Get(d.API + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), want) {
				t.Errorf("%s%s lacks %q", d.API, path, want)
			}
		}
	}
}

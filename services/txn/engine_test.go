package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call is one participant call the fake saw.
type call struct {
	url string
	op  apitypes.ParticipantOp
}

// fakes are participants: each URL's answers by operation, in order (the
// last repeats), recorded as they are called. They fail the test on a
// call the manager must not make (TX.2.5): any call to a participant
// after it voted NOTCHANGED (it is dropped from the transaction), or
// commit to one that did not vote PREPARED.
type fakes struct {
	t       testing.TB
	voted   map[string]apitypes.Vote // url and transaction → the vote answered
	mu      sync.Mutex
	answers map[string]map[apitypes.ParticipantOp][]answer
	calls   []call
	block   map[string]chan struct{} // a URL's calls wait for this
}

type answer struct {
	vote apitypes.Vote
	err  error
}

var errDown = errors.New("connection refused")

func newFakes(t testing.TB) *fakes {
	return &fakes{t: t, voted: map[string]apitypes.Vote{}, answers: map[string]map[apitypes.ParticipantOp][]answer{}, block: map[string]chan struct{}{}}
}

func (f *fakes) on(url string, op apitypes.ParticipantOp, as ...answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answers[url] == nil {
		f.answers[url] = map[apitypes.ParticipantOp][]answer{}
	}
	f.answers[url][op] = as
}

func (f *fakes) Call(ctx context.Context, p Participant, op apitypes.ParticipantOp, id string, attempt int) (apitypes.Vote, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{p.URL, op})
	key := p.URL + " " + id
	switch vote, ok := f.voted[key]; {
	case ok && vote == apitypes.VoteNotChanged:
		f.t.Errorf("%s called (%v) on %s after it voted NOTCHANGED", p.URL, op, id)
	case op == apitypes.OpCommit && (!ok || vote != apitypes.VotePrepared):
		f.t.Errorf("%s told to commit %s without having voted PREPARED (vote %v, %v)", p.URL, id, vote, ok)
	}
	block := f.block[p.URL]
	as := f.answers[p.URL][op]
	var a answer
	switch {
	case len(as) > 0:
		a = as[0]
		if len(as) > 1 {
			f.answers[p.URL][op] = as[1:]
		}
	case op == apitypes.OpPrepare || op == apitypes.OpPrepareAndCommit:
		a = answer{vote: apitypes.VotePrepared}
		if op == apitypes.OpPrepareAndCommit {
			a.vote = apitypes.VoteCommitted
		}
	}
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if a.err == nil && (op == apitypes.OpPrepare || op == apitypes.OpPrepareAndCommit) {
		f.mu.Lock()
		f.voted[key] = a.vote
		f.mu.Unlock()
	}
	return a.vote, a.err
}

// seen lists the calls made of op (all ops when "").
func (f *fakes) seen(op apitypes.ParticipantOp) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if op == "" || c.op == op {
			out = append(out, c.url)
		}
	}
	slices.Sort(out)
	return out
}

// journal is an in-memory journal that counts its writes.
type journal struct {
	mu       sync.Mutex
	records  map[string][]Participant
	writes   int
	fail     error
	writing  chan struct{} // closed when a write begins
	block    chan struct{} // a write waits for this
	finished []string
	// before lists, at each write, the commit calls made so far.
	callsAtWrite []int
	f            *fakes
}

func (j *journal) Committed(id string, ps []Participant) error {
	if j.writing != nil {
		close(j.writing)
	}
	if j.block != nil {
		<-j.block
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return j.fail
	}
	if j.records == nil {
		j.records = map[string][]Participant{}
	}
	j.records[id] = slices.Clone(ps)
	j.writes++
	if j.f != nil {
		j.callsAtWrite = append(j.callsAtWrite, len(j.f.seen(apitypes.OpCommit)))
	}
	return nil
}

func (j *journal) Finished(id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.records, id)
	j.finished = append(j.finished, id)
	return nil
}

type rig struct {
	e *Engine
	f *fakes
	j *journal
	c *clock.Fake
}

func newRig(t *testing.T) *rig {
	t.Helper()
	f := newFakes(t)
	j := &journal{f: f}
	c := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := New(Config{Caller: f, Journal: j, Clock: c, PrepareFor: time.Minute, Backoff: time.Second, MaxBackoff: 4 * time.Second})
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return &rig{e: e, f: f, j: j, c: c}
}

// tx makes a transaction with participants a, b, c, ... (n of them).
func (r *rig) tx(t *testing.T, n int) string {
	t.Helper()
	id := r.e.Create()
	for i := range n {
		if err := r.e.Join(id, Participant{URL: fmt.Sprintf("p%d", i), CrashCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// commitAsync commits in the background; the result comes on the
// channel.
func (r *rig) commitAsync(id string, waitFor time.Duration) chan error {
	ch := make(chan error, 1)
	go func() { ch <- r.e.Commit(context.Background(), id, waitFor) }()
	return ch
}

// retriedUntilDone advances the fake clock past each retry's backoff
// until done answers: each time a retry's timer waits (one due within
// the rig's longest backoff, 4 s: another timer, the lease's, may wait
// meanwhile, and advancing on it alone would run protocol time past
// retries the engine, under load, has not yet set).
func (r *rig) retriedUntilDone(t *testing.T, done chan error) error {
	t.Helper()
	for range 50 {
		var err error
		finished := false
		testenv.Until(t, "a retry or the end", func() bool {
			select {
			case err = <-done:
				finished = true
				return true
			default:
				p := r.c.Pending()
				return len(p) > 0 && !p[0].After(r.c.Now().Add(4*time.Second))
			}
		})
		if finished {
			return err
		}
		r.c.Advance(4 * time.Second)
	}
	t.Fatal("still voting after 200 s of failures (PrepareFor 1 min)")
	return nil
}

// tick advances the fake clock by d once a timer waits.
func (r *rig) tick(t *testing.T, d time.Duration) {
	t.Helper()
	testenv.Until(t, "a timer pending", func() bool { return len(r.c.Pending()) > 0 })
	r.c.Advance(d)
}

// notified waits until every participant of a decided transaction was
// told its outcome (as commit and abort with waitFor do).
func (r *rig) notified(t *testing.T, id string) {
	t.Helper()
	r.e.mu.Lock()
	tx := r.e.txs[id]
	r.e.mu.Unlock()
	if tx == nil {
		t.Fatalf("no transaction %s", id)
	}
	select {
	case <-tx.notified:
	case <-time.After(5 * time.Second):
		t.Fatal("the participants were not all told the outcome within 5 s")
	}
}

func state(t *testing.T, e *Engine, id string) State {
	t.Helper()
	s, err := e.State(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance holds one named case per rule of TX.2.5-TX.2.8 (and the
// later specification's clarifications).
func TestConformance(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, r *rig)
	}{
		{"create is ACTIVE", func(t *testing.T, r *rig) {
			if s := state(t, r.e, r.e.Create()); s != Active {
				t.Fatalf("state %v", s)
			}
		}},
		{"unknown transaction everywhere", func(t *testing.T, r *rig) {
			if _, err := r.e.State("nope"); !errors.Is(err, ErrUnknownTransaction) {
				t.Error("State:", err)
			}
			if err := r.e.Join("nope", Participant{URL: "p"}); !errors.Is(err, ErrUnknownTransaction) {
				t.Error("Join:", err)
			}
			if err := r.e.Commit(ctx, "nope", -1); !errors.Is(err, ErrUnknownTransaction) {
				t.Error("Commit:", err)
			}
			if err := r.e.Abort(ctx, "nope", -1); !errors.Is(err, ErrUnknownTransaction) {
				t.Error("Abort:", err)
			}
		}},
		{"repeat join with the same crash count is a no-op", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			if err := r.e.Join(id, Participant{URL: "p0", CrashCount: 1}); err != nil {
				t.Fatal(err)
			}
			r.e.Commit(ctx, id, -1)
			if got := r.f.seen(apitypes.OpPrepare); !slices.Equal(got, []string{"p0", "p1"}) {
				t.Errorf("prepare calls %v, want p0 and p1 once each", got)
			}
		}},
		{"join with another crash count aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			if err := r.e.Join(id, Participant{URL: "p1", CrashCount: 2}); !errors.Is(err, ErrCrashCount) {
				t.Fatalf("Join: %v", err)
			}
			if s := state(t, r.e, id); s != Aborted {
				t.Fatalf("state %v, want ABORTED", s)
			}
			testenv.Until(t, "aborts told", func() bool { return len(r.f.seen(apitypes.OpAbort)) == 2 })
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Errorf("Commit after: %v", err)
			}
		}},
		{"join while VOTING is CannotJoin", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.block["p0"] = make(chan struct{})
			done := r.commitAsync(id, -1)
			testenv.Until(t, "voting", func() bool { return len(r.f.seen("")) == 1 })
			if err := r.e.Join(id, Participant{URL: "late"}); !errors.Is(err, ErrCannotJoin) {
				t.Errorf("Join: %v", err)
			}
			close(r.f.block["p0"])
			<-done
		}},
		{"join after COMMITTED is CannotJoin", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.e.Commit(ctx, id, -1)
			if err := r.e.Join(id, Participant{URL: "late"}); !errors.Is(err, ErrCannotJoin) {
				t.Errorf("Join: %v", err)
			}
		}},
		{"join after ABORTED is CannotJoin", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.e.Abort(ctx, id, -1)
			if err := r.e.Join(id, Participant{URL: "late"}); !errors.Is(err, ErrCannotJoin) {
				t.Errorf("Join: %v", err)
			}
		}},
		{"no participants commits with nothing written", func(t *testing.T, r *rig) {
			id := r.tx(t, 0)
			if err := r.e.Commit(ctx, id, -1); err != nil || state(t, r.e, id) != Committed || r.j.writes != 0 {
				t.Fatalf("%v %v, %d writes", err, state(t, r.e, id), r.j.writes)
			}
		}},
		{"one participant gets prepareAndCommit; COMMITTED needs no write", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			if err := r.e.Commit(ctx, id, -1); err != nil {
				t.Fatal(err)
			}
			if got := r.f.seen(""); !slices.Equal(got, []string{"p0"}) || r.f.calls[0].op != apitypes.OpPrepareAndCommit || r.j.writes != 0 {
				t.Fatalf("calls %v, %d writes", r.f.calls, r.j.writes)
			}
		}},
		{"prepareAndCommit NOTCHANGED commits", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VoteNotChanged})
			if err := r.e.Commit(ctx, id, -1); err != nil || state(t, r.e, id) != Committed {
				t.Fatal(err)
			}
		}},
		{"prepareAndCommit ABORTED is CannotCommit", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VoteAborted})
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) || state(t, r.e, id) != Aborted {
				t.Fatal(err)
			}
			if len(r.f.seen(apitypes.OpAbort)) != 0 {
				t.Error("a participant that voted ABORTED was told abort")
			}
		}},
		{"prepareAndCommit PREPARED is followed by a durable decision and a commit", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VotePrepared})
			if err := r.e.Commit(ctx, id, time.Hour); err != nil {
				t.Fatal(err)
			}
			if r.j.writes != 1 || !slices.Equal(r.f.seen(apitypes.OpCommit), []string{"p0"}) {
				t.Fatalf("%d writes, commits %v", r.j.writes, r.f.seen(apitypes.OpCommit))
			}
		}},
		{"prepareAndCommit failing then unknown: the outcome cannot be known", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{err: errDown}, answer{err: ErrUnknownTransaction})
			done := r.commitAsync(id, -1)
			r.tick(t, time.Second)
			if err := <-done; !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("Commit: %v, want OutcomeUnknown", err)
			}
			if got := r.f.seen(apitypes.OpAbort); len(got) != 0 {
				t.Fatalf("told abort after it may have committed: %v", got)
			}
		}},
		{"abort during prepareAndCommit waits for its answer: CannotAbort once it committed", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.block["p0"] = make(chan struct{})
			committed := r.commitAsync(id, -1)
			testenv.Until(t, "the prepareAndCommit call", func() bool { return len(r.f.seen(apitypes.OpPrepareAndCommit)) == 1 })
			aborted := make(chan error, 1)
			go func() { aborted <- r.e.Abort(ctx, id, -1) }()
			select {
			case err := <-aborted:
				t.Fatalf("Abort returned %v while the participant was deciding", err)
			case <-time.After(20 * time.Millisecond):
			}
			close(r.f.block["p0"])
			if err := <-committed; err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if err := <-aborted; !errors.Is(err, ErrCannotAbort) {
				t.Fatalf("Abort: %v, want CannotAbort", err)
			}
			if got := r.f.seen(apitypes.OpAbort); len(got) != 0 {
				t.Fatalf("told abort after it committed: %v", got)
			}
		}},
		{"prepareAndCommit unanswered past PrepareFor: unknown, and never told abort", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{err: errDown})
			if err := r.retriedUntilDone(t, r.commitAsync(id, time.Hour)); !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("Commit: %v, want OutcomeUnknown", err)
			}
			if got := r.f.seen(apitypes.OpAbort); len(got) != 0 {
				t.Fatalf("told abort after it may have committed: %v", got)
			}
			if s := state(t, r.e, id); s != Aborted {
				t.Fatalf("state %v, want ABORTED (presumed abort)", s)
			}
		}},
		{"prepareAndCommit unknown at once aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.on("p0", apitypes.OpPrepareAndCommit, answer{err: ErrUnknownTransaction})
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"all PREPARED: durable before any commit call, then every one committed", func(t *testing.T, r *rig) {
			id := r.tx(t, 3)
			if err := r.e.Commit(ctx, id, time.Minute); err != nil {
				t.Fatal(err)
			}
			if r.j.writes != 1 || r.j.callsAtWrite[0] != 0 || len(r.j.records[id]) != 0 && !slices.Contains(r.j.finished, id) {
				t.Fatalf("writes %d, commit calls at the write %v", r.j.writes, r.j.callsAtWrite)
			}
			if got := r.f.seen(apitypes.OpCommit); !slices.Equal(got, []string{"p0", "p1", "p2"}) {
				t.Fatalf("commits %v", got)
			}
			if !slices.Contains(r.j.finished, id) {
				t.Error("the decision was not forgotten once everyone rolled forward")
			}
		}},
		{"NOTCHANGED voters are dropped; several participants are never asked prepareAndCommit", func(t *testing.T, r *rig) {
			id := r.tx(t, 3)
			r.f.on("p0", apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			r.f.on("p1", apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			if err := r.e.Commit(ctx, id, time.Hour); err != nil {
				t.Fatal(err)
			}
			if got := r.f.seen(apitypes.OpCommit); len(r.f.seen(apitypes.OpPrepareAndCommit)) != 0 || !slices.Equal(got, []string{"p2"}) || r.j.writes != 1 {
				t.Fatalf("prepareAndCommit %v, commits %v, %d writes", r.f.seen(apitypes.OpPrepareAndCommit), got, r.j.writes)
			}
			all := r.tx(t, 3)
			for _, p := range []string{"p0", "p1", "p2"} {
				r.f.on(p, apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			}
			if err := r.e.Commit(ctx, all, time.Hour); err != nil || state(t, r.e, all) != Committed || r.j.writes != 1 || len(r.f.seen(apitypes.OpCommit)) != 1 {
				t.Fatalf("every one NOTCHANGED: %v, %v, %d writes, commits %v", err, state(t, r.e, all), r.j.writes, r.f.seen(apitypes.OpCommit))
			}
		}},
		{"every participant is asked to prepare at once", func(t *testing.T, r *rig) {
			id := r.tx(t, 10)
			for i := range 10 {
				r.f.block[fmt.Sprintf("p%d", i)] = make(chan struct{})
			}
			done := r.commitAsync(id, -1)
			// All ten asked while none has answered.
			testenv.Until(t, "ten prepares under way", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 10 })
			for i := range 10 {
				close(r.f.block[fmt.Sprintf("p%d", i)])
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := len(r.f.seen(apitypes.OpPrepare)); n != 10 || len(r.f.seen(apitypes.OpPrepareAndCommit)) != 0 {
				t.Fatalf("%d prepares, prepareAndCommit %v", n, r.f.seen(apitypes.OpPrepareAndCommit))
			}
		}},
		{"one PREPARED and one NOTCHANGED: only the PREPARED one commits", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p0", apitypes.OpPrepare, answer{vote: apitypes.VotePrepared})
			r.f.on("p1", apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			if err := r.e.Commit(ctx, id, time.Hour); err != nil {
				t.Fatal(err)
			}
			if got := r.f.seen(apitypes.OpCommit); !slices.Equal(got, []string{"p0"}) {
				t.Fatalf("commits %v", got)
			}
		}},
		{"an ABORTED vote aborts; PREPARED voters are told, NOTCHANGED ones not", func(t *testing.T, r *rig) {
			id := r.tx(t, 3)
			r.f.on("p0", apitypes.OpPrepare, answer{vote: apitypes.VotePrepared})
			r.f.on("p1", apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			r.f.on("p2", apitypes.OpPrepare, answer{vote: apitypes.VoteAborted})
			if err := r.e.Commit(ctx, id, time.Minute); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
			r.notified(t, id)
			if got := r.f.seen(apitypes.OpAbort); !slices.Equal(got, []string{"p0"}) {
				t.Fatalf("aborts %v, want p0 only", got)
			}
		}},
		{"UnknownTransaction on prepare aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p0", apitypes.OpPrepare, answer{err: ErrUnknownTransaction})
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"NoSuchObject on prepare aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p0", apitypes.OpPrepare, answer{err: ErrNoSuchObject})
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"indefinite prepare failures are retried, then commit", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p0", apitypes.OpPrepare, answer{err: errDown}, answer{err: errDown}, answer{vote: apitypes.VotePrepared})
			done := r.commitAsync(id, -1)
			r.tick(t, time.Second)
			r.tick(t, 2*time.Second)
			if err := <-done; err != nil {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"indefinite prepare failures past PrepareFor abort", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p0", apitypes.OpPrepare, answer{err: errDown})
			if err := r.retriedUntilDone(t, r.commitAsync(id, -1)); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"commit is retried until the participant answers", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p1", apitypes.OpCommit, answer{err: errDown}, answer{err: errDown}, answer{})
			if err := r.e.Commit(ctx, id, -1); err != nil {
				t.Fatal(err)
			}
			r.tick(t, time.Second)
			r.tick(t, 2*time.Second)
			testenv.Until(t, "the third commit call", func() bool { return len(r.f.seen(apitypes.OpCommit)) == 4 })
			testenv.Until(t, "the decision forgotten", func() bool {
				r.j.mu.Lock()
				defer r.j.mu.Unlock()
				return slices.Contains(r.j.finished, id)
			})
		}},
		{"UnknownTransaction on commit means rolled forward", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p1", apitypes.OpCommit, answer{err: ErrUnknownTransaction})
			if err := r.e.Commit(ctx, id, time.Minute); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if len(r.f.seen(apitypes.OpCommit)) != 2 {
				t.Errorf("commits %v", r.f.seen(apitypes.OpCommit))
			}
		}},
		{"abort while ACTIVE, twice; commit after it is CannotCommit", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			if err := r.e.Abort(ctx, id, -1); err != nil {
				t.Fatal(err)
			}
			if err := r.e.Abort(ctx, id, -1); err != nil {
				t.Fatal("second abort:", err)
			}
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
			testenv.Until(t, "both told", func() bool { return len(r.f.seen(apitypes.OpAbort)) == 2 })
			if len(r.f.seen(apitypes.OpPrepare)) != 0 {
				t.Error("prepare called after an abort")
			}
		}},
		{"abort after COMMITTED is CannotAbort", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.e.Commit(ctx, id, -1)
			if err := r.e.Abort(ctx, id, -1); !errors.Is(err, ErrCannotAbort) {
				t.Fatalf("Abort: %v", err)
			}
		}},
		{"abort racing the commit point waits and is CannotAbort", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.j.block, r.j.writing = make(chan struct{}), make(chan struct{})
			done := r.commitAsync(id, -1)
			<-r.j.writing // the decision is being written
			aborted := make(chan error, 1)
			go func() { aborted <- r.e.Abort(ctx, id, -1) }()
			close(r.j.block)
			if err := <-done; err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if err := <-aborted; !errors.Is(err, ErrCannotAbort) {
				t.Fatalf("Abort: %v, want CannotAbort", err)
			}
			if len(r.f.seen(apitypes.OpAbort)) != 0 {
				t.Error("a participant was told abort for a committed transaction")
			}
		}},
		{"abort while VOTING wins; late PREPARED voters are told", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.block["p0"] = make(chan struct{})
			done := r.commitAsync(id, -1)
			testenv.Until(t, "voting", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 2 })
			if err := r.e.Abort(ctx, id, -1); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if err := <-done; !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
			testenv.Until(t, "both told", func() bool { return len(r.f.seen(apitypes.OpAbort)) == 2 })
			close(r.f.block["p0"])
			if len(r.f.seen(apitypes.OpCommit)) != 0 {
				t.Error("commit called after an abort")
			}
		}},
		{"a decision that cannot be written aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.j.fail = errors.New("disk full")
			if err := r.e.Commit(ctx, id, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v", err)
			}
			if len(r.f.seen(apitypes.OpCommit)) != 0 {
				t.Error("commit called without a durable decision")
			}
		}},
		{"waitFor expiring after the decision is TimeoutExpired committed=true", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p1", apitypes.OpCommit, answer{err: errDown})
			done := r.commitAsync(id, 3*time.Second)
			testenv.Until(t, "committed", func() bool { s, _ := r.e.State(id); return s == Committed })
			testenv.Until(t, "timers", func() bool { return len(r.c.Pending()) >= 2 })
			r.c.Advance(3 * time.Second)
			var te *TimeoutExpired
			if err := <-done; !errors.As(err, &te) || !te.Committed {
				t.Fatalf("Commit: %v", err)
			}
			r.f.on("p1", apitypes.OpCommit, answer{})
		}},
		{"waitFor passing before the decision does not end the wait", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.block["p0"] = make(chan struct{})
			done := r.commitAsync(id, time.Second)
			testenv.Until(t, "the prepare", func() bool { return slices.Contains(r.f.seen(apitypes.OpPrepare), "p0") })
			r.c.Advance(time.Minute) // waitFor is long past: still voting
			select {
			case err := <-done:
				t.Fatalf("Commit returned %v before the decision", err)
			case <-time.After(20 * time.Millisecond):
			}
			close(r.f.block["p0"])
			var te *TimeoutExpired
			if err := <-done; err != nil && (!errors.As(err, &te) || !te.Committed) {
				t.Fatalf("Commit: %v, want nil or TimeoutExpired committed=true", err)
			}
			if s := state(t, r.e, id); s != Committed {
				t.Fatalf("returned in %v", s)
			}
		}},
		{"an ABORTED vote slower than waitFor is CannotCommit, not TimeoutExpired", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p1", apitypes.OpPrepare, answer{vote: apitypes.VoteAborted})
			r.f.block["p1"] = make(chan struct{})
			done := r.commitAsync(id, 500*time.Millisecond)
			testenv.Until(t, "the prepares", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 2 })
			r.c.Advance(3 * time.Second) // waitFor is long past when p1 votes
			close(r.f.block["p1"])
			if err := <-done; !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v, want CannotCommit", err)
			}
		}},
		{"an aborted commit answers at once, whoever is still being told", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.on("p1", apitypes.OpPrepare, answer{vote: apitypes.VoteAborted})
			r.f.on("p0", apitypes.OpAbort, answer{err: errDown}) // p0 voted PREPARED: told abort, and failing
			if err := r.e.Commit(ctx, id, time.Hour); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("Commit: %v, want CannotCommit", err)
			}
			testenv.Until(t, "p0 told", func() bool { return len(r.f.seen(apitypes.OpAbort)) == 1 })
		}},
		{"waitFor 0 after an abort is TimeoutExpired committed=false or done", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.f.block["p0"] = make(chan struct{})
			err := r.e.Abort(ctx, id, 0)
			var te *TimeoutExpired
			if !errors.As(err, &te) || te.Committed {
				t.Fatalf("Abort: %v", err)
			}
			close(r.f.block["p0"])
		}},
		{"waitFor long enough returns once everyone was told", func(t *testing.T, r *rig) {
			id := r.tx(t, 3)
			if err := r.e.Commit(ctx, id, time.Hour); err != nil {
				t.Fatal(err)
			}
			if len(r.f.seen(apitypes.OpCommit)) != 3 {
				t.Fatalf("returned before every commit: %v", r.f.seen(apitypes.OpCommit))
			}
		}},
		{"getState is never PREPARED, VOTING while prepares run", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.block["p0"] = make(chan struct{})
			done := r.commitAsync(id, -1)
			testenv.Until(t, "voting", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 2 })
			if s := state(t, r.e, id); s != Voting {
				t.Errorf("state %v, want VOTING", s)
			}
			close(r.f.block["p0"])
			<-done
		}},
		{"too many participants", func(t *testing.T, r *rig) {
			id := r.e.Create()
			for i := range r.e.cfg.MaxParticipants {
				r.e.Join(id, Participant{URL: fmt.Sprint(i)})
			}
			if err := r.e.Join(id, Participant{URL: "one more"}); !errors.Is(err, ErrTooManyParticipants) {
				t.Fatalf("Join: %v", err)
			}
		}},
		{"recovered decisions roll forward and read COMMITTED", func(t *testing.T, r *rig) {
			// a and b voted PREPARED before the restart.
			r.f.voted["a old"], r.f.voted["b old"] = apitypes.VotePrepared, apitypes.VotePrepared
			r.e.Recover([]Record{{ID: "old", Prepared: []Participant{{URL: "a"}, {URL: "b"}}}})
			if s := state(t, r.e, "old"); s != Committed {
				t.Fatalf("state %v", s)
			}
			testenv.Until(t, "rolled forward", func() bool { return len(r.f.seen(apitypes.OpCommit)) == 2 })
			if err := r.e.Abort(ctx, "old", -1); !errors.Is(err, ErrCannotAbort) {
				t.Errorf("Abort: %v", err)
			}
		}},
		{"a completed transaction is answered for Retain after everyone was told, then forgotten", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.block["p1"] = make(chan struct{})
			done := r.commitAsync(id, -1)
			testenv.Until(t, "prepares", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 2 })
			r.c.Advance(time.Hour) // still voting: nothing is forgotten
			if s := state(t, r.e, id); s != Voting {
				t.Fatalf("state %v", s)
			}
			close(r.f.block["p1"])
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := r.e.Commit(ctx, id, 0); err != nil { // returns once everyone was told
				testenv.Until(t, "everyone told", func() bool { return r.e.Commit(ctx, id, 0) == nil })
			}
			// Retain counts from when the last was told: its timer set
			// (a moment after, under load) before protocol time moves.
			told := r.c.Now()
			testenv.Until(t, "the Retain timer set", func() bool {
				return slices.ContainsFunc(r.c.Pending(), func(at time.Time) bool { return at.Equal(told.Add(time.Minute)) })
			})
			r.c.Advance(59 * time.Second)
			if s := state(t, r.e, id); s != Committed {
				t.Fatalf("state %v before Retain passed", s)
			}
			r.c.Advance(time.Second)
			testenv.Until(t, "forgotten after Retain", func() bool {
				_, err := r.e.State(id)
				return errors.Is(err, ErrUnknownTransaction) && r.e.Open() == 0
			})
		}},
		{"at most MaxRetained completed transactions are held, the oldest forgotten first", func(t *testing.T, r *rig) {
			r.e.cfg.MaxRetained = 2
			var ids []string
			for range 3 {
				id := r.tx(t, 0)
				if err := r.e.Commit(ctx, id, -1); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if _, err := r.e.State(ids[0]); !errors.Is(err, ErrUnknownTransaction) || r.e.Open() != 2 {
				t.Fatalf("the oldest: %v; %d held, want 2", err, r.e.Open())
			}
			if s := state(t, r.e, ids[2]); s != Committed {
				t.Fatalf("the newest: %v", s)
			}
		}},
		{"at most MaxCalls participant calls run at once; the rest wait their turn", func(t *testing.T, r *rig) {
			r.e.cfg.Caller = &boundedCaller{Caller: r.f, slots: make(chan struct{}, 2)}
			r.f.block["p0"] = make(chan struct{})
			var dones []chan error
			for range 3 {
				dones = append(dones, r.commitAsync(r.tx(t, 1), -1))
			}
			testenv.Until(t, "two calls", func() bool { return len(r.f.seen(apitypes.OpPrepareAndCommit)) == 2 })
			time.Sleep(20 * time.Millisecond) // a check of absence: no third call comes meanwhile
			if n := len(r.f.seen(apitypes.OpPrepareAndCommit)); n != 2 {
				t.Fatalf("%d calls in flight, want 2", n)
			}
			close(r.f.block["p0"])
			for _, d := range dones {
				if err := <-d; err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"a slow participant holds only its own transaction", func(t *testing.T, r *rig) {
			r.f.block["slow"] = make(chan struct{})
			slow := r.e.Create()
			r.e.Join(slow, Participant{URL: "slow", CrashCount: 1})
			r.e.Join(slow, Participant{URL: "p9", CrashCount: 1})
			done := r.commitAsync(slow, -1)
			testenv.Until(t, "the slow prepare", func() bool { return slices.Contains(r.f.seen(apitypes.OpPrepare), "slow") })
			for range 3 { // others commit, voting and rolling forward, meanwhile
				if err := r.e.Commit(ctx, r.tx(t, 2), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if s := state(t, r.e, slow); s != Voting {
				t.Fatalf("the slow one: %v", s)
			}
			close(r.f.block["slow"])
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}},
		{"votes in every combination of three participants", func(t *testing.T, _ *rig) {
			votes := []apitypes.Vote{apitypes.VoteNotChanged, apitypes.VotePrepared, apitypes.VoteAborted}
			for i := range 27 {
				v := [3]apitypes.Vote{votes[i%3], votes[i/3%3], votes[i/9]}
				t.Run(fmt.Sprint(v), func(t *testing.T) {
					r := newRig(t)
					for k, vk := range v {
						r.f.on(fmt.Sprintf("p%d", k), apitypes.OpPrepare, answer{vote: vk})
					}
					id := r.tx(t, 3)
					err := r.e.Commit(ctx, id, time.Hour)
					var prepared []string
					for k, vk := range v {
						if vk == apitypes.VotePrepared {
							prepared = append(prepared, fmt.Sprintf("p%d", k))
						}
					}
					if len(r.f.seen(apitypes.OpPrepare)) != 3 || len(r.f.seen(apitypes.OpPrepareAndCommit)) != 0 {
						t.Fatalf("prepares %v, prepareAndCommit %v: want each asked to prepare", r.f.seen(apitypes.OpPrepare), r.f.seen(apitypes.OpPrepareAndCommit))
					}
					if slices.Contains(v[:], apitypes.VoteAborted) {
						if !errors.Is(err, ErrCannotCommit) {
							t.Fatalf("commit: %v, want CannotCommit", err)
						}
						// Every vote is in before the abort: the PREPARED
						// voters are told, no other.
						r.notified(t, id)
						if got := r.f.seen(apitypes.OpAbort); !slices.Equal(got, prepared) {
							t.Errorf("told abort: %v, want %v", got, prepared)
						}
						if len(r.f.seen(apitypes.OpCommit)) != 0 || r.j.writes != 0 {
							t.Errorf("an aborted transaction: commit calls %v, %d writes", r.f.seen(apitypes.OpCommit), r.j.writes)
						}
						return
					}
					if err != nil {
						t.Fatalf("commit: %v", err)
					}
					if got := r.f.seen(apitypes.OpCommit); !slices.Equal(got, prepared) {
						t.Errorf("told commit: %v, want %v", got, prepared)
					}
					if want := min(len(prepared), 1); r.j.writes != want || len(r.f.seen(apitypes.OpAbort)) != 0 {
						t.Errorf("%d writes (want %d), abort calls %v", r.j.writes, want, r.f.seen(apitypes.OpAbort))
					}
				})
			}
		}},
		{"participants over all transactions are capped, and counted until every one was told the outcome", func(t *testing.T, r *rig) {
			r.e.cfg.MaxTotalParticipants = 3
			a := r.tx(t, 2)
			b := r.e.Create()
			if err := r.e.Join(b, Participant{URL: "q0", CrashCount: 1}); err != nil {
				t.Fatal(err)
			}
			if err := r.e.Join(b, Participant{URL: "q1", CrashCount: 1}); !errors.Is(err, ErrTooManyParticipants) {
				t.Fatalf("a fourth participant: %v, want ErrTooManyParticipants", err)
			}
			r.f.block["p0"] = make(chan struct{}) // the abort not yet heard by p0
			go r.e.Abort(ctx, a, time.Hour)
			testenv.Until(t, "p1 told", func() bool { return len(r.f.seen(apitypes.OpAbort)) >= 1 })
			if err := r.e.Join(b, Participant{URL: "q1", CrashCount: 1}); !errors.Is(err, ErrTooManyParticipants) {
				t.Fatalf("while a participant of the aborted one is not told: %v, want ErrTooManyParticipants", err)
			}
			close(r.f.block["p0"])
			r.notified(t, a)
			// Told: its outcome is still answered, its participants count
			// no more (a busy manager is not held to the cap for a Retain).
			if s := state(t, r.e, a); s != Aborted {
				t.Fatalf("the aborted one: %v", s)
			}
			testenv.Until(t, "room once every participant of the other was told", func() bool {
				return r.e.Join(b, Participant{URL: "q1", CrashCount: 1}) == nil
			})
		}},
		{"lease end while ACTIVE aborts", func(t *testing.T, r *rig) {
			id := r.tx(t, 1)
			r.e.LeaseEnded(id)
			if s := state(t, r.e, id); s != Aborted {
				t.Fatalf("state %v", s)
			}
			testenv.Until(t, "told", func() bool { return len(r.f.seen(apitypes.OpAbort)) == 1 })
		}},
		{"lease end while VOTING changes nothing", func(t *testing.T, r *rig) {
			id := r.tx(t, 2)
			r.f.block["p0"] = make(chan struct{})
			done := r.commitAsync(id, -1)
			testenv.Until(t, "voting", func() bool { return len(r.f.seen(apitypes.OpPrepare)) == 2 })
			r.e.LeaseEnded(id)
			close(r.f.block["p0"])
			if err := <-done; err != nil {
				t.Fatalf("Commit: %v", err)
			}
		}},
		{"nested: created in an ACTIVE parent only", func(t *testing.T, r *rig) {
			if _, err := r.e.CreateNested("nope"); !errors.Is(err, ErrUnknownTransaction) {
				t.Error("unknown parent:", err)
			}
			p := r.tx(t, 0)
			r.e.Abort(ctx, p, -1)
			if _, err := r.e.CreateNested(p); !errors.Is(err, ErrCannotJoin) {
				t.Error("aborted parent:", err)
			}
		}},
		{"nested: commit promotes PREPARED participants, who hear commit only with the parent", func(t *testing.T, r *rig) {
			p := r.tx(t, 1)
			n, _ := r.e.CreateNested(p)
			r.e.Join(n, Participant{URL: "np", CrashCount: 7})
			r.e.Join(n, Participant{URL: "ro", CrashCount: 1})
			r.f.on("ro", apitypes.OpPrepare, answer{vote: apitypes.VoteNotChanged})
			r.f.on("np", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VotePrepared})
			if err := r.e.Commit(ctx, n, -1); err != nil {
				t.Fatalf("nested commit: %v", err)
			}
			if len(r.f.seen(apitypes.OpCommit)) != 0 || r.j.writes != 0 {
				t.Fatalf("a nested commit took effect: commits %v, %d writes", r.f.seen(apitypes.OpCommit), r.j.writes)
			}
			if err := r.e.Commit(ctx, p, time.Hour); err != nil {
				t.Fatalf("parent commit: %v", err)
			}
			if got := r.f.seen(apitypes.OpCommit); !slices.Equal(got, []string{"np", "p0"}) {
				t.Fatalf("commits %v, want the promoted np and p0", got)
			}
		}},
		{"nested: a parent's abort reaches the promoted participants", func(t *testing.T, r *rig) {
			p := r.tx(t, 0)
			n, _ := r.e.CreateNested(p)
			r.e.Join(n, Participant{URL: "np", CrashCount: 1})
			r.f.on("np", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VotePrepared})
			r.e.Commit(ctx, n, -1)
			r.e.Abort(ctx, p, -1)
			testenv.Until(t, "np told", func() bool { return slices.Equal(r.f.seen(apitypes.OpAbort), []string{"np"}) })
			if s := state(t, r.e, n); s != Aborted {
				t.Errorf("nested state %v after the parent aborted, want ABORTED (its results dropped)", s)
			}
		}},
		{"nested: aborts cascade to uncommitted descendants", func(t *testing.T, r *rig) {
			p := r.tx(t, 0)
			n, _ := r.e.CreateNested(p)
			g, _ := r.e.CreateNested(n)
			r.e.Abort(ctx, p, -1)
			if state(t, r.e, n) != Aborted || state(t, r.e, g) != Aborted {
				t.Fatalf("child %v, grandchild %v", state(t, r.e, n), state(t, r.e, g))
			}
		}},
		{"nested: a parent's commit aborts children still ACTIVE", func(t *testing.T, r *rig) {
			p := r.tx(t, 0)
			n, _ := r.e.CreateNested(p)
			r.e.Commit(ctx, p, -1)
			if err := r.e.Commit(ctx, n, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("nested commit after the parent's: %v", err)
			}
		}},
		{"nested: a crash-count conflict on promotion aborts the parent", func(t *testing.T, r *rig) {
			p := r.e.Create()
			r.e.Join(p, Participant{URL: "x", CrashCount: 1})
			n, _ := r.e.CreateNested(p)
			r.e.Join(n, Participant{URL: "x", CrashCount: 2})
			r.f.on("x", apitypes.OpPrepareAndCommit, answer{vote: apitypes.VotePrepared})
			if err := r.e.Commit(ctx, n, -1); !errors.Is(err, ErrCannotCommit) {
				t.Fatalf("nested commit: %v", err)
			}
			if s := state(t, r.e, p); s != Aborted {
				t.Fatalf("parent %v, want ABORTED", s)
			}
		}},
		{"nested: a single participant is asked prepare, never prepareAndCommit", func(t *testing.T, r *rig) {
			p := r.tx(t, 0)
			n, _ := r.e.CreateNested(p)
			r.e.Join(n, Participant{URL: "np", CrashCount: 1})
			if err := r.e.Commit(ctx, n, -1); err != nil {
				t.Fatal(err)
			}
			if got := r.f.seen(""); !slices.Equal(got, []string{"np"}) || len(r.f.seen(apitypes.OpPrepare)) != 1 {
				t.Fatalf("calls %v, want one prepare", got)
			}
		}},
		{"nested: enclosedBy holds for every ancestor", func(t *testing.T, r *rig) {
			p := r.tx(t, 0)
			n, _ := r.e.CreateNested(p)
			g, _ := r.e.CreateNested(n)
			s, _ := r.e.CreateNested(p)
			for _, c := range []struct {
				id, anc string
				want    bool
			}{{g, n, true}, {g, p, true}, {n, p, true}, {p, g, false}, {g, s, false}, {g, g, false}} {
				if got, err := r.e.EnclosedBy(c.id, c.anc); err != nil || got != c.want {
					t.Errorf("EnclosedBy: %v %v, want %v", got, err, c.want)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newRig(t)) })
	}
}

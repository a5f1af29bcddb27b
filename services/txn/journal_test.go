package txn

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/store"
)

func openStore(t testing.TB) (*store.Store, *metrics.Registry) {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.New()
	st.Instrument(reg)
	t.Cleanup(func() { st.Close() })
	return st, reg
}

// A decision is on disk when Committed returns, comes back from Load
// (after a restart), and is gone once Finished.
func TestStoreJournal(t *testing.T) {
	st, _ := openStore(t)
	j := NewStoreJournal(st)
	ps := []Participant{{URL: "http://a/p", CrashCount: 3}, {URL: "http://b/p", CrashCount: 1}}
	if err := j.Committed("t1", ps); err != nil {
		t.Fatal(err)
	}
	if err := j.Committed("t2", ps[:1]); err != nil {
		t.Fatal(err)
	}
	recs, err := NewStoreJournal(st).Load()
	if err != nil || len(recs) != 2 || recs[0].ID != "t1" || !slices.Equal(recs[0].Prepared, ps) {
		t.Fatalf("Load: %+v, %v", recs, err)
	}
	j.Finished("t1")
	if recs, _ := j.Load(); len(recs) != 2 {
		t.Fatalf("Finished wrote on its own: %+v", recs)
	}
	j.Flush()
	if recs, _ := j.Load(); len(recs) != 1 || recs[0].ID != "t2" {
		t.Fatalf("after Finished and Flush: %+v", recs)
	}
}

// Decisions made while a write is under way share the next write: 32 of
// them take two writes, not 32 (group commit).
func TestStoreJournalGroupCommit(t *testing.T) {
	st, reg := openStore(t)
	j := NewStoreJournal(st)
	hold, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // before the store closes, even when the test fails
	go st.Update(func(*store.Tx) error { close(held); <-hold; return nil })
	<-held
	var wg sync.WaitGroup
	decide := func(i int) {
		wg.Go(func() {
			if err := j.Committed(fmt.Sprint("t", i), []Participant{{URL: "http://p/"}}); err != nil {
				t.Error(err)
			}
		})
	}
	queued := func(writing bool, n int) func() bool {
		return func() bool {
			j.mu.Lock()
			defer j.mu.Unlock()
			return j.writing == writing && len(j.pending) == n
		}
	}
	// The first decision alone, until its writer has taken it (and waits
	// for the store): the others then queue behind it, whatever the
	// scheduler does.
	decide(0)
	testenv.Until(t, "the first decision taken by its writer", queued(true, 0))
	for i := 1; i < 32; i++ {
		decide(i)
	}
	testenv.Until(t, "31 decisions queued behind the first", queued(true, 31))
	release()
	wg.Wait()
	commits := commitCount(t, reg)
	if commits != 3 { // the holder's, the first decision's, the other 31's
		t.Errorf("%d store writes for 32 decisions (and one other write), want 3", commits)
	}
	if recs, _ := j.Load(); len(recs) != 32 {
		t.Errorf("%d decisions on disk, want 32", len(recs))
	}
}

// commitCount reads the store's commit count (its histogram's) from the
// exposition.
func commitCount(t testing.TB, reg *metrics.Registry) int {
	t.Helper()
	var b strings.Builder
	reg.WritePrometheus(&b)
	for line := range strings.Lines(b.String()) {
		if v, ok := strings.CutPrefix(line, "jinid_store_commit_duration_seconds_count "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0 // no write yet
}

// Through the engine, a committed transaction with three PREPARED
// participants costs one store write; and a restart rolls forward what
// was committed, before anything else is asked.
func TestEngineOnStoreJournal(t *testing.T) {
	st, reg := openStore(t)
	j := NewStoreJournal(st)
	f := newFakes(t)
	e := New(Config{Caller: f, Journal: j})
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = e.Create()
		for p := range 3 {
			e.Join(ids[i], Participant{URL: fmt.Sprint("p", p), CrashCount: 1})
		}
		if err := e.Commit(t.Context(), ids[i], time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := commitCount(t, reg); n != 10 {
		t.Errorf("%d store writes for 10 committed transactions, want 10", n)
	}
	e.Shutdown(t.Context())

	// One more, whose participants never answer commit: the daemon
	// stops (or dies) with it rolling forward.
	f.on("p1", apitypes.OpCommit, answer{err: errDown})
	e = New(Config{Caller: f, Journal: j})
	id := e.Create()
	for p := range 3 {
		e.Join(id, Participant{URL: fmt.Sprint("p", p), CrashCount: 1})
	}
	if err := e.Commit(t.Context(), id, -1); err != nil {
		t.Fatal(err)
	}
	e.Shutdown(t.Context())
	f.on("p1", apitypes.OpCommit, answer{})
	recs, err := j.Load()
	if err != nil || !slices.ContainsFunc(recs, func(r Record) bool { return r.ID == id }) {
		t.Fatalf("the unfinished decision is not on disk: %+v %v", recs, err)
	}
	e = New(Config{Caller: f, Journal: j})
	defer e.Shutdown(t.Context())
	e.Recover(recs)
	if s, _ := e.State(id); s != Committed {
		t.Fatalf("after the restart: %v", s)
	}
	testenv.Until(t, "p1 rolled forward", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, c := range f.calls {
			if c.url == "p1" && c.op == apitypes.OpCommit {
				n++
			}
		}
		return n >= 3 // 10 before, a failed one, and the one after the restart
	})
}

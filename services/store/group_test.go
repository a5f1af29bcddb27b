package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// faultyBackend is the embedded store with its commits watched and
// faults injected: each commit can be held at its end (gate) and made to
// fail (fail), and the keys of every commit that succeeded are known.
type faultyBackend struct {
	backend
	gate chan struct{} // a commit waits for a receive, when set
	fail func(n int) bool
	// refuse fails every update before running its function (etcd out
	// of reach).
	refuse bool

	mu        sync.Mutex
	commits   int
	changes   []int // keys written, per commit that succeeded
	committed map[string]bool
	waiting   int // commits held at the gate
}

func (f *faultyBackend) update(fn func(kv) error) error {
	if f.refuse {
		return errors.New("injected: the store cannot be reached")
	}
	var keys []string
	err := f.backend.update(func(k kv) error {
		keys = keys[:0]
		if err := fn(recordingKV{k, &keys}); err != nil {
			return err
		}
		if f.gate != nil {
			f.mu.Lock()
			f.waiting++
			f.mu.Unlock()
			<-f.gate
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.commits++
		if f.fail != nil && f.fail(f.commits) {
			return errors.New("injected commit failure")
		}
		return nil
	})
	if err == nil {
		f.mu.Lock()
		for _, k := range keys {
			f.committed[k] = true
		}
		f.changes = append(f.changes, len(keys))
		f.mu.Unlock()
	}
	return err
}

func (f *faultyBackend) isCommitted(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.committed[key]
}

type recordingKV struct {
	kv
	keys *[]string
}

func (r recordingKV) put(bucket, key string, v []byte) error {
	*r.keys = append(*r.keys, key)
	return r.kv.put(bucket, key, v)
}

func openFaulty(t *testing.T) (*Store, *faultyBackend) {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &faultyBackend{backend: s.be, committed: map[string]bool{}}
	s.be = f
	return s, f
}

// Sixteen writers at once: the first commits alone, the fifteen that came
// meanwhile share the next commit; none is answered before the commit
// holding its change succeeded, and the writers of a commit that failed
// are told so, their changes absent.
func TestGroupCommitAnswersAfterItsCommit(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("second commit fails=%v", failing), func(t *testing.T) {
			s, f := openFaulty(t)
			f.gate = make(chan struct{})
			f.fail = func(n int) bool { return failing && n == 2 }
			const writers = 16
			type answer struct {
				key       string
				err       error
				committed bool // when the writer was answered
			}
			answers := make(chan answer, writers)
			write := func(i int) {
				key := fmt.Sprintf("w%02d", i)
				err := s.Shared(func(tx *Tx) error { return tx.Put("b", key, i) })
				answers <- answer{key, err, f.isCommitted(key)}
			}
			go write(0)
			testenv.Until(t, "the first writer's commit under way", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.waiting == 1
			})
			for i := 1; i < writers; i++ {
				go write(i)
			}
			testenv.Until(t, "the others queued behind it", func() bool {
				s.qmu.Lock()
				defer s.qmu.Unlock()
				return len(s.queue) == writers-1 // the first's is in its commit
			})
			select {
			case a := <-answers:
				t.Fatalf("%s answered while its commit was held: %v", a.key, a.err)
			default:
			}
			f.gate <- struct{}{} // the first commit ends
			f.gate <- struct{}{} // the second, holding the fifteen
			for range writers {
				a := <-answers
				switch {
				case a.err == nil && !a.committed:
					t.Errorf("%s answered ok before its commit succeeded", a.key)
				case a.err != nil && (a.key == "w00" || !failing):
					t.Errorf("%s: %v", a.key, a.err)
				case a.err == nil && failing && a.key != "w00":
					t.Errorf("%s answered ok though its commit failed", a.key)
				}
			}
			if f.commits != 2 {
				t.Errorf("%d commits for %d changes, want 2", f.commits, writers)
			}
			// What the store holds is what was acknowledged.
			for i := range writers {
				key := fmt.Sprintf("w%02d", i)
				var v int
				ok, err := get(s, key, &v)
				if want := i == 0 || !failing; ok != want || err != nil {
					t.Errorf("%s stored %v (%v), want %v", key, ok, err, want)
				}
			}
		})
	}
}

func get(s *Store, key string, v any) (ok bool, err error) {
	err = s.View(func(tx *Tx) error { ok, err = tx.Get("b", key, v); return err })
	return ok, err
}

// The changes of one commit come out as if made one after the other: one
// reading what an earlier one claimed waits for the next commit (and then
// sees its hooks' work), a total counts what earlier ones added, and one
// that fails is left out without undoing the others — also when it
// failed after writing.
func TestGroupCommitAsIfOneAfterTheOther(t *testing.T) {
	s, f := openFaulty(t)
	f.gate = make(chan struct{})
	var (
		mu     sync.Mutex
		memory = map[string]int{} // what hooks keep, as a service's state
		total  int
	)
	read := func(k string) int { mu.Lock(); defer mu.Unlock(); return memory[k] }
	// incr adds one to counter k (read from memory, as the services read
	// theirs) and to the total, refusing past a quota of 5.
	incr := func(k string) func(tx *Tx) error {
		return func(tx *Tx) error {
			if err := tx.Claim(k); err != nil {
				return err
			}
			mu.Lock()
			held := total
			mu.Unlock()
			if held+int(tx.Pending("total", 1)) >= 5 {
				return errors.New("quota")
			}
			n := read(k) + 1
			if err := tx.Put("b", k, n); err != nil {
				return err
			}
			tx.OnCommit(func() { mu.Lock(); memory[k] = n; total++; mu.Unlock() })
			return nil
		}
	}
	failAfterWrite := func(tx *Tx) error {
		if err := tx.Put("b", "half", 1); err != nil {
			return err
		}
		return errors.New("failed after writing")
	}
	results := make(chan error, 16)
	go func() { results <- s.Shared(incr("lead")) }()
	testenv.Until(t, "a commit under way", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.waiting == 1 })
	queued := []func(*Tx) error{incr("a"), incr("a"), failAfterWrite, incr("b"), incr("a"), incr("c")}
	for i, fn := range queued {
		// One at a time, so the queue keeps this order.
		go func() { results <- s.Shared(fn) }()
		testenv.Until(t, "queued", func() bool { s.qmu.Lock(); defer s.qmu.Unlock(); return len(s.queue) > i })
	}
	close(f.gate) // every commit from now on goes through
	var quota, failed int
	for range 1 + len(queued) {
		switch err := <-results; {
		case err == nil:
		case err.Error() == "quota":
			quota++
		case err.Error() == "failed after writing":
			failed++
		default:
			t.Errorf("unexpected %v", err)
		}
	}
	// Five changes fit the quota (lead, a, b, c and one more a); the
	// sixth is refused.
	if read("a") != 2 || read("b") != 1 || read("c") != 1 || quota != 1 || failed != 1 {
		t.Errorf("a=%d b=%d c=%d, %d refused by quota and %d failed; want 2 1 1, 1 and 1", read("a"), read("b"), read("c"), quota, failed)
	}
	var v int
	if ok, _ := get(s, "half", &v); ok {
		t.Error("the change that failed after writing left its write")
	}
	var a int
	if _, err := get(s, "a", &a); err != nil || a != 2 {
		t.Errorf("stored a=%d (%v), want 2", a, err)
	}
}

// A backend that fails before running the commit's function: every
// writer is told, none waits for ever (the leader once put them all off
// and went round without end).
func TestGroupCommitStoreOutOfReach(t *testing.T) {
	s, f := openFaulty(t)
	f.refuse = true
	errs := make(chan error, 8)
	for i := range 8 {
		go func() { errs <- s.Shared(func(tx *Tx) error { return tx.Put("b", fmt.Sprint(i), i) }) }()
	}
	for range 8 {
		if err := <-errs; err == nil {
			t.Error("a change answered ok by a store out of reach")
		}
	}
}

package store

import (
	"errors"
	"time"
)

// Group commit. A commit costs a flush (two fsyncs in bbolt, a raft round
// in etcd) whatever it holds, so writers that wait on one another's
// commits share one: a change made with Shared while another commit runs
// waits for it, then goes with every change that queued meanwhile into
// one transaction, answered once that commit is durable. A writer alone
// commits at once: there is no timer to wait out.
//
// The services' functions read their in-memory state, which the hooks of
// earlier changes update only after the commit. Two changes in one commit
// must therefore not read what the other changes: a function claims what
// it reads (Tx.Claim: a ServiceID, a lease) and counts what it adds to a
// shared total against what earlier changes of the commit added
// (Tx.Pending: a quota). One that claims what an earlier change holds is
// put off to the next commit, so the outcome is that of the changes made
// one after the other, in the commit's order.

// ErrClaimed is Tx.Claim's error for what an earlier change of the same
// commit holds; a function returns it (wrapped or not), and the change is
// made in the next commit instead.
var ErrClaimed = errors.New("held by another change of this commit")

// maxShared bounds the changes of one commit (and what a failed one makes
// run again).
const maxShared = 64

// shared is one change waiting for a group commit.
type shared struct {
	fn   func(*Tx) error
	err  error
	done bool
	// alone: it failed after writing in a shared commit, and is made in
	// one of its own (where its error undoes its writes).
	alone bool
	// wake tells the waiter its change is done, or that it leads the
	// next commit.
	wake chan struct{}
}

// batch is what the changes of one commit know of one another.
type batch struct {
	claims  map[string]*Tx
	pending map[string]int64
	writes  int // keys written so far (etcd bounds them)
}

// Claim says t's function reads key from memory that another change's
// hooks would update: if an earlier change of the same commit claimed it,
// it returns ErrClaimed. Outside a group commit (or on a nil Tx) it is
// always nil.
func (t *Tx) Claim(key string) error {
	if t == nil || t.b == nil {
		return nil
	}
	if by, ok := t.b.claims[key]; ok && by != t {
		return ErrClaimed
	}
	t.b.claims[key] = t
	t.claimed = append(t.claimed, key)
	return nil
}

// Pending returns what the earlier changes of the same commit added to
// the total key (not yet in memory: their hooks run after the commit),
// and adds n for t's. Outside a group commit (or on a nil Tx) it is 0.
func (t *Tx) Pending(key string, n int64) int64 {
	if t == nil || t.b == nil {
		return 0
	}
	before := t.b.pending[key]
	t.b.pending[key] = before + n
	t.added = append(t.added, added{key, n})
	return before
}

type added struct {
	key string
	n   int64
}

// undo takes back what t claimed and added, for a change left out.
func (t *Tx) undo() {
	for _, k := range t.claimed {
		delete(t.b.claims, k)
	}
	for _, a := range t.added {
		t.b.pending[a.key] -= a.n
	}
}

// errRerun ends a commit's transaction so that it runs again without a
// change that wrote and then failed (nothing else undoes its writes).
var errRerun = errors.New("a change of the group commit is left out")

// Shared is Update for a change that may share its commit with others
// made at the same time (see Claim and Pending for what its function
// must say). It returns once the commit holding the change is durable
// and its hooks ran, or with the change's error (then nothing of it is
// written).
func (s *Store) Shared(fn func(*Tx) error) error {
	p := &shared{fn: fn, wake: make(chan struct{}, 1)}
	s.qmu.Lock()
	s.queue = append(s.queue, p)
	lead := !s.leading
	s.leading = true
	s.qmu.Unlock()
	if !lead {
		if <-p.wake; p.done {
			return p.err // made in a commit another writer led
		}
	}
	for !p.done {
		s.commitShared()
	}
	// The next waiter leads the next commit.
	s.qmu.Lock()
	if len(s.queue) == 0 {
		s.leading = false
		s.qmu.Unlock()
	} else {
		next := s.queue[0]
		s.qmu.Unlock()
		next.wake <- struct{}{}
	}
	return p.err
}

// commitShared commits the changes queued, up to maxShared, in one
// transaction; a change that must wait goes back to the queue's front.
func (s *Store) commitShared() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.qmu.Lock()
	n := min(len(s.queue), maxShared)
	if s.queue[0].alone {
		n = 1
	}
	ps := append([]*shared(nil), s.queue[:n]...)
	s.queue = append(s.queue[:0:0], s.queue[n:]...)
	s.qmu.Unlock()

	start := time.Now()
	s.writing.Store(start.UnixNano())
	defer s.writing.Store(0)
	// As if the function never ran (a backend may fail before running
	// it: etcd out of reach): every change is then told the failure,
	// none put off (they once were, and their leader went round for ever).
	var (
		later []*shared                // left out after writing: each next, alone
		txs   = make([]*Tx, len(ps))   // of the changes made
		errs  = make([]error, len(ps)) // of the changes left out (ErrClaimed: made next)
		upto  = len(ps)                // changes past it wait for the next commit
	)
	limit := s.be.maxWrites()
	err := errRerun
	for errors.Is(err, errRerun) {
		err = s.be.update(func(k kv) error {
			// A backend may run this again (etcd, on a conflict): each
			// run starts afresh.
			b := &batch{claims: map[string]*Tx{}, pending: map[string]int64{}}
			txs, errs, upto = make([]*Tx, len(ps)), make([]error, len(ps)), len(ps)
			for i, p := range ps {
				if limit > 0 && i > 0 && b.writes >= limit/2 {
					// Room kept for the last change's writes, whatever
					// they are: the rest go next.
					upto = i
					break
				}
				t := &Tx{kv: k, b: b}
				wrote := b.writes
				ferr := p.fn(t)
				switch {
				case len(ps) == 1:
					txs[0] = t
					return ferr // as Update: its error undoes its writes
				case ferr == nil && (limit == 0 || b.writes <= limit):
					txs[i] = t
				case b.writes == wrote:
					t.undo() // left out at no cost: it wrote nothing
					errs[i] = ferr
				default:
					// It wrote: the transaction runs again without it,
					// and it is made next, alone.
					p.alone = true
					later = append(later, p)
					ps = append(ps[:i:i], ps[i+1:]...)
					return errRerun
				}
			}
			return nil
		})
	}
	if err != nil {
		err = s.failed(err)
	} else {
		made := 0
		for _, t := range txs {
			if t != nil {
				made++
			}
		}
		s.committed(start, made)
	}
	var answered []*shared
	for i, p := range ps {
		if i >= upto || errors.Is(errs[i], ErrClaimed) {
			later = append(later, p)
			continue
		}
		switch {
		case err != nil:
			p.err = err
		case txs[i] != nil:
			for _, f := range txs[i].onCommit {
				f()
			}
		default:
			p.err = errs[i]
		}
		p.done = true
		answered = append(answered, p)
	}
	if len(later) > 0 {
		s.qmu.Lock()
		s.queue = append(later, s.queue...)
		s.qmu.Unlock()
	}
	for _, p := range answered {
		p.wake <- struct{}{}
	}
}

package txn

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jinid/jinid/services/store"
)

// decisionsBucket holds the commit points: a committed transaction's
// PREPARED participants, by transaction ID, until they rolled forward.
const decisionsBucket = "txn.decisions"

// maxBatch bounds the decisions one store write carries; maxFinished the
// forgotten transactions that wait for a write to ride along with.
const (
	maxBatch    = 256
	maxFinished = 1024
)

// StoreJournal keeps the commit points in the store. Decisions made at
// the same time share one write, and so one fsync (group commit): a
// writer that finds the store busy leaves its decision for the writer
// ahead of it, which takes everything queued when it starts. Forgetting
// a finished transaction rides along with the next decision's write (or
// Flush's, or one of its own once maxFinished wait): it needs no fsync of
// its own, since a record that comes back after a crash only rolls
// forward again, and participants answer that with "unknown
// transaction". A committed transaction thus costs one write, shared
// under concurrency.
type StoreJournal struct {
	st *store.Store

	mu       sync.Mutex
	pending  []*decision
	finished []string
	writing  bool
}

// decision is one Committed call waiting for its write.
type decision struct {
	rec  Record
	done chan error
}

var _ Journal = (*StoreJournal)(nil)

// NewStoreJournal returns a journal on st.
func NewStoreJournal(st *store.Store) *StoreJournal { return &StoreJournal{st: st} }

// Load returns the committed transactions still rolling forward, for
// Engine.Recover.
func (j *StoreJournal) Load() ([]Record, error) {
	var out []Record
	err := j.st.View(func(tx *store.Tx) error {
		return tx.ForEach(decisionsBucket, func(k string, raw []byte) error {
			var ps []Participant
			if err := json.Unmarshal(raw, &ps); err != nil {
				return fmt.Errorf("transaction decision %s: %w", k, err)
			}
			out = append(out, Record{ID: k, Prepared: ps})
			return nil
		})
	})
	return out, err
}

// Committed implements Journal: it returns once the decision is on disk.
func (j *StoreJournal) Committed(id string, prepared []Participant) error {
	d := &decision{rec: Record{ID: id, Prepared: prepared}, done: make(chan error, 1)}
	j.mu.Lock()
	j.pending = append(j.pending, d)
	if j.writing {
		j.mu.Unlock()
		return <-d.done // the writer ahead takes it
	}
	j.writing = true
	j.mu.Unlock()
	j.flush()
	return <-d.done
}

// Finished implements Journal.
func (j *StoreJournal) Finished(id string) error {
	j.mu.Lock()
	j.finished = append(j.finished, id)
	if j.writing || len(j.finished) < maxFinished {
		j.mu.Unlock()
		return nil
	}
	j.writing = true
	j.mu.Unlock()
	j.flush()
	return nil
}

// Flush writes the forgotten transactions still waiting (at shutdown).
func (j *StoreJournal) Flush() {
	j.mu.Lock()
	if j.writing || len(j.finished) == 0 {
		j.mu.Unlock()
		return
	}
	j.writing = true
	j.mu.Unlock()
	j.flush()
}

// flush writes what is queued, batch after batch, until nothing is; the
// caller set writing.
func (j *StoreJournal) flush() {
	for {
		j.mu.Lock()
		n := min(len(j.pending), maxBatch)
		batch := j.pending[:n:n]
		j.pending = j.pending[n:]
		gone := j.finished
		j.finished = nil
		if len(batch) == 0 && len(gone) == 0 {
			j.writing = false
			j.mu.Unlock()
			return
		}
		j.mu.Unlock()
		err := j.st.Update(func(tx *store.Tx) error {
			for _, d := range batch {
				if err := tx.Put(decisionsBucket, d.rec.ID, d.rec.Prepared); err != nil {
					return err
				}
			}
			for _, id := range gone {
				if err := tx.Delete(decisionsBucket, id); err != nil {
					return err
				}
			}
			return nil
		})
		for _, d := range batch {
			d.done <- err
		}
		if err != nil && len(gone) > 0 {
			// Retried with the next write; at worst rolled forward again
			// after a restart.
			j.mu.Lock()
			j.finished = append(j.finished, gone...)
			j.mu.Unlock()
			if len(batch) == 0 {
				j.mu.Lock()
				j.writing = false
				j.mu.Unlock()
				return
			}
		}
	}
}

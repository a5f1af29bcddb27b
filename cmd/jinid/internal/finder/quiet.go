package finder

import (
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
)

// quiet ends a round of discovery once it has gone quiet: nothing new
// for settle, and no work under way that could still bring something.
// Its timer runs on the injected clock.
type quiet struct {
	clk    clock.Clock
	settle time.Duration
	done   chan struct{} // closed once quiet

	mu      sync.Mutex
	started bool
	last    time.Time // the last thing that happened
	busy    int       // work under way
	timer   clock.Timer
	closed  bool
}

func newQuiet(clk clock.Clock, settle time.Duration) *quiet {
	return &quiet{clk: clk, settle: settle, done: make(chan struct{}), last: clk.Now()}
}

// start begins watching: before it, the round is still being set up.
func (q *quiet) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.started = true
	q.armLocked()
}

// touch says something happened now.
func (q *quiet) touch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last = q.clk.Now()
}

// begin says work that may bring something started; end says it ended
// (which counts as something happening).
func (q *quiet) begin() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy++
}

func (q *quiet) end() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy--
	q.last = q.clk.Now()
	q.armLocked()
}

// armLocked sets the timer for when the round would be quiet, unless
// work is under way (its end arms it) or it is set already.
func (q *quiet) armLocked() {
	if !q.started || q.closed || q.busy > 0 || q.timer != nil {
		return
	}
	q.timer = q.clk.AfterFunc(q.last.Add(q.settle).Sub(q.clk.Now()), q.fire)
}

func (q *quiet) fire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.timer = nil
	if q.closed || q.busy > 0 {
		return
	}
	if wait := q.last.Add(q.settle).Sub(q.clk.Now()); wait > 0 {
		q.timer = q.clk.AfterFunc(wait, q.fire)
		return
	}
	q.closed = true
	close(q.done)
}

// stop disarms the timer.
func (q *quiet) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	if !q.closed {
		q.closed = true
		close(q.done)
	}
}

// idle reports whether no more than n pieces of work are under way.
func (q *quiet) idle(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.busy <= n
}

// Package ordered delivers values to a callback in the order they were
// pushed, from one goroutine, so whoever pushes never waits for the
// callback (which may be slow, or call back into the pusher).
package ordered

import "sync"

// Queue runs fn on each pushed value in order. The zero value is not
// usable; see New.
type Queue[T any] struct {
	fn func(T)

	mu      sync.Mutex
	pending []T
	running bool
	closed  bool
	idle    *sync.Cond
}

// New returns a queue that calls fn.
func New[T any](fn func(T)) *Queue[T] {
	q := &Queue[T]{fn: fn}
	q.idle = sync.NewCond(&q.mu)
	return q
}

// Push queues v. After Close it does nothing.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.pending = append(q.pending, v)
	if !q.running {
		q.running = true
		go q.drain()
	}
}

// drain is the one goroutine delivering, alive only while there is work.
func (q *Queue[T]) drain() {
	q.mu.Lock()
	for len(q.pending) > 0 {
		batch := q.pending
		q.pending = nil
		q.mu.Unlock()
		for _, v := range batch {
			q.fn(v)
		}
		q.mu.Lock()
	}
	q.running = false
	q.idle.Broadcast()
	q.mu.Unlock()
}

// Close delivers what is queued, refuses more, and returns when the
// callback has returned for the last value.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for q.running {
		q.idle.Wait()
	}
}

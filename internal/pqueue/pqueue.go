// Package pqueue is a priority queue whose elements know their place in
// it, so that one can be moved when its key changes, or taken out, in
// O(log n): the expirations of leases, and the due times of renewals,
// are kept in such queues.
package pqueue

import "container/heap"

// Queue orders elements by less, earliest first. Each element keeps its
// position in an int of its own that the queue owns (given by slot):
// zero while the element is out of the queue. Its zero value is not
// usable: make one with New.
type Queue[T any] struct {
	h items[T]
}

// New returns an empty queue ordered by less; slot gives the int each
// element keeps its position in.
func New[T any](less func(a, b T) bool, slot func(T) *int) Queue[T] {
	return Queue[T]{h: items[T]{less: less, slot: slot}}
}

// Len is how many elements are queued.
func (q *Queue[T]) Len() int { return len(q.h.s) }

// Min returns the earliest element; ok is false when the queue is empty.
func (q *Queue[T]) Min() (x T, ok bool) {
	if len(q.h.s) == 0 {
		return x, false
	}
	return q.h.s[0], true
}

// Contains reports whether x is queued.
func (q *Queue[T]) Contains(x T) bool { return *q.h.slot(x) > 0 }

// Update queues x, or, if it is queued, moves it to where its key now
// puts it.
func (q *Queue[T]) Update(x T) {
	if i := *q.h.slot(x); i > 0 {
		heap.Fix(&q.h, i-1)
		return
	}
	heap.Push(&q.h, x)
}

// Remove takes x out of the queue, if it is in it.
func (q *Queue[T]) Remove(x T) {
	if i := *q.h.slot(x); i > 0 {
		heap.Remove(&q.h, i-1)
	}
}

// Pop takes the earliest element out and returns it; the queue must not
// be empty.
func (q *Queue[T]) Pop() T { return heap.Pop(&q.h).(T) }

// items is the heap.Interface; positions are stored one up, so that the
// zero value of an element's slot means "not queued".
type items[T any] struct {
	s    []T
	less func(a, b T) bool
	slot func(T) *int
}

func (h *items[T]) Len() int           { return len(h.s) }
func (h *items[T]) Less(i, j int) bool { return h.less(h.s[i], h.s[j]) }
func (h *items[T]) Swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	*h.slot(h.s[i]), *h.slot(h.s[j]) = i+1, j+1
}

func (h *items[T]) Push(x any) {
	e := x.(T)
	h.s = append(h.s, e)
	*h.slot(e) = len(h.s)
}

func (h *items[T]) Pop() any {
	n := len(h.s) - 1
	e := h.s[n]
	var zero T
	h.s[n] = zero
	h.s = h.s[:n]
	*h.slot(e) = 0
	return e
}

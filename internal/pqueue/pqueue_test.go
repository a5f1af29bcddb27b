package pqueue

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct {
	key  int
	slot int
}

func newQueue() Queue[*item] {
	return New(func(a, b *item) bool { return a.key < b.key }, func(x *item) *int { return &x.slot })
}

func TestOrderUpdateRemove(t *testing.T) {
	q := newQueue()
	if _, ok := q.Min(); ok || q.Len() != 0 {
		t.Fatal("new queue not empty")
	}
	xs := make([]*item, 100)
	for i := range xs {
		xs[i] = &item{key: rand.IntN(1000)}
		q.Update(xs[i])
	}
	// Move some, take some out, queue one again.
	for _, x := range xs[:30] {
		x.key = rand.IntN(1000)
		q.Update(x)
	}
	for _, x := range xs[30:50] {
		q.Remove(x)
		if q.Contains(x) {
			t.Fatal("removed but contained")
		}
	}
	q.Remove(xs[30]) // again: nothing
	q.Update(xs[40])
	want := slices.Concat(xs[:30], xs[50:], []*item{xs[40]})
	slices.SortFunc(want, func(a, b *item) int { return a.key - b.key })
	if q.Len() != len(want) {
		t.Fatalf("Len %d, want %d", q.Len(), len(want))
	}
	for i := range want {
		m, _ := q.Min()
		x := q.Pop()
		if x != m || x.key != want[i].key || q.Contains(x) || x.slot != 0 {
			t.Fatalf("pop %d: key %d (slot %d), want %d", i, x.key, x.slot, want[i].key)
		}
	}
}

package ordered

import (
	"testing"

	"go.uber.org/goleak"
)

func TestOrderAndClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	var got []int
	q := New(func(v int) { got = append(got, v) })
	for i := range 1000 {
		q.Push(i)
	}
	q.Close()
	if len(got) != 1000 {
		t.Fatalf("delivered %d, want 1000", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("value %d delivered at %d", v, i)
		}
	}
	q.Push(1) // after Close: ignored
	if len(got) != 1000 {
		t.Fatal("value delivered after Close")
	}
}

func TestCallbackMayPush(t *testing.T) {
	defer goleak.VerifyNone(t)
	var q *Queue[int]
	var got []int
	q = New(func(v int) {
		got = append(got, v)
		if v < 5 {
			q.Push(v + 1)
		}
	})
	q.Push(0)
	for {
		q.mu.Lock()
		done := !q.running
		q.mu.Unlock()
		if done {
			break
		}
	}
	q.Close()
	if len(got) != 6 {
		t.Fatalf("got %v", got)
	}
}

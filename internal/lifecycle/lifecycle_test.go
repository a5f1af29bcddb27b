package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestGroupStartsInOrderShutsDownInReverse(t *testing.T) {
	var log []string
	svc := func(name string, startErr error) Service {
		return Funcs{
			StartFunc:    func(context.Context) error { log = append(log, "start "+name); return startErr },
			ShutdownFunc: func(context.Context) error { log = append(log, "stop "+name); return nil },
		}
	}
	var g Group
	g.Add("a", svc("a", nil))
	g.Add("b", svc("b", nil))
	g.Add("c", svc("c", nil))
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Shutdown(t.Context()); err != nil { // twice: nothing more
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Fatalf("%q, want %q", log, want)
	}

	// A failure to start: every member is shut down (one made holds
	// resources, started or not), the error names the one that failed.
	log = nil
	var h Group
	h.Add("a", svc("a", nil))
	h.Add("b", svc("b", errors.New("no port")))
	h.Add("c", svc("c", nil))
	err := h.Start(t.Context())
	if err == nil || err.Error() != "starting b: no port" {
		t.Fatalf("error %v", err)
	}
	if want := []string{"start a", "start b", "stop c", "stop b", "stop a"}; !slices.Equal(log, want) {
		t.Fatalf("%q, want %q", log, want)
	}
}

// Every calls its function until Shutdown, which waits for a call under
// way; shutting down one not started is harmless.
func TestEvery(t *testing.T) {
	if err := Every(time.Millisecond, func() {}).Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of one not started: %v", err)
	}
	calls := make(chan struct{}, 100)
	p := Every(time.Millisecond, func() {
		select {
		case calls <- struct{}{}:
		default:
		}
	})
	p.Start(context.Background())
	for range 3 {
		<-calls
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(calls) > 0 {
		<-calls
	}
	select {
	case <-calls:
		t.Fatal("called after Shutdown returned")
	case <-time.After(20 * time.Millisecond): // nothing more comes: time is the subject
	}
}

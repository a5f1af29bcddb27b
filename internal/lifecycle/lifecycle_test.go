package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"
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

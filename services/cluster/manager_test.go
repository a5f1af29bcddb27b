//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeNode is a node whose members the test sets, holding shards in
// embedded stores of its own (the holds' exclusion is etcd's, tested
// in services/store).
type fakeNode struct {
	name string
	dir  string

	mu      sync.Mutex
	members []store.Member
	held    map[string]bool
}

func (n *fakeNode) Name() string { return n.name }

func (n *fakeNode) Refresh() {}

func (n *fakeNode) Members() []store.Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.members
}

func (n *fakeNode) setMembers(names ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.members = nil
	for _, m := range names {
		n.members = append(n.members, store.Member{Node: m})
	}
}

func (n *fakeNode) Hold(ctx context.Context, shard string, _ store.HoldConfig) (*store.Store, error) {
	st, err := store.Open(filepath.Join(n.dir, shard))
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.held[shard] = true
	n.mu.Unlock()
	return st, nil
}

// fakeStack answers with its shard's number, and tells when it stops.
type fakeStack struct {
	k       int
	stopped chan struct{}
}

func (s *fakeStack) Start(context.Context) error    { return nil }
func (s *fakeStack) Shutdown(context.Context) error { close(s.stopped); return nil }
func (s *fakeStack) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(strconv.Itoa(s.k))) })
}
func (s *fakeStack) Services() []httpjson.Service         { return nil }
func (s *fakeStack) Inside(string) (event.Receiver, bool) { return nil, false }

var _ lifecycle.Service = (*fakeStack)(nil)

// A node holds the shards rendezvous hashing gives it among the members,
// serves them, lets go of those a new member takes (their stacks shut
// down), and tells a request for a shard it does not hold that the
// shard is moving when the holder cannot be reached.
func TestManagerFollowsTheMembers(t *testing.T) {
	n := &fakeNode{name: "node-a", dir: t.TempDir(), held: map[string]bool{}}
	n.setMembers("node-a")
	var mu sync.Mutex
	stacks := map[int]*fakeStack{}
	m := NewManager(Config{Node: n, Every: 10 * time.Millisecond, Wait: 50 * time.Millisecond,
		Build: func(k int, st *store.Store) (Stack, error) {
			s := &fakeStack{k: k, stopped: make(chan struct{})}
			mu.Lock()
			stacks[k] = s
			mu.Unlock()
			return s, nil
		}})
	startHoldingAll(t, m)
	rec := httptest.NewRecorder()
	m.Serve(5, rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Body.String() != "5" {
		t.Fatalf("shard 5 answered %q", rec.Body.String())
	}

	n.setMembers("node-a", "node-b")
	var mine []int
	for k := range Count {
		if Owner(k, []string{"node-a", "node-b"}) == "node-a" {
			mine = append(mine, k)
		}
	}
	stopped := func(s *fakeStack) bool {
		select {
		case <-s.stopped:
			return true
		default:
			return false
		}
	}
	testenv.Until(t, "node-b's shards let go, their stacks stopped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k, s := range stacks {
			if !slices.Contains(mine, k) && !stopped(s) {
				return false
			}
		}
		return slices.Equal(m.Held(), mine)
	})
	mu.Lock()
	for k, s := range stacks {
		select {
		case <-s.stopped:
			if slices.Contains(mine, k) {
				t.Errorf("shard %d, still node-a's, was stopped", k)
			}
		default:
			if !slices.Contains(mine, k) {
				t.Errorf("shard %d, node-b's now, still runs here", k)
			}
		}
	}
	mu.Unlock()
	// node-b's shard, node-b unreachable (no cluster port in its
	// record): 503, try again.
	other := -1
	for k := range Count {
		if !slices.Contains(mine, k) {
			other = k
			break
		}
	}
	rec = httptest.NewRecorder()
	m.Serve(other, rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("shard %d, held by an unreachable node: %d %q", other, rec.Code, rec.Body.String())
	}
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(m.Held()) != 0 {
		t.Errorf("shards held after Shutdown: %v", m.Held())
	}
}

// A node not (yet) among the members holds nothing.
func TestManagerHoldsNothingUnlessAMember(t *testing.T) {
	n := &fakeNode{name: "node-a", dir: t.TempDir(), held: map[string]bool{}}
	n.setMembers("node-b")
	m := NewManager(Config{Node: n, Every: 10 * time.Millisecond,
		Build: func(int, *store.Store) (Stack, error) { t.Error("a shard built"); return nil, nil }})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	// Several looks at the members, none taking a shard.
	for range 5 {
		m.rebalance()
	}
	if len(m.Held()) != 0 || len(n.held) != 0 {
		t.Errorf("held %v, took %v", m.Held(), n.held)
	}
}

// startHoldingAll starts m, a manager of the one member, stopped when
// the test ends, and waits until it holds every shard.
func startHoldingAll(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	testenv.Until(t, "every shard held by the one member", func() bool { return len(m.Held()) == Count })
}

// A node taking its shards says so in one info line (the set held),
// not a line each: a cluster's start logged sixteen.
func TestManagerLogsTheSetHeld(t *testing.T) {
	n := &fakeNode{name: "node-a", dir: t.TempDir(), held: map[string]bool{}}
	n.setMembers("node-a")
	var mu sync.Mutex
	var lines []string
	log := slog.New(handlerFunc(func(r slog.Record) {
		mu.Lock()
		defer mu.Unlock()
		if r.Level >= slog.LevelInfo {
			lines = append(lines, r.Message)
		}
	}))
	m := NewManager(Config{Node: n, Every: 10 * time.Millisecond, Wait: 50 * time.Millisecond, Logger: log,
		Build: func(k int, st *store.Store) (Stack, error) {
			return &fakeStack{k: k, stopped: make(chan struct{})}, nil
		}})
	startHoldingAll(t, m)
	testenv.Until(t, "the set held said", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(lines, "shards held")
	})
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(lines, "holding a shard") {
		t.Errorf("a line a shard at info: %q", lines)
	}
}

// handlerFunc is a slog handler calling f with each record.
type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }

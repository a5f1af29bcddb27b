//go:build !jinid_omit_etcd

package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/shards"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// oneNode is a cluster of one node, holding every shard in embedded
// stores of its own (the holds' exclusion is etcd's: services/store).
type oneNode struct{ dir string }

func (n oneNode) Name() string            { return "node-a" }
func (n oneNode) Members() []store.Member { return []store.Member{{Node: "node-a"}} }
func (n oneNode) Refresh()                {}
func (n oneNode) Hold(_ context.Context, shard string, _ store.HoldConfig) (*store.Store, error) {
	return store.Open(filepath.Join(n.dir, shard))
}

// grantorStack is a shard's lease grantor and its routes.
type grantorStack struct {
	g   *lease.Grantor
	st  *store.Store
	mux *http.ServeMux
}

func (s grantorStack) Start(ctx context.Context) error    { return s.g.Start(ctx) }
func (s grantorStack) Shutdown(ctx context.Context) error { return s.g.Shutdown(ctx) }
func (s grantorStack) Handler() http.Handler              { return s.mux }

// A batch of leases of several shards and of the deployment's own
// grantor: each part renewed (or cancelled) where its leases are, the
// answers in the batch's order; an unknown lease answered as its shard's
// grantor answers it.
func TestShardedLeaseBatches(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	policy := lease.Policy{Default: 60_000, Max: 600_000}
	grant := func(g *lease.Grantor, st *store.Store) string {
		var id string
		if err := st.Update(func(tx *store.Tx) error {
			rec, err := g.Grant(tx, "thing", "r", "owner", 60_000)
			id = rec.ID
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	rootStore, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rootStore.Close()
	root := lease.New(rootStore, clock.Real{}, log)
	root.Register("thing", policy, func(*store.Tx, string) error { return nil })

	var mu sync.Mutex
	stacks := map[int]grantorStack{}
	m := shards.NewManager(shards.Config{Node: oneNode{t.TempDir()}, Logger: log, Build: func(k int, st *store.Store) (shards.Stack, error) {
		g := lease.New(st, clock.Real{}, log)
		g.SetNewID(func() string { return shards.NewID(k) })
		g.Register("thing", policy, func(*store.Tx, string) error { return nil })
		s := grantorStack{g: g, st: st, mux: http.NewServeMux()}
		g.Routes(plainMux{s.mux})
		mu.Lock()
		stacks[k] = s
		mu.Unlock()
		return s, nil
	}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	testenv.Until(t, "every shard held", func() bool { return len(m.Held()) == shards.Count })

	mu.Lock()
	s3, s7 := stacks[3], stacks[7]
	mu.Unlock()
	own, l3, l7 := grant(root, rootStore), grant(s3.g, s3.st), grant(s7.g, s7.st)
	unknown := shards.NewID(5)

	mux := http.NewServeMux()
	shardedLeases{root, m}.Routes(plainMux{mux})
	post := func(path string, body any) (int, []apitypes.BatchResult) {
		raw, _ := json.Marshal(body)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(string(raw))))
		var out apitypes.BatchResults
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out.Results
	}
	type renewal struct {
		ID       string `json:"id"`
		Duration int64  `json:"duration"`
	}
	code, res := post("/v1/leases/renew", map[string]any{"leases": []renewal{{l7, 30_000}, {own, 30_000}, {l3, 30_000}, {unknown, 30_000}}})
	if code != http.StatusOK || len(res) != 4 {
		t.Fatalf("renew: %d %+v", code, res)
	}
	for i, want := range []string{l7, own, l3} {
		if res[i].Error != nil || res[i].Expiration == 0 || !strings.HasPrefix(want, strings.TrimSuffix(res[i].ID, "…")) {
			t.Errorf("result %d: %+v, want %s renewed", i, res[i], want)
		}
	}
	if res[3].Error == nil || res[3].Error.Code != apitypes.UnknownLease {
		t.Errorf("the unknown lease: %+v", res[3])
	}
	code, res = post("/v1/leases/cancel", map[string]any{"ids": []string{l3, own}})
	if code != http.StatusOK || len(res) != 2 || res[0].Error != nil || res[1].Error != nil {
		t.Fatalf("cancel: %d %+v", code, res)
	}
	if _, err := s3.g.Get(l3); err == nil {
		t.Error("shard 3's lease still there after the cancel")
	}
	if _, err := root.Get(own); err == nil {
		t.Error("the deployment's own lease still there after the cancel")
	}
	// A batch that does not read is the deployment's grantor's to refuse.
	if code, _ := post("/v1/leases/renew", map[string]any{"leases": nil}); code != http.StatusBadRequest {
		t.Errorf("a batch without leases: %d", code)
	}
}

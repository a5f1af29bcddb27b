//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// grantorStack is a shard's lease grantor and its routes.
type grantorStack struct {
	g   *lease.Grantor
	st  *store.Store
	mux *http.ServeMux
}

func (s grantorStack) Start(ctx context.Context) error      { return s.g.Start(ctx) }
func (s grantorStack) Shutdown(ctx context.Context) error   { return s.g.Shutdown(ctx) }
func (s grantorStack) Handler() http.Handler                { return s.mux }
func (s grantorStack) Services() []httpjson.Service         { return []httpjson.Service{s.g, setsPlacer{}} }
func (s grantorStack) Inside(string) (event.Receiver, bool) { return nil, false }

// plainMux registers routes with no guard.
type plainMux struct{ *http.ServeMux }

func (m plainMux) Handle(_ httpjson.Need, pattern string, h http.HandlerFunc) {
	m.HandleFunc(pattern, h)
}

// setsPlacer places as the services with registrations do: by {id}, a
// new one with its owner's; its status page nowhere.
type setsPlacer struct{}

func (setsPlacer) Name() string   { return "sets" }
func (setsPlacer) Prefix() string { return "/v1/sets" }
func (setsPlacer) Routes(mux httpjson.Mux) {
	for _, p := range []string{"POST /v1/sets", "GET /v1/sets/{id}", "GET /v1/sets/status"} {
		mux.Handle(httpjson.Client, p, func(http.ResponseWriter, *http.Request) {})
	}
}
func (setsPlacer) Place(r *http.Request) httpjson.Place {
	if r.Pattern == "GET /v1/sets/status" {
		return httpjson.Place{}
	}
	return httpjson.ByKey(r.PathValue("id"))
}
func (setsPlacer) Holds(string) bool { return false }

// shardsOfGrantors is a node of one member holding every shard, each a
// lease grantor.
func shardsOfGrantors(t *testing.T) (*Manager, func(k int) grantorStack) {
	log := slog.New(slog.DiscardHandler)
	n := &fakeNode{name: "node-a", dir: t.TempDir(), held: map[string]bool{}}
	n.setMembers("node-a")
	var mu sync.Mutex
	stacks := map[int]grantorStack{}
	m := NewManager(Config{Node: n, Logger: log, Build: func(k int, st *store.Store) (Stack, error) {
		g := lease.New(st, clock.Real{}, log)
		g.SetNewID(func() string { return NewID(k) })
		g.Register("thing", lease.Policy{Default: 60_000, Max: 600_000}, func(*store.Tx, string) error { return nil })
		s := grantorStack{g: g, st: st, mux: http.NewServeMux()}
		g.Routes(plainMux{s.mux})
		mu.Lock()
		stacks[k] = s
		mu.Unlock()
		return s, nil
	}})
	startHoldingAll(t, m)
	return m, func(k int) grantorStack {
		mu.Lock()
		defer mu.Unlock()
		return stacks[k]
	}
}

// grant makes a lease at g.
func grant(t *testing.T, g *lease.Grantor, st *store.Store) string {
	t.Helper()
	var rec lease.Record
	err := st.Update(func(tx *store.Tx) error {
		var err error
		rec, err = g.Grant(tx, "thing", "r", "owner", 60_000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

// A batch of leases of several shards and of the deployment's own
// grantor: each part renewed (or cancelled) where its leases are, the
// answers in the batch's order; an unknown lease answered as its shard's
// grantor answers it. The grantor cuts the batch (its JSON is its own);
// the cluster says where each lease is.
func TestRoutedLeaseBatches(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	rootStore, err := store.Open(t.TempDir() + "/root")
	if err != nil {
		t.Fatal(err)
	}
	defer rootStore.Close()
	root := lease.New(rootStore, clock.Real{}, log)
	root.Register("thing", lease.Policy{Default: 60_000, Max: 600_000}, func(*store.Tx, string) error { return nil })
	m, stack := shardsOfGrantors(t)
	s3, s7 := stack(3), stack(7)
	own, l3, l7 := grant(t, root, rootStore), grant(t, s3.g, s3.st), grant(t, s7.g, s7.st)
	unknown := NewID(5)

	mux := http.NewServeMux()
	m.Route(root).Routes(plainMux{mux})
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
	// One lease by its ID: at its shard, or here when the deployment's
	// grantor holds it.
	for _, id := range []string{l7, grant(t, root, rootStore)} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/leases/"+id+"/renew", strings.NewReader(`{"duration":30000}`)))
		if rec.Code != http.StatusOK {
			t.Errorf("renewing %s by its ID: %d %s", id, rec.Code, rec.Body)
		}
	}
	// A batch that does not read is the deployment's grantor's to refuse.
	if code, _ := post("/v1/leases/renew", map[string]any{"leases": nil}); code != http.StatusBadRequest {
		t.Errorf("a batch without leases: %d", code)
	}
}

// A node places a request as the shards' services place it, without
// the deployment's services: by the key it names, a new registration by
// its owner (an administrator's in a shard held here), a batch or a
// request placed nowhere not at all.
func TestPlace(t *testing.T) {
	m, _ := shardsOfGrantors(t)
	id := NewID(9)
	as := func(r *http.Request, principal string) *http.Request {
		ctx, err := access.WithForwarded(r.Context(), base64.RawURLEncoding.EncodeToString([]byte(principal)))
		if err != nil {
			t.Fatal(err)
		}
		return r.WithContext(ctx)
	}
	const client, admin = `{"name":"c","scope":"client","owner":"owner-1"}`, `{"name":"a","scope":"admin"}`
	cases := []struct {
		name   string
		method string
		path   string
		want   int // -1: not placed
	}{
		{"a lease by its ID", "POST", "/v1/leases/" + id + "/renew", 9},
		{"a registration by its ID", "GET", "/v1/sets/" + id, 9},
		{"a new registration", "POST", "/v1/sets", ForOwner("owner-1")},
		{"a batch", "POST", "/v1/leases/renew", -1},
		{"placed nowhere", "GET", "/v1/sets/status", -1},
		{"no such route", "GET", "/v1/other", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := as(httptest.NewRequest(c.method, c.path, strings.NewReader("{}")), client)
			p, ok := m.Place(r)
			switch {
			case c.want < 0 && ok:
				t.Errorf("placed in shard %d, want not placed", p.Shard)
			case c.want >= 0 && (!ok || p.Shard != c.want):
				t.Errorf("placed %v in %d, want %d", ok, p.Shard, c.want)
			}
			if b, _ := httpjson.Body(r); string(b) != "{}" {
				t.Errorf("placing read the body: %q left", b)
			}
		})
	}
	if p, ok := m.Place(as(httptest.NewRequest("POST", "/v1/sets", nil), admin)); !ok {
		t.Error("an administrator's new registration not placed")
	} else if _, here := m.Local(p.Shard); !here {
		t.Errorf("an administrator's new registration placed in shard %d, not held here", p.Shard)
	}
}

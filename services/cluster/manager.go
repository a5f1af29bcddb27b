//go:build !jinid_omit_etcd

package cluster

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

// Node is what the manager needs of this node's membership
// (*store.EtcdNode).
type Node interface {
	Name() string
	Members() []store.Member
	// Refresh reads the members again now.
	Refresh()
	Hold(ctx context.Context, shard string, hc store.HoldConfig) (*store.Store, error)
}

// Stack is what a node runs for a shard it holds: the shard's services
// on the shard's store.
type Stack interface {
	lifecycle.Service
	// Handler serves the shard's routes. The caller's principal is in
	// the request's context already: its token (or address) was checked
	// where the request came in.
	Handler() http.Handler
	// Services are the shard's parts of the API: where each places its
	// requests (httpjson.Placer) is how a node places one it does not
	// serve itself (Manager.Place).
	Services() []httpjson.Service
	// Inside is the receiver, in the process, of one of the shard's
	// mailbox listeners (mailbox.Service.Inside).
	Inside(listener string) (event.Receiver, bool)
}

// Config gives a Manager its dependencies.
type Config struct {
	Node Node
	// Build makes shard k's stack on its store.
	Build func(k int, st *store.Store) (Stack, error)
	// Peers reaches the other nodes, for the shards they hold.
	Peers  *Peers
	Logger *slog.Logger
	// Every is how often the members are looked at: 1 s if 0 (the node
	// reads them every second).
	Every time.Duration
	// Wait bounds how long a request for a shard this node is to hold
	// waits for it to be taken: 3 s if 0.
	Wait time.Duration
	// Metrics, if set, counts the requests other nodes forward here.
	Metrics *metrics.Registry
}

// Manager holds the shards rendezvous hashing gives this node, and lets
// go of those it gives another, following the members.
type Manager struct {
	cfg  Config
	log  *slog.Logger
	loop *lifecycle.Periodic

	mu      sync.Mutex
	slots   [Count]*slot
	retry   [Count]time.Time // a shard whose stack failed is tried again from then
	stopped bool
	// told is the shards held as the log last said them: each shard's
	// comings and goings are debug lines, the set one info line when it
	// changes (a start said "holding a shard" sixteen times).
	told []int

	placing placing
	// forwarded counts the requests other nodes forwarded here, by what
	// for: the deployment's API ("api") or a shard ("shard").
	forwarded *metrics.Counter
}

// slot is a shard this node holds, or waits to hold.
type slot struct {
	cancel    context.CancelFunc
	cancelled bool
	done      chan struct{} // closed when its goroutine ends
	ready     chan struct{} // closed once its stack serves
	stack     Stack         // set before ready is closed
}

// failedRetry is how long a shard whose stack would not build or start
// waits before this node tries again (its log says why).
const failedRetry = 30 * time.Second

// NewManager returns a manager; Start begins following the members.
func NewManager(cfg Config) *Manager {
	cfg.Every = cmp.Or(cfg.Every, time.Second)
	cfg.Wait = cmp.Or(cfg.Wait, 3*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: cfg.Logger.With("component", "shards"),
		forwarded: cfg.Metrics.Counter("jinid_cluster_forwarded_total",
			`Requests other nodes of the cluster forwarded to this one, by what for: the deployment's API ("api", this node holding the store) or a shard this node holds ("shard").`, "for")}
	m.loop = lifecycle.Every(cfg.Every, m.rebalance)
	return m
}

// Start takes the shards this node should hold now, and from then on
// follows the members.
func (m *Manager) Start(ctx context.Context) error {
	m.rebalance()
	return m.loop.Start(ctx)
}

// Shutdown lets every shard go (their stacks shut down, their holds
// released), waiting for them until ctx ends.
func (m *Manager) Shutdown(ctx context.Context) error {
	err := m.loop.Shutdown(ctx)
	m.mu.Lock()
	m.stopped = true
	var done []chan struct{}
	for _, sl := range m.slots {
		if sl != nil {
			sl.cancel()
			sl.cancelled = true
			done = append(done, sl.done)
		}
	}
	m.mu.Unlock()
	for _, d := range done {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// names are the members' names.
func names(ms []store.Member) []string {
	out := make([]string, 0, len(ms))
	for _, mb := range ms {
		out = append(out, mb.Node)
	}
	return out
}

// rebalance takes the shards this node should hold that it does not
// yet, and lets go of those it should not.
func (m *Manager) rebalance() {
	members := names(m.cfg.Node.Members())
	self := m.cfg.Node.Name()
	if !slices.Contains(members, self) {
		// Not (yet) seen as a member: this node holds nothing it is
		// not sure to be given.
		members = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	now := time.Now()
	for k := range Count {
		sl := m.slots[k]
		if sl != nil && finished(sl) {
			m.slots[k], sl = nil, nil
		}
		want := Owner(k, members) == self
		switch {
		case want && sl == nil && now.After(m.retry[k]):
			m.slots[k] = m.take(k)
		case !want && sl != nil && !sl.cancelled:
			m.log.Debug("letting a shard go to another node", "shard", k, "to", Owner(k, members))
			sl.cancel()
			sl.cancelled = true
		}
	}
	var held []int
	for k, sl := range m.slots {
		if sl != nil && !sl.cancelled && isClosed(sl.ready) {
			held = append(held, k)
		}
	}
	if !slices.Equal(held, m.told) {
		m.log.Info("shards held", "count", len(held), "of", Count, "shards", held)
		m.told = held
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func finished(sl *slot) bool {
	select {
	case <-sl.done:
		return true
	default:
		return false
	}
}

// take starts holding shard k: it waits for the hold (the node that had
// it lets it go, or its lease ends), then builds and starts the shard's
// stack, serves until cancelled, and lets the shard go.
func (m *Manager) take(k int) *slot {
	ctx, cancel := context.WithCancel(context.Background())
	sl := &slot{cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go func() {
		defer close(sl.done)
		defer cancel()
		st, err := m.cfg.Node.Hold(ctx, Name(k), store.HoldConfig{Waiting: func(holder string) {
			m.log.Debug("waiting for another node to let a shard go", "shard", k, "holder", holder)
		}})
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("taking a shard", "shard", k, "err", err)
			}
			return
		}
		stack, err := m.cfg.Build(k, st)
		if err == nil {
			if err = stack.Start(ctx); err != nil {
				stack.Shutdown(context.Background())
			}
		}
		if err != nil {
			m.log.Error("a shard this node holds cannot run: letting it go, trying again later", "shard", k, "err", err,
				"retry_in", failedRetry)
			m.mu.Lock()
			m.retry[k] = time.Now().Add(failedRetry)
			m.mu.Unlock()
			st.Close()
			return
		}
		m.placing.learn(stack.Services())
		sl.stack = stack
		close(sl.ready)
		m.log.Debug("holding a shard", "shard", k)
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := stack.Shutdown(sctx); err != nil {
			m.log.Warn("shutting down a shard's services", "shard", k, "err", err)
		}
		if err := st.Close(); err != nil {
			m.log.Warn("letting a shard go", "shard", k, "err", err)
		}
		m.log.Debug("let a shard go", "shard", k)
	}()
	return sl
}

// Local is shard k's stack if this node serves it now.
func (m *Manager) Local(k int) (Stack, bool) {
	m.mu.Lock()
	sl := m.slots[k]
	m.mu.Unlock()
	if sl == nil || sl.cancelled {
		return nil, false
	}
	select {
	case <-sl.ready:
		return sl.stack, true
	default:
		return nil, false
	}
}

// Held lists the shards this node serves now.
func (m *Manager) Held() []int {
	var out []int
	m.each(func(k int, _ Stack) { out = append(out, k) })
	return out
}

// Stacks are the stacks of the shards this node serves now.
func (m *Manager) Stacks() []Stack {
	var out []Stack
	m.each(func(_ int, s Stack) { out = append(out, s) })
	return out
}

// each calls f with each shard this node serves now, and its stack.
func (m *Manager) each(f func(k int, s Stack)) {
	for k := range Count {
		if s, ok := m.Local(k); ok {
			f(k, s)
		}
	}
}

// await waits, until ctx ends or the manager's Wait passes, for shard k
// to be served here, if this node is taking it.
func (m *Manager) await(ctx context.Context, k int) (Stack, bool) {
	if s, ok := m.Local(k); ok {
		return s, true
	}
	t := time.NewTimer(m.cfg.Wait)
	defer t.Stop()
	for {
		m.mu.Lock()
		sl := m.slots[k]
		m.mu.Unlock()
		var ready, done <-chan struct{}
		if sl != nil && !sl.cancelled {
			ready, done = sl.ready, sl.done
		}
		// Not taken yet (the next look at the members takes it): look
		// again in a while.
		again := time.After(m.cfg.Every / 4)
		select {
		case <-ready:
			return sl.stack, true
		case <-done:
			return nil, false
		case <-again:
			if s, ok := m.Local(k); ok {
				return s, true
			}
		case <-t.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

// here is shard k's stack if this node serves it, or is taking it and
// serves it within the manager's Wait.
func (m *Manager) here(ctx context.Context, k int) (Stack, bool) {
	if s, ok := m.Local(k); ok {
		return s, true
	}
	if Owner(k, names(m.cfg.Node.Members())) != m.cfg.Node.Name() {
		return nil, false
	}
	return m.await(ctx, k)
}

// moving is the answer for a shard changing hands.
func moving(w http.ResponseWriter, k int) {
	w.Header().Set("Retry-After", "1")
	httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1,
		"the shard of this request (%d) is moving between the cluster's nodes; the request was not sent to any: try again in a second", k))
}

// Serve answers r from shard k: here if this node holds it, else at the
// node that does (Peers). When that node does not answer (it died, and
// the members read a second ago still name it), the members are read
// again, and the request goes to the shard's node then, if another.
func (m *Manager) Serve(k int, w http.ResponseWriter, r *http.Request) {
	if s, ok := m.here(r.Context(), k); ok {
		s.Handler().ServeHTTP(w, r)
		return
	}
	// The body, to send again: bounded by the API's limit, as the
	// services read it.
	body, err := httpjson.Body(r)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	pauses := NotSentPauses()
	for attempt := range len(pauses) + 1 {
		if attempt > 0 {
			// Not sent: the node may have died (read the members
			// again), or it may not have read this one's record yet
			// (a node that just joined is a stranger to it until it
			// does: its refusal had it read them).
			if !Pause(r.Context(), pauses[attempt-1]) {
				break
			}
			m.cfg.Node.Refresh()
			if s, ok := m.here(r.Context(), k); ok {
				r.Body = io.NopCloser(bytes.NewReader(body))
				s.Handler().ServeHTTP(w, r)
				return
			}
		}
		members := m.cfg.Node.Members()
		owner := Owner(k, names(members))
		i := slices.IndexFunc(members, func(mb store.Member) bool { return mb.Node == owner })
		if owner == m.cfg.Node.Name() || i < 0 {
			break
		}
		if err := m.cfg.Peers.Forward(w, r, body, members[i], k); err == nil {
			return
		}
	}
	moving(w, k)
}

// NotSentPauses are the pauses before a request that could not be sent
// to another node is tried again (the members read again each time):
// about a second and a half in all, the time a node takes at most to
// read the members' records anew.
func NotSentPauses() []time.Duration {
	return []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, time.Second}
}

// Pause waits d, or until ctx ends (false): the pause before a request
// not sent is tried again (NotSentPauses).
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// PeerHandler serves what the other nodes forward, on connections
// proven to come from members (Peers' TLS): requests for the shards this
// node holds, and those for the deployment's API, which api serves
// (HolderAPI). A request for a shard not held here is not forwarded
// again: it is told the shard is moving.
func (m *Manager) PeerHandler(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(shardHeader) == "" && r.Header.Get(baseHeader) != "" {
			m.forwarded.Inc("api")
			api.ServeHTTP(w, r)
			return
		}
		m.forwarded.Inc("shard")
		k, err := strconv.Atoi(r.Header.Get(shardHeader))
		if err != nil || k < 0 || k >= Count {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "a forwarded request names no shard (%s)", shardHeader))
			return
		}
		ctx, err := access.WithForwarded(r.Context(), r.Header.Get(principalHeader))
		if err != nil {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "%s", err))
			return
		}
		if v := r.Header.Get(baseHeader); v != "" {
			base, err := parseBase(v)
			if err != nil {
				httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "%s: %v", baseHeader, err))
				return
			}
			r.Header.Del(baseHeader)
			ctx = httpjson.WithBase(ctx, base)
		}
		if s, ok := m.here(ctx, k); ok {
			s.Handler().ServeHTTP(w, r.WithContext(ctx))
			return
		}
		moving(w, k)
	})
}

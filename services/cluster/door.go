//go:build !jinid_omit_etcd

package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// Reads at a node that does not hold the store (docs/cluster.md,
// "Reads at every node").
const (
	// ReadStaleness bounds how old a read answered from a node's copy
	// may be: it holds every change committed ReadStaleness before it.
	// A copy etcd has not confirmed current within it is not read: the
	// holder answers.
	ReadStaleness = time.Second
	// copyWait bounds how long the answer to a change forwarded to the
	// holder waits for the copy to hold the change (read-your-writes);
	// past it the node's reads go to the holder until it does.
	copyWait = 2 * time.Second
	// forwardWait bounds a request forwarded to the holder: a long
	// poll's 25 s, within the API server's write timeout (30 s).
	forwardWait = 28 * time.Second
)

// DoorConfig gives a Door its dependencies.
type DoorConfig struct {
	Node   *Joined
	Peers  *Peers
	Shards *Manager
	// Holder is the holder's record as last heard; until one is, it
	// waits for it until ctx ends.
	Holder func(ctx context.Context) store.Member
	// Lookup configures the copy of the registry (lookup.NewFollower).
	Lookup lookup.Config
	Logger *slog.Logger
}

// Door is a node's API while another node holds the store, as a
// handler's parts the composition root serves: the registry's reads
// (the lookup service's GET routes and queries) answered from a copy of
// the registry in memory, fed by an etcd watch; a request its service
// places in a shard sent straight to the node holding that shard;
// everything else forwarded to the holder over the cluster listener,
// with the caller as this node authenticated it against its copy of the
// tokens. What a client changed through this node it reads back through
// it at once (Writes).
type Door struct {
	cfg      DoorConfig
	log      *slog.Logger
	reg      *lookup.Registrar
	tokens   *access.Tokens
	follower *store.Follower
	writes   Writes
}

// NewDoor returns a door; Start begins following the registry.
func NewDoor(cfg DoorConfig) *Door {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Door{cfg: cfg, log: cfg.Logger, reg: lookup.NewFollower(cfg.Lookup), tokens: access.NewFollowingTokens(nil, cfg.Logger)}
}

// Start loads the copy of the registry and the tokens, and follows them.
func (d *Door) Start(ctx context.Context) error {
	f, err := d.cfg.Node.Follow(ctx, store.FollowConfig{Buckets: append(lookup.FollowedBuckets(), access.TokensBucket), Logger: d.log,
		Apply: func(b store.Batch) error { return errors.Join(d.reg.Follow(b), d.tokens.Follow(b)) }})
	if err != nil {
		return fmt.Errorf("a copy of the registry for this node's reads: %w", err)
	}
	d.follower = f
	return nil
}

// Shutdown stops following.
func (d *Door) Shutdown(context.Context) error {
	if d.follower != nil {
		d.follower.Close()
	}
	return nil
}

// Registrar is the copy of the registry; Tokens, the copy of the tokens
// (what the node's guard checks callers against).
func (d *Door) Registrar() *lookup.Registrar { return d.reg }
func (d *Door) Tokens() *access.Tokens       { return d.tokens }

// Revision is the etcd revision the copy holds every change up to.
func (d *Door) Revision() int64 { return d.follower.Revision() }

// Writes is read-your-writes at a node: the highest revision of the
// store an answer passed on through it carried. Its copy answers a read
// only once it holds that revision.
type Writes struct{ need atomic.Int64 }

// Seen notes that an answer passed on reflects revision rev.
func (w *Writes) Seen(rev int64) {
	for n := w.need.Load(); n < rev && !w.need.CompareAndSwap(n, rev); n = w.need.Load() {
	}
}

// Need is the revision a copy must hold to answer.
func (w *Writes) Need() int64 { return w.need.Load() }

// local says whether the copy may answer a read now: etcd confirmed it
// current within ReadStaleness, and it holds every change forwarded
// through this node (waiting a moment for the last of those).
func (d *Door) local(ctx context.Context) bool {
	if checkStaleness && !d.follower.Current(ReadStaleness) {
		return false
	}
	need := d.writes.Need()
	if d.follower.Revision() >= need {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, ReadStaleness/4)
	defer cancel()
	return d.follower.Wait(wctx, need) == nil
}

// Forward answers a request the copy does not: at the node holding its
// shard, if its service places it in one (toShard), by the holder
// otherwise. It is the node's API's fallback.
func (d *Door) Forward(w http.ResponseWriter, r *http.Request) {
	body, err := httpjson.Body(r)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if d.toShard(w, r, body) {
		return
	}
	holder := func() store.Member {
		hctx, cancel := context.WithTimeout(r.Context(), copyWait)
		defer cancel()
		return d.cfg.Holder(hctx)
	}
	m := holder()
	seen := func(rev int64) {
		d.writes.Seen(rev)
		ctx, cancel := context.WithTimeout(r.Context(), copyWait)
		defer cancel()
		d.follower.Wait(ctx, rev)
	}
	// Past the server's write timeout nothing could be answered anyway.
	fctx, cancel := context.WithTimeout(r.Context(), forwardWait)
	defer cancel()
	err = d.cfg.Peers.ForwardAPI(w, r.WithContext(fctx), body, m, seen)
	for _, p := range NotSentPauses() {
		if err == nil {
			break
		}
		// Not sent (no connection with the holder had): again, to the
		// holder as read anew, after a pause (a holder that has not
		// read this node's record yet refuses it until it does).
		if !Pause(fctx, p) {
			break
		}
		d.cfg.Node.Refresh()
		m = holder()
		err = d.cfg.Peers.ForwardAPI(w, r.WithContext(fctx), body, m, seen)
	}
	if err != nil {
		w.Header().Set("Retry-After", "1")
		httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1,
			"the node holding the store (%s) could not be reached; the request was not sent: try again in a second (another takes over within the cluster's lease)", fault.Short(m.Node)))
	}
}

// toShard serves r at the node holding its shard (this one, or another
// over the peers: never through the holder of the store), when the
// shards' services place it in one, and says whether it did. The
// caller's scope is checked first, as the route's guard would. A lease
// the copy knows as an item's is the deployment's (the holder's). A
// registration its shard does not know (404: one made before the
// cluster, which the deployment's services keep) is the holder's to
// answer after all; nothing was done.
func (d *Door) toShard(w http.ResponseWriter, r *http.Request, body []byte) bool {
	p, ok := d.cfg.Shards.Place(r)
	if !ok || p.Key != "" && d.reg.FollowsLease(p.Key) {
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	uw := &unknownWriter{ResponseWriter: w, header: http.Header{}}
	access.Require(p.Need, func(w http.ResponseWriter, r *http.Request) { d.cfg.Shards.Serve(p.Shard, w, r) })(uw, r)
	return !uw.unknown
}

// unknownWriter passes an answer on, unless it is 404 (Not Found):
// then it passes nothing, and says so.
type unknownWriter struct {
	http.ResponseWriter
	header  http.Header
	wrote   bool
	unknown bool
}

func (w *unknownWriter) Header() http.Header { return w.header }

func (w *unknownWriter) WriteHeader(code int) {
	if w.wrote || w.unknown {
		return
	}
	if code == http.StatusNotFound {
		w.unknown = true
		return
	}
	w.wrote = true
	for k, v := range w.header {
		w.ResponseWriter.Header()[k] = v
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *unknownWriter) Write(p []byte) (int, error) {
	if !w.wrote && !w.unknown {
		w.WriteHeader(http.StatusOK)
	}
	if w.unknown {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *unknownWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Ready is the door's readiness: its copy is current, and the holder
// known.
func (d *Door) Ready() []httpjson.Check {
	c := httpjson.Check{Name: "registry copy", OK: d.follower.Current(ReadStaleness),
		Detail: fmt.Sprintf("etcd confirmed it current within %s (revision %d)", ReadStaleness, d.follower.Revision())}
	if !c.OK {
		c.Detail = fmt.Sprintf("etcd has not confirmed this node's copy of the registry current within %s: reads go to the node holding the store", ReadStaleness)
	}
	// A context ended already: the holder as last heard, no waiting.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	m := d.cfg.Holder(now)
	h := httpjson.Check{Name: "holder", OK: len(m.Addrs) > 0, Detail: "changes go to " + m.Node}
	if !h.OK {
		h.Detail = "no node holds the store yet"
	}
	return []httpjson.Check{c, h}
}

// Reads is the lookup service's reads answered from the copy while it
// is current, by the holder otherwise (Forward).
func (d *Door) Reads() httpjson.Service { return copyReads{d.reg, d} }

type copyReads struct {
	*lookup.Registrar
	d *Door
}

func (c copyReads) Routes(mux httpjson.Mux) {
	c.Registrar.Routes(muxFunc(func(need httpjson.Need, pattern string, h http.HandlerFunc) {
		mux.Handle(need, pattern, func(w http.ResponseWriter, r *http.Request) {
			if c.d.local(r.Context()) {
				h(w, r)
				return
			}
			c.d.Forward(w, r)
		})
	}))
}

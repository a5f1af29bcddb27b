//go:build !jinid_omit_etcd

package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/cluster"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// Reads at a node that does not hold the store (docs/cluster.md,
// "Reads at every node").
const (
	// readStaleness bounds how old a read answered from a node's copy
	// may be: it holds every change committed readStaleness before it.
	// A copy etcd has not confirmed current within it is not read: the
	// holder answers.
	readStaleness = time.Second
	// copyWait bounds how long the answer to a change forwarded to the
	// holder waits for the copy to hold the change (read-your-writes);
	// past it the node's reads go to the holder until it does.
	copyWait = 2 * time.Second
	// forwardWait bounds a request forwarded to the holder: a long
	// poll's 25 s, within the API server's write timeout (30 s).
	forwardWait = 28 * time.Second
)

// door is a node's API while another node holds the store. It answers
// the registry's reads (the lookup service's GET routes and queries)
// from a copy of the registry in memory, fed by an etcd watch
// (store.Follower), and forwards everything else to the holder over the
// cluster listener (cluster.Peers.ForwardAPI), with the caller as this
// node authenticated it against its copy of the tokens. What a client
// changed through this node it reads back through it at once: the
// holder's answer carries the revision of its store, and is passed on
// once the copy holds it.
type door struct {
	d        *Daemon
	follower *store.Follower
	reg      *lookup.Registrar
	tokens   *access.Tokens
	peers    *cluster.Peers
	shards   *cluster.Manager
	guard    *access.Guard
	node     *store.EtcdNode
	holder   func(context.Context) store.Member
	srv      *http1.Server
	wg       sync.WaitGroup
	// need is the highest revision an answer forwarded through this
	// node carried: its copy answers only once it holds it.
	need atomic.Int64
	// names are the host names the door answers to.
	names []string
}

// startDoor starts the door's copy and serves ln (the API listener,
// not yet TLS-wrapped) with it.
func (d *Daemon) startDoor(ctx context.Context, ln, sock net.Listener, holder func(context.Context) store.Member) (*door, error) {
	dr := &door{d: d, peers: d.cluster.peers, shards: d.cluster.shards, node: d.cluster.node, holder: holder,
		reg: lookup.NewFollower(lookup.Config{Logger: d.log.With("service", "lookup", "copy", true), UnicastPort: func() int { return d.cfg.DiscoveryPort },
			PageSize: d.limits.PageSize, MaxPage: d.limits.MaxPage, PageBytes: d.limits.PageBytes, Listings: d.limits.Listings}),
		tokens: access.NewFollowingTokens(nil, d.log)}
	f, err := dr.node.Follow(ctx, store.FollowConfig{Buckets: append(lookup.FollowedBuckets(), access.TokensBucket), Logger: d.log,
		Apply: func(b store.Batch) error { return errors.Join(dr.reg.Follow(b), dr.tokens.Follow(b)) }})
	if err != nil {
		return nil, fmt.Errorf("a copy of the registry for this node's reads: %w", err)
	}
	dr.follower = f
	dr.names = d.namesFor(dr.reg.Meta().ServiceID)
	if d.cfg.TLSCert != "" {
		if ln, err = listenTLS(ln, d.cfg.TLSCert, d.cfg.TLSKey); err != nil {
			f.Close()
			return nil, err
		}
	}
	dr.guard = access.NewGuard(access.GuardConfig{Tokens: dr.tokens, Anonymous: d.cfg.Anonymous, Host: dr.hostAllowed, Logger: d.log})
	// /metrics is this node's own: each node is scraped for its part.
	h := api.New(api.Config{Services: []httpjson.Service{copyReads{dr.reg, dr}}, Guard: dr.guard, BodyBytes: int64(d.limits.BodyBytes), Metrics: d.obs.metrics,
		Logger: d.log, Ready: dr.ready, Fallback: http.HandlerFunc(dr.forward)})
	dr.srv = &http1.Server{Handler: h, ConnContext: d.connContext, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10, Logger: d.log}
	for _, l := range []net.Listener{ln, sock} {
		if l == nil {
			continue
		}
		dr.wg.Go(func() {
			if err := dr.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				d.log.Warn("serving the API while another node holds the store", "listener", l.Addr().String(), "err", err)
			}
		})
	}
	items, _ := dr.reg.Count()
	d.log.Info("serving the API: the registry's reads from this node's copy, the rest through the node holding the store",
		"api", ln.Addr().String(), "items", items, "revision", f.Revision(), "staleness", readStaleness)
	return dr, nil
}

// shutdown stops serving (the listener is the daemon's from now on) and
// following.
func (dr *door) shutdown(ctx context.Context) {
	dr.srv.Shutdown(ctx)
	dr.wg.Wait()
	dr.follower.Close()
}

// local says whether the copy may answer a read now: etcd confirmed it
// current within readStaleness, and it holds every change forwarded
// through this node (waiting a moment for the last of those).
func (dr *door) local(ctx context.Context) bool {
	if checkStaleness && !dr.follower.Current(readStaleness) {
		return false
	}
	need := dr.need.Load()
	if dr.follower.Revision() >= need {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, readStaleness/4)
	defer cancel()
	return dr.follower.Wait(wctx, need) == nil
}

// forward has the node holding r's shard answer it, if its service
// places it in one (toShard), and the holder otherwise.
func (dr *door) forward(w http.ResponseWriter, r *http.Request) {
	body, err := httpjson.Body(r)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if dr.toShard(w, r, body) {
		return
	}
	holder := func() store.Member {
		hctx, cancel := context.WithTimeout(r.Context(), copyWait)
		defer cancel()
		return dr.holder(hctx)
	}
	m := holder()
	seen := func(rev int64) {
		for n := dr.need.Load(); n < rev && !dr.need.CompareAndSwap(n, rev); n = dr.need.Load() {
		}
		ctx, cancel := context.WithTimeout(r.Context(), copyWait)
		defer cancel()
		dr.follower.Wait(ctx, rev)
	}
	// Past the server's write timeout nothing could be answered anyway.
	fctx, cancel := context.WithTimeout(r.Context(), forwardWait)
	defer cancel()
	err = dr.peers.ForwardAPI(w, r.WithContext(fctx), body, m, seen)
	for _, d := range cluster.NotSentPauses() {
		if err == nil {
			break
		}
		// Not sent (no connection with the holder had): again, to the
		// holder as read anew, after a pause (a holder that has not
		// read this node's record yet refuses it until it does).
		if !cluster.Pause(fctx, d) {
			break
		}
		dr.node.Refresh()
		m = holder()
		err = dr.peers.ForwardAPI(w, r.WithContext(fctx), body, m, seen)
	}
	if err != nil {
		w.Header().Set("Retry-After", "1")
		httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1,
			"the node holding the store (%s) could not be reached; the request was not sent: try again in a second (another takes over within the cluster's lease)", fault.Short(m.Node)))
	}
}

// toShard serves r at the node holding its shard (this one, or another
// over the peers: never through the holder of the store), when the
// shards' services place it in one, and says whether it did. A lease
// the copy knows as an item's is the deployment's (the holder's). A
// registration its shard does not know (404: one made before the
// cluster, which the deployment's services keep) is the holder's to
// answer after all; nothing was done.
func (dr *door) toShard(w http.ResponseWriter, r *http.Request, body []byte) bool {
	p, ok := dr.shards.Place(r)
	if !ok || p.Key != "" && dr.reg.FollowsLease(p.Key) {
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	uw := &unknownWriter{ResponseWriter: w, header: http.Header{}}
	dr.guard.Require(p.Need, func(w http.ResponseWriter, r *http.Request) { dr.shards.Serve(p.Shard, w, r) })(uw, r)
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

// ready is the door's readiness: its copy is current, and the holder
// known.
func (dr *door) ready() []api.Check {
	c := api.Check{Name: "registry copy", OK: dr.follower.Current(readStaleness),
		Detail: fmt.Sprintf("etcd confirmed it current within %s (revision %d)", readStaleness, dr.follower.Revision())}
	if !c.OK {
		c.Detail = fmt.Sprintf("etcd has not confirmed this node's copy of the registry current within %s: reads go to the node holding the store", readStaleness)
	}
	// A context ended already: the holder as last heard, no waiting.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	m := dr.holder(now)
	h := api.Check{Name: "holder", OK: len(m.Addrs) > 0, Detail: "changes go to " + m.Node}
	if !h.OK {
		h.Detail = "no node holds the store yet"
	}
	return []api.Check{c, h}
}

// hostAllowed is the Host check of the door's API (Daemon.hostAllowed):
// this host's addresses and names, and the other nodes' addresses.
func (dr *door) hostAllowed(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("").Unmap()
		return slices.Contains(dr.d.apiAddrs.get(), a) ||
			slices.ContainsFunc(dr.node.Members(), func(m store.Member) bool { return slices.Contains(m.Addrs, a) })
	}
	return slices.Contains(dr.names, strings.ToLower(strings.TrimSuffix(host, ".")))
}

// copyReads is the lookup service's reads answered from the door's
// copy while it is current, by the holder otherwise.
type copyReads struct {
	*lookup.Registrar
	dr *door
}

func (c copyReads) Routes(mux httpjson.Mux) { c.Registrar.Routes(copyMux{mux, c.dr}) }

type copyMux struct {
	httpjson.Mux
	dr *door
}

func (m copyMux) Handle(need httpjson.Need, pattern string, h http.HandlerFunc) {
	m.Mux.Handle(need, pattern, func(w http.ResponseWriter, r *http.Request) {
		if m.dr.local(r.Context()) {
			h(w, r)
			return
		}
		m.dr.forward(w, r)
	})
}

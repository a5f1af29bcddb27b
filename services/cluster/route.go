//go:build !jinid_omit_etcd

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/outbound"
)

// Route is svc with its requests spread among the shards as svc places
// them (httpjson.Placer): those it places nowhere, and those naming a
// registration its own instance holds (the deployment's: a single box's
// state imported), it serves; the others the shard's stack serves, here
// or at the node holding it (Serve). The cluster reads no path or body
// of a service's: a route or a batch field added to one is placed as
// the service says. A service that is no Placer is svc.
func (m *Manager) Route(svc httpjson.Service) httpjson.Service {
	p, ok := svc.(httpjson.Placer)
	if !ok {
		return svc
	}
	return routed{p, m}
}

// splitter is a service that cuts its batches itself
// (lease.Grantor.ServeSplit).
type splitter interface {
	ServeSplit(w http.ResponseWriter, r *http.Request, h http.HandlerFunc,
		where func(id string) int, serve func(place int, w http.ResponseWriter, r *http.Request))
}

type routed struct {
	httpjson.Placer
	m *Manager
}

func (s routed) Routes(mux httpjson.Mux) {
	s.Placer.Routes(muxFunc(func(need httpjson.Need, pattern string, h http.HandlerFunc) {
		mux.Handle(need, pattern, func(w http.ResponseWriter, r *http.Request) {
			p := s.Place(r)
			switch {
			case p.Batch:
				sp, ok := s.Placer.(splitter)
				if !ok {
					h(w, r)
					return
				}
				sp.ServeSplit(w, r, h, func(id string) int {
					if s.Holds(id) {
						return httpjson.Here
					}
					return Of(id)
				}, s.m.Serve)
			case p.Owner:
				s.m.Serve(ForOwner(access.PrincipalOf(r.Context()).Owner()), w, r)
			case p.Key == "" || s.Holds(p.Key):
				h(w, r)
			default:
				s.m.Serve(Of(p.Key), w, r)
			}
		})
	}))
}

// muxFunc adapts a function to httpjson.Mux.
type muxFunc func(need httpjson.Need, pattern string, h http.HandlerFunc)

func (f muxFunc) Handle(need httpjson.Need, pattern string, h http.HandlerFunc) { f(need, pattern, h) }

// placing is how a node places a request without the deployment's
// services (a node that does not hold the store): the routes of a
// shard's services, each answering where its service places the
// request. Placement is the same in every shard; the first stack built
// gives it.
type placing struct {
	mux atomic.Pointer[http.ServeMux]
}

// placeKey carries a placement's answer out of the placing mux.
type placeKey struct{}

// placed is the placing mux's answer: the route's placement and need.
type placed struct {
	httpjson.Place
	need    httpjson.Need
	matched bool
}

func (pl *placing) learn(services []httpjson.Service) {
	if pl.mux.Load() != nil {
		return
	}
	mux := http.NewServeMux()
	for _, svc := range services {
		p, ok := svc.(httpjson.Placer)
		if !ok {
			continue
		}
		p.Routes(muxFunc(func(need httpjson.Need, pattern string, _ http.HandlerFunc) {
			mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
				if out, ok := r.Context().Value(placeKey{}).(*placed); ok {
					out.Place, out.need, out.matched = p.Place(r), need, true
				}
			})
		}))
	}
	pl.mux.CompareAndSwap(nil, mux)
}

// Place is the shard r belongs in, as the shards' services place it;
// false for a request they place nowhere (the deployment's), a batch,
// or before this node built a shard's services. A new registration of
// an administrator (no owner key) goes to a shard held here, if any.
func (m *Manager) Place(r *http.Request) (Placement, bool) {
	mux := m.placing.mux.Load()
	if mux == nil {
		return Placement{}, false
	}
	var p placed
	probe := r.Clone(context.WithValue(r.Context(), placeKey{}, &p))
	probe.Body = http.NoBody
	mux.ServeHTTP(discard{}, probe)
	switch {
	case !p.matched || p.Batch:
		return Placement{}, false
	case p.Owner:
		owner := access.PrincipalOf(r.Context()).Owner()
		if held := m.Held(); owner == "" && len(held) > 0 {
			return Placement{Shard: held[rand.N(len(held))], Need: p.need}, true
		}
		return Placement{Shard: ForOwner(owner), Need: p.need}, true
	case p.Key != "":
		return Placement{Shard: Of(p.Key), Key: p.Key, Need: p.need}, true
	}
	return Placement{}, false
}

// Placement is a request's shard, the key that placed it ("" for a new
// registration), and what its route needs of the caller: a shard's
// routes check nothing (the node where a request comes in does, and
// the caller goes with the request), so whoever serves a placed request
// checks Need first.
type Placement struct {
	Shard int
	Key   string
	Need  httpjson.Need
}

// discard is the placing mux's ResponseWriter: it answers nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// Inside is the receiver, in the process, of a listener of the shards'
// mailboxes (their ListenerTag, tag): the mailbox of the shard the rest
// of its ID says, when this node holds it; else the node holding it,
// through the peers. False for any other listener.
func (m *Manager) Inside(tag, listener string) (event.Receiver, bool) {
	u, err := url.Parse(listener)
	if err != nil || tag == "" {
		return nil, false
	}
	id, ok := strings.CutPrefix(path.Clean(u.Path), mailbox.ListenerPath)
	if !ok || !strings.HasPrefix(id, tag) || len(id) <= len(tag) {
		return nil, false
	}
	k := Of(id[len(tag):])
	if s, ok := m.Local(k); ok {
		if rcv, ok := s.Inside(listener); ok {
			return rcv, true
		}
	}
	return func(body []byte, hops int) (event.Outcome, error) {
		if s, ok := m.Local(k); ok {
			if rcv, ok := s.Inside(listener); ok {
				return rcv(body, hops)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), outbound.DefaultTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://jinid"+mailbox.ListenerPath+id, bytes.NewReader(body))
		if err != nil {
			return event.Definite, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(event.HopsHeader, strconv.Itoa(hops))
		var rec httpjson.Recorder
		m.Serve(k, &rec, req)
		switch st := rec.Status(); {
		case st < 300:
			return event.Delivered, nil
		case st == http.StatusServiceUnavailable || st == http.StatusTooManyRequests:
			return event.Indefinite, fmt.Errorf("the cluster's mailbox (shard %d) takes no event now (%d)", k, st)
		default:
			return event.Definite, fmt.Errorf("the cluster's mailbox (shard %d) refused the event (%d)", k, st)
		}
	}, true
}

//go:build !jinid_omit_etcd

package cluster

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
)

// HolderAPI serves what the other nodes forward to the deployment's API
// (Peers.ForwardAPI): api() answers it (nil while this node does not
// hold the store: the caller is told to try again), with the caller the
// forwarding node authenticated and the base its client reached it at,
// and the answer says the store's revision once answered (revision),
// which the forwarding node's copy waits for.
func HolderAPI(api func() http.Handler, revision func() int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := api()
		if h == nil {
			w.Header().Set("Retry-After", "1")
			httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 1, "this node does not hold the store (any more): try again in a second"))
			return
		}
		ctx, err := access.WithForwarded(r.Context(), r.Header.Get(principalHeader))
		if err != nil {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "%s", err))
			return
		}
		base, err := parseBase(r.Header.Get(baseHeader))
		if err != nil {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "%s: %v", baseHeader, err))
			return
		}
		r.Header.Del(principalHeader)
		r.Header.Del(baseHeader)
		h.ServeHTTP(&revisionWriter{ResponseWriter: w, revision: revision}, r.WithContext(httpjson.WithBase(ctx, base)))
	})
}

// parseBase reads a baseHeader: an http or https URL with a host and
// nothing else, and the host alone.
func parseBase(v string) (httpjson.Base, error) {
	raw, host, ok := strings.Cut(v, " ")
	u, err := url.Parse(raw)
	if !ok || err != nil || raw != "" && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "") || host == "" ||
		strings.ContainsAny(host, " /") {
		return httpjson.Base{}, fault.New(apitypes.InvalidArgument, "want a base URL and its host")
	}
	return httpjson.Base{URL: raw, Host: host}, nil
}

// revisionWriter puts the store's revision on the answer as it starts:
// every change the request made was committed before.
type revisionWriter struct {
	http.ResponseWriter
	revision func() int64
	wrote    bool
}

func (w *revisionWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set(revisionHeader, strconv.FormatInt(w.revision(), 10))
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *revisionWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *revisionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

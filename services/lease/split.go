package lease

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/jinid/jinid/services/httpjson"
)

// Place and Holds place the lease endpoints among a cluster's shards
// (httpjson.Placer): a lease goes with its ID; a batch may hold leases
// of several places, and is cut by ServeSplit.
func (g *Grantor) Place(r *http.Request) httpjson.Place {
	if id := r.PathValue("id"); id != "" {
		return httpjson.Place{Key: id}
	}
	return httpjson.Place{Batch: true}
}

func (g *Grantor) Holds(id string) bool { _, err := g.Get(id); return err == nil }

// batchField is the list of a batch route's body: the leases to renew,
// the IDs to cancel.
var batchField = map[string]string{"POST /v1/leases/renew": "leases", "POST /v1/leases/cancel": "ids"}

// ServeSplit serves a batch (renew or cancel) whose leases may be in
// several places: where says each lease's (httpjson.Here for this
// grantor's), serve answers the part of a place, and the parts' results
// are put back in the batch's order. h is this grantor's own handler of
// the route: a batch that does not read, or is too large, is its to
// refuse, as on one box; one wholly here is its to serve. A part
// refused (its shard moving, say) is the batch's answer.
func (g *Grantor) ServeSplit(w http.ResponseWriter, r *http.Request, h http.HandlerFunc,
	where func(id string) int, serve func(place int, w http.ResponseWriter, r *http.Request)) {
	body, err := httpjson.Body(r)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	whole := func() {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h(w, r)
	}
	field, ok := batchField[r.Pattern]
	var top map[string]json.RawMessage
	if !ok || int64(len(body)) > httpjson.BodyLimit(r) || json.Unmarshal(body, &top) != nil || len(top) != 1 || top[field] == nil {
		whole()
		return
	}
	var elems []json.RawMessage
	if json.Unmarshal(top[field], &elems) != nil || elems == nil || g.CheckBatch(len(elems)) != nil {
		whole()
		return
	}
	parts := map[int][]int{} // place: the elements' indexes
	for i, e := range elems {
		var id string
		if field == "leases" {
			var l struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(e, &l) != nil {
				whole()
				return
			}
			id = l.ID
		} else if json.Unmarshal(e, &id) != nil {
			whole()
			return
		}
		place := httpjson.Here
		if id != "" {
			place = where(id)
		}
		parts[place] = append(parts[place], i)
	}
	if len(parts) == 1 && parts[httpjson.Here] != nil {
		whole()
		return
	}
	results := make([]json.RawMessage, len(elems))
	for place, idx := range parts {
		sub := make([]json.RawMessage, len(idx))
		for j, i := range idx {
			sub[j] = elems[i]
		}
		raw, _ := json.Marshal(map[string][]json.RawMessage{field: sub})
		part := r.Clone(r.Context())
		part.Body, part.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		var rec httpjson.Recorder
		if place == httpjson.Here {
			h(&rec, part)
		} else {
			serve(place, &rec, part)
		}
		var answer struct {
			Results []json.RawMessage `json:"results"`
		}
		if rec.Status() != http.StatusOK || json.Unmarshal(rec.Body(), &answer) != nil || len(answer.Results) != len(idx) {
			rec.CopyTo(w)
			return
		}
		for j, i := range idx {
			results[i] = answer.Results[j]
		}
	}
	httpjson.Write(w, http.StatusOK, map[string][]json.RawMessage{"results": results})
}

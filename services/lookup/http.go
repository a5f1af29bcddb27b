package lookup

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// Name, Prefix and Routes make the registrar a part of the API (API.md,
// "Lookup service").
func (r *Registrar) Name() string   { return "lookup service" }
func (r *Registrar) Prefix() string { return "/v1/lookup" }

// Place and Holds spread the notify registrations among a cluster's
// shards (httpjson.Placer): a new one goes with its owner's; the
// registry itself is the deployment's. A notify registration is reached
// afterwards through its lease alone (the lease grantor places it).
func (r *Registrar) Place(req *http.Request) httpjson.Place {
	if req.Pattern == NotifyRoute {
		return httpjson.Place{Owner: true}
	}
	return httpjson.Place{}
}

func (r *Registrar) Holds(string) bool { return false }

// Routes registers the lookup service's endpoints.
func (r *Registrar) Routes(mux httpjson.Mux) {
	if r.follower != nil {
		// A copy answers reads alone.
		mux = readsOnly{mux}
	}
	mux.Handle(httpjson.Read, "GET /v1/lookup", r.httpInfo)
	mux.Handle(httpjson.Client, "POST /v1/lookup/services", r.httpRegister)
	mux.Handle(httpjson.Read, "GET /v1/lookup/services", r.httpList)
	mux.Handle(httpjson.Read, "GET /v1/lookup/services/{serviceID}", r.httpGet)
	mux.Handle(httpjson.Read, "POST /v1/lookup/query", r.httpQuery)
	mux.Handle(httpjson.Client, NotifyRoute, r.httpNotify)
	mux.Handle(httpjson.Client, "POST /v1/lookup/services/{serviceID}/attributes", r.httpAttributes)
	mux.Handle(httpjson.Read, "GET /v1/lookup/groups", r.httpGroups)
	mux.Handle(httpjson.Admin, "PUT /v1/lookup/groups", r.httpSetGroups)
	mux.Handle(httpjson.Read, "GET /v1/lookup/locators", r.httpLocators)
	mux.Handle(httpjson.Admin, "PUT /v1/lookup/locators", r.httpSetLocators)
}

func (r *Registrar) leases() httpjson.Leases { return httpjson.Leases{Now: r.book.Now} }

func (r *Registrar) httpInfo(w http.ResponseWriter, req *http.Request) {
	m := r.Meta()
	httpjson.Write(w, http.StatusOK, apitypes.LookupInfo{ServiceID: m.ServiceID.String(), Groups: m.Groups,
		Locator: fmt.Sprintf("jini://%s:%d", httpjson.BaseOf(req).Host, r.unicastPort())})
}

func (r *Registrar) unicastPort() int {
	if r.cfg.UnicastPort == nil {
		return 4160
	}
	return r.cfg.UnicastPort()
}

func (r *Registrar) httpRegister(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Item          *apitypes.Item `json:"item"`
		LeaseDuration *int64         `json:"leaseDuration"`
	}
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if body.Item == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "item is required"))
		return
	}
	if err := httpjson.Required("leaseDuration", body.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	reg, err := r.Register(itemOf(*body.Item), *body.LeaseDuration, access.PrincipalOf(req.Context()).Owner())
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.Registered{ServiceID: reg.ServiceID, Lease: lease.Shown(r.leases().Of(req, reg.Lease.ID, reg.Lease.Expiration), reg.Lease)})
}

// httpList lists the items a page at a time: ?limit=N (default
// PageSize, at most MaxPage) and ?cursor= (the last page's nextCursor).
func (r *Registrar) httpList(w http.ResponseWriter, req *http.Request) {
	limit := cmp.Or(r.cfg.PageSize, DefaultPageSize)
	if s := req.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "limit %q: want a positive number", fault.Short(s)))
			return
		}
		limit = n
	}
	p, err := r.page(Template{}, req.URL.Query().Get("cursor"), limit)
	r.writePage(w, req, p, err)
}

// writePage sends a page, or err. A large page waits for a slot first.
func (r *Registrar) writePage(w http.ResponseWriter, req *http.Request, p aPage, err error) {
	if err == nil && p.bytes > smallPage {
		var done func()
		if done, err = r.listing(w, req); err == nil {
			defer done()
		}
	}
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	writeItems(w, p, r.ends(p.leases))
}

// ends are when the leases end (ms), in their order; 0 for one that
// ended meanwhile.
func (r *Registrar) ends(leases []string) []int64 {
	out := make([]int64, len(leases))
	for i, id := range leases {
		rec, _ := r.book.Get(id)
		out[i] = rec.Expiration
	}
	return out
}

// writeItems writes p as an apitypes.Items, the items one at a time, so
// that sending a page costs an item's worth of memory, not a page's.
func writeItems(w io.Writer, p aPage, ends []int64) error {
	if _, err := io.WriteString(w, `{"items":[`); err != nil {
		return err
	}
	// An Encoder writes each item from its own pooled buffer, without
	// the copy Marshal makes (and a newline, which JSON allows there).
	enc := json.NewEncoder(w)
	for i, it := range p.items {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(APIItem(it)); err != nil {
			return err // the client went: the rest is not sent
		}
	}
	tail, err := json.Marshal(apitypes.Items{TotalMatches: p.total, NextCursor: p.next, Expirations: ends, Hint: p.hint})
	if err != nil {
		return err
	}
	// tail is {"items":null,"totalMatches":…}: the part after the items.
	_, rest, _ := bytes.Cut(tail, []byte(`"items":null`))
	_, err = fmt.Fprintf(w, "]%s\n", rest)
	return err
}

// smallPage is a page sent without a slot: what it costs is lost in the
// noise, and a small lookup does not wait behind large listings.
const smallPage = 64 << 10

// Waiting for a listing slot, and sending a page: a page is a megabyte
// at most, which a client on the LAN takes in well under a second.
const (
	listingWait = 5 * time.Second
	pageSend    = 10 * time.Second
)

// listing takes one of the slots for pages in the making, waiting
// listingWait at most (the caller is told to try again after that), and
// bounds the time to send the page, so that a client that does not read
// cannot hold a slot. done gives the slot back.
func (r *Registrar) listing(w http.ResponseWriter, req *http.Request) (done func(), err error) {
	t := time.NewTimer(listingWait)
	defer t.Stop()
	select {
	case r.listings <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	case <-t.C:
		return nil, fault.Limit(apitypes.Unavailable, "listings", 1, "%d listings are being sent; try again", cap(r.listings))
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(pageSend))
	return func() { <-r.listings }, nil
}

// httpGet returns one item and when its registration's lease ends (not
// the lease itself: ServiceIDs are public, lease IDs are capabilities).
func (r *Registrar) httpGet(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("serviceID")
	items, _, err := r.Query(Template{ServiceID: id}, 1)
	if err == nil && len(items) == 0 {
		err = fault.New(apitypes.NoSuchObject, "no service %q is registered", fault.Short(id))
	}
	var exp int64
	if err == nil {
		rec, lerr := r.Lease(id)
		exp, err = rec.Expiration, lerr
	}
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.Service{Item: APIItem(items[0]), Expiration: exp})
}

func (r *Registrar) httpQuery(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Template   *apitypes.Template `json:"template"`
		MaxMatches *int               `json:"maxMatches"`
	}
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if body.Template == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "template is required ({} matches everything)"))
		return
	}
	if body.MaxMatches == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "maxMatches is required"))
		return
	}
	t := templateOf(*body.Template)
	if err := r.resolveShortNames(&t); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	p, err := r.page(t, "", *body.MaxMatches)
	p.next = "" // a query is one page: totalMatches tells there are more
	if err == nil && p.total == 0 {
		p.hint = r.hint(t)
	}
	r.writePage(w, req, p, err)
}

func (r *Registrar) httpNotify(w http.ResponseWriter, req *http.Request) {
	serveNotify(w, req, r.Notify, r.leases())
}

// serveNotify answers a notify request with notify's registration.
func serveNotify(w http.ResponseWriter, req *http.Request, notify func(NotifyRequest) (NotifyRegistration, error), leases httpjson.Leases) {
	var body struct {
		Template      *apitypes.Template `json:"template"`
		Transitions   []string           `json:"transitions"`
		Listener      *apitypes.Listener `json:"listener"`
		Handback      []byte             `json:"handback"`
		LeaseDuration *int64             `json:"leaseDuration"`
	}
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	switch {
	case body.Template == nil:
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "template is required ({} matches everything)"))
		return
	case body.Listener == nil:
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "listener is required"))
		return
	}
	if err := httpjson.Required("leaseDuration", body.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	n, err := notify(NotifyRequest{Owner: access.PrincipalOf(req.Context()).Owner(), HostLocal: outbound.IsHostLocal(req.Context()), Template: templateOf(*body.Template), Transitions: body.Transitions,
		Listener: body.Listener.URL, Handback: body.Handback, Duration: *body.LeaseDuration})
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.NotifyRegistration{ID: n.ID, EventID: n.EventID, SeqNum: n.SeqNum,
		Lease: lease.Shown(leases.Of(req, n.Lease.ID, n.Lease.Expiration), n.Lease)})
}

func (r *Registrar) httpAttributes(w http.ResponseWriter, req *http.Request) {
	var body apitypes.AttributeChange
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	c := AttributeChange{Add: attributesFrom(body.Add), Set: attributesFrom(body.Set)}
	if m := body.Modify; m != nil {
		c.Modify = &AttributeModify{Templates: attributesFrom(m.Templates), Changes: make([]*Attribute, len(m.Changes))}
		for i, ch := range m.Changes {
			if ch != nil {
				a := attributeFrom(*ch)
				c.Modify.Changes[i] = &a
			}
		}
	}
	if err := r.ChangeAttributes(req.PathValue("serviceID"), c, access.PrincipalOf(req.Context()).Owner()); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *Registrar) httpGroups(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string][]string{"groups": r.Meta().Groups})
}

func (r *Registrar) httpSetGroups(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Groups []string `json:"groups"`
	}
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := r.SetGroups(body.Groups); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	r.httpGroups(w, req)
}

func (r *Registrar) httpLocators(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string][]string{"locators": r.Meta().Locators})
}

func (r *Registrar) httpSetLocators(w http.ResponseWriter, req *http.Request) {
	var body struct {
		Locators []string `json:"locators"`
	}
	if err := httpjson.Decode(w, req, &body); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := r.SetLocators(body.Locators); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	r.httpLocators(w, req)
}

// APIItem is an item as the API shows it (and events carry it).
func APIItem(it Item) apitypes.Item {
	out := apitypes.Item{ServiceID: it.ServiceID, Types: it.Types, Endpoint: it.Endpoint, Service: it.Service,
		Attributes: make([]apitypes.Attribute, len(it.Attributes))}
	for i, a := range it.Attributes {
		out.Attributes[i] = apitypes.Attribute{Type: a.Type, Supertypes: a.Supertypes, Fields: a.Fields}
	}
	return out
}

func itemOf(it apitypes.Item) Item {
	return Item{ServiceID: it.ServiceID, Types: it.Types, Endpoint: it.Endpoint, Service: it.Service,
		Attributes: attributesFrom(it.Attributes)}
}

func templateOf(t apitypes.Template) Template {
	return Template{ServiceID: t.ServiceID, Types: t.Types, Attributes: attributesFrom(t.Attributes)}
}

func attributesFrom(as []apitypes.Attribute) []Attribute {
	if as == nil {
		return nil
	}
	out := make([]Attribute, len(as))
	for i, a := range as {
		out[i] = attributeFrom(a)
	}
	return out
}

func attributeFrom(a apitypes.Attribute) Attribute {
	return Attribute{Type: a.Type, Supertypes: a.Supertypes, Fields: a.Fields}
}

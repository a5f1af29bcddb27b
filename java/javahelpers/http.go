package javahelpers

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/txn"
)

// API is what the Java faces add to the HTTP API: the Java forms of
// registrations HTTP clients made, for them to hand to Java programs
// (a mailbox's listener, for a Java generator), and the ID of a
// transaction Java names by a long (for an HTTP participant to join).
type API struct {
	Grantor *lease.Grantor
	Mercury *Mercury
	Mahalo  *Mahalo // nil with --no-transactions
}

// Name implements httpjson.Service.
func (a *API) Name() string { return "Java forms of registrations" }

// Prefix implements httpjson.Service.
func (a *API) Prefix() string { return "/v1/java/" }

// Routes implements httpjson.Service.
func (a *API) Routes(mux httpjson.Mux) {
	owned := func(h http.HandlerFunc) http.HandlerFunc {
		if a.Mercury == nil { // the routes alone, for the API's listing
			return h
		}
		return a.Mercury.cfg.Grantor.Owned("mailbox registration", func(id string) string {
			info, _ := a.Mercury.mailbox.Get(id)
			return info.Lease
		}, h)
	}
	mux.Handle(httpjson.Client, "GET /v1/java/mailbox/{id}/listener", owned(a.listener))
	mux.Handle(httpjson.Read, "GET /v1/java/transactions/{long}", a.transaction)
	mux.Handle(httpjson.Admin, "GET /v1/java/registrations", a.registrations)
}

// maxListed bounds the registrations one listing names, per service.
const maxListed = 10_000

// JavaRegistration is a registration a Java program made with a helper
// service, as an administrator lists them.
type JavaRegistration struct {
	Service    string `json:"service"` // renewal, mailbox, lds, transactions
	ID         string `json:"id"`
	Owner      string `json:"owner"`
	Lease      string `json:"lease"`
	Expiration int64  `json:"expiration"`
}

// registrations lists the registrations Java programs made (their
// owners java@ADDRESS): renewal sets, mailboxes, lookup discovery
// registrations and transactions, each service's at most maxListed, by
// ID. Each service's own API reads and changes them by ID.
func (a *API) registrations(w http.ResponseWriter, _ *http.Request) {
	out := []JavaRegistration{}
	for _, k := range []struct{ service, kind string }{{"renewal", renewal.SetLease}, {"mailbox", mailbox.LeaseKind},
		{"lds", lds.LeaseKind}, {"transactions", txn.LeaseKind}} {
		for _, r := range a.Grantor.OwnedBy(k.kind, "java@", maxListed) {
			out = append(out, JavaRegistration{Service: k.service, ID: r.Resource, Owner: r.Owner, Lease: r.ID, Expiration: r.Expiration})
		}
	}
	httpjson.Write(w, http.StatusOK, struct {
		Registrations []JavaRegistration `json:"registrations"`
	}{out})
}

// JavaForm is an object as Java reads it: the object stream of a
// java.rmi.MarshalledObject holding it (MarshalledObject.get gives it
// back).
type JavaForm struct {
	Class      string `json:"class"`
	Marshalled []byte `json:"marshalled"`
}

// listener answers a mailbox registration's listener as Java uses it
// (Mercury's ListenerProxy, its endpoint the address the request reached
// jinid on): what an HTTP client hands a Java generator, as it hands an
// HTTP one the listener URL.
func (a *API) listener(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := a.Mercury.mailbox.Get(id); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	u, err := a.Mercury.l.IDUuid(id)
	if err != nil {
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "registration %q: %v", fault.Short(id), err))
		return
	}
	s := a.Mercury
	p := javaio.NewObject(s.class("org.apache.river.mercury.proxy.ListenerProxy$ConstrainableListenerProxy")).
		Set("registrationID", u).Set("server", s.server(localHost(r)))
	b, err := javaio.Encode(p, false)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	mo, _, err := s.l.Handback(javaMarshalled(s, b))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	out, err := javaio.Encode(mo, false)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, JavaForm{Class: p.Class.Name, Marshalled: out})
}

// javaMarshalled is a MarshalledInstance of obj as an object stream.
func javaMarshalled(f *Mercury, obj []byte) []byte {
	b, _ := javaio.Encode(reggie.MarshalledInstance(f.l.Lineage, obj), false)
	return b
}

// localHost is the address a request reached jinid on.
func localHost(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap().WithZone("").String()
		}
	}
	return r.Host
}

// transaction answers the ID of the transaction a Java client knows by
// the long in the path.
func (a *API) transaction(w http.ResponseWriter, r *http.Request) {
	if a.Mahalo == nil {
		httpjson.WriteError(w, fault.New(apitypes.UnknownTransaction, "the transaction manager is off"))
		return
	}
	long, err := strconv.ParseInt(r.PathValue("long"), 10, 64)
	if err != nil {
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "transaction %q: want Java's long", fault.Short(r.PathValue("long"))))
		return
	}
	id, err := a.Mahalo.id(long)
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, struct {
		ID string `json:"id"`
	}{id})
}

// Package javahelpers is jinid's helper services as Java sees them:
// each River service's own proxy classes, pointing at jinid over Jini
// ERI, and the remote methods of its server, on the same registrations
// HTTP clients make. A Java program finds them at the lookup service
// and uses them as it uses Norm and Mercury: Norm (norm.go) on the lease
// renewal service, Mercury (mercury.go) on the event mailbox.
//
// Each service's server is a jeri.Object exported under an object Uuid
// derived from the registrar's (javalookup.Identity.Derived), so that
// the proxies Java holds survive restarts. What the services share, the
// Landlord their leases are renewed and cancelled through (the sets',
// the mailboxes'), is here.
package javahelpers

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

//go:embed helpers.classes
var helperClasses string

// Config gives the Java faces their dependencies.
type Config struct {
	Lineage *javalookup.Lineage
	Grantor *lease.Grantor
	// Identity is the registrar's: its object Uuid (the leases it granted
	// are renewed in process), the Jini ERI port jinid serves Java on,
	// and what the servers' object Uuids are derived from.
	Identity javalookup.Identity
	// Outbound checks the remote objects Java names (lease grantors,
	// listeners); Dial makes the connections to them (the daemon's
	// outbound dialer).
	Outbound *outbound.Policy
	Dial     reggie.DialFunc
	// MayChange says whether a Java client on conn may make
	// registrations and change them; nil lets none. Its error is the
	// message the client sees.
	MayChange func(conn jeri.Conn) error
	// MayRead says whether it may read them; nil lets all.
	MayRead func(conn jeri.Conn) error
	Logger  *slog.Logger
	// Metrics, if set, counts the calls Java clients make.
	Metrics *metrics.Registry
}

// face is what the Java faces share: the classes, the landlord.
type face struct {
	cfg     Config
	l       *javalookup.Lineage
	classes *javaio.Catalogue
	log     *slog.Logger
	calls   *metrics.Counter
}

func newFace(cfg Config) (*face, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cat, err := javaio.ParseCatalogue(helperClasses, cfg.Lineage.Classes)
	if err != nil {
		return nil, fmt.Errorf("the helper services' classes: %w", err)
	}
	return &face{cfg: cfg, l: cfg.Lineage, classes: cat, log: cfg.Logger.With("component", "javahelpers"),
		calls: cfg.Metrics.Counter("jinid_java_helper_calls_total",
			"Calls Java clients made to the helper services over Jini ERI, by service (norm, mercury, fiddler, mahalo), method and outcome (return, throw).",
			"service", "method", "outcome")}, nil
}

// counted counts a call to service by its method and outcome, and
// answers reply.
func (f *face) counted(service string, m *lineage.Methods, c *jeri.Call, reply jeri.Reply) jeri.Reply {
	key, ok := m.Method(c.Method)
	if !ok {
		key = "unknown"
	}
	outcome := "return"
	if len(reply) > 0 && reply[0] != 1 {
		outcome = "throw"
	}
	f.calls.Inc(service, key, outcome)
	return reply
}

func (f *face) class(name string) *javaio.Class { return f.classes.Class(name) }

// remoteRef is the JERI proxy (of the catalogue's proxy class named) of
// the server object for clients that reach jinid at host.
func (f *face) remoteRef(proxy string, object jeri.Uuid, host string) *javaio.Object {
	return f.l.RemoteRef(f.class(proxy), javalookup.Endpoint{Host: host, Port: f.cfg.Identity.Port, Object: object})
}

// landlordLease is a lease of a service's as the River services hand
// them out: a ConstrainableLandlordLease whose landlord is the service's
// server.
func (f *face) landlordLease(landlord *javaio.Object, object jeri.Uuid, leaseID string, expiration int64) (*javaio.Object, error) {
	cookie, err := f.l.IDUuid(leaseID)
	if err != nil {
		return nil, err
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(f.remaining(expiration)))
	o := javaio.NewObject(f.class("org.apache.river.landlord.ConstrainableLandlordLease")).
		Set("serialFormat", int32(durationFormat)).Set("cookie", cookie).
		Set("landlord", landlord).Set("landlordUuid", f.l.Uuid(object))
	return o.SetCustom("org.apache.river.lease.AbstractLease", javaio.Block(d[:])), nil
}

// may checks a call's access: reads (the keys named) by MayRead, the
// proxy and admin calls by no one, the rest by MayChange. denied says
// the call is refused with r.
func (f *face) may(c jeri.Conn, key string, reads ...string) (r jeri.Reply, denied bool) {
	var err error
	switch {
	case key == "getServiceProxy/0" || key == "getAdmin/0":
	case slices.Contains(reads, key):
		if f.cfg.MayRead != nil {
			err = f.cfg.MayRead(c)
		}
	case f.cfg.MayChange == nil:
		err = errors.New("jinid: Java clients may not use this service here")
	default:
		err = f.cfg.MayChange(c)
	}
	if err != nil {
		return jeri.Throw(jeri.NewException("java.rmi.AccessException", err.Error())), true
	}
	return nil, false
}

// proxyCache holds a service's proxy per host, as an object stream.
type proxyCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *proxyCache) get(host string, build func() *javaio.Object) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.m[host]; ok {
		return b, nil
	}
	b, err := javaio.Encode(build(), false)
	if err != nil {
		return nil, fmt.Errorf("making a service's proxy: %w", err)
	}
	if c.m == nil || len(c.m) >= 64 {
		c.m = make(map[string][]byte) // addresses change rarely: a full cache went stale
	}
	c.m[host] = b
	return b, nil
}

// call is one call being served.
type call struct {
	f    *face
	c    *jeri.Call
	host string // the host the client reached jinid on
	ctx  context.Context
	kind string // the kind of the leases of the service called (a landlord's)
}

// call starts serving a call to a service whose leases are of kind.
func (f *face) call(ctx context.Context, c *jeri.Call, kind string) *call {
	return &call{f: f, c: c, host: javalookup.HostOf(c.Conn.Local), ctx: ctx, kind: kind}
}

// owner is who a Java client is, for quotas: it has no token, so its
// address (as for the registrar).
func (k *call) owner() string { return "java@" + javalookup.HostOf(k.c.Conn.Remote) }

func returnObject(v javaio.Value) jeri.Reply {
	return jeri.Return(func(e *javaio.Encoder) error { return e.WriteObject(v) })
}

func returnLong(v int64) jeri.Reply {
	return jeri.Return(func(e *javaio.Encoder) error { e.WriteLong(v); return nil })
}

// argError is the exception for arguments jinid cannot use.
func argError(err error) jeri.Reply {
	return jeri.Throw(jeri.NewException("java.rmi.UnmarshalException", "jinid: "+err.Error()))
}

// illegal is Java's IllegalArgumentException, as Norm throws it for an
// argument it refuses.
func illegal(format string, args ...any) jeri.Reply {
	return jeri.Throw(jeri.NewException("java.lang.IllegalArgumentException", fmt.Sprintf(format, args...)))
}

// fail answers an error of the renewal service as Norm would: a set
// that is gone is a NoSuchObjectException carried by ThrowThis (what
// SetProxy unwraps and throws), a lease's is UnknownLeaseException.
func (k *call) fail(err error) jeri.Reply {
	var f *fault.Error
	if errors.As(err, &f) {
		switch f.Code {
		case apitypes.NoSuchObject:
			return k.throwThis(jeri.NewException("java.rmi.NoSuchObjectException", f.Message))
		case apitypes.UnknownLease:
			return jeri.Throw(k.f.l.Exception(k.f.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), f.Message))
		case apitypes.LeaseDenied:
			return jeri.Throw(k.f.l.Exception(k.f.class("net.jini.core.lease.LeaseDeniedException"), f.Message))
		case apitypes.InvalidArgument, apitypes.NullArgument:
			return illegal("%s", f.Message)
		case apitypes.UnsupportedOperation:
			return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException", f.Message))
		case apitypes.Forbidden, apitypes.Unauthenticated:
			return jeri.Throw(jeri.NewException("java.rmi.AccessException", "jinid: "+f.Message))
		}
		return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid: "+f.Message))
	}
	k.f.log.Warn("lease renewal service call failed", "err", err)
	return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid could not complete the call; see its log"))
}

// badArg is an argument a call could not read.
type badArg struct{ error }

// answer is a void call's reply: nothing for no error, the exception
// for a bad argument or for what the service said.
func (k *call) answer(err error) jeri.Reply {
	var bad badArg
	switch {
	case err == nil:
		return jeri.Return(nil)
	case errors.As(err, &bad):
		return argError(bad.error)
	}
	return k.fail(err)
}

// throwThis is Norm's ThrowThis carrying a RemoteException for SetProxy
// to throw.
func (k *call) throwThis(exc *javaio.Object) jeri.Reply {
	msg, _ := exc.Get("detailMessage")
	m, _ := msg.(string)
	return jeri.Throw(k.f.l.Exception(k.f.class("org.apache.river.proxy.ThrowThis"), m).Set("toThrow", exc))
}

// unknownLease is the UnknownLeaseException of a set lease jinid does
// not know.
func (k *call) unknownLease(id string) *javaio.Object {
	return k.f.l.Exception(k.f.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), "no lease "+id+" of this service (it ended, or it never existed)")
}

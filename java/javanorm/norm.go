// Package javanorm is jinid's lease renewal service as Java sees it:
// Norm's own proxy (NormProxy, its sets' SetProxy, their
// LandlordLeases), pointing at jinid over Jini ERI, and the remote
// methods of Norm's server on the same renewal sets HTTP clients use
// (services/renewal). A Java program uses it as it uses Norm: it finds a
// LeaseRenewalService at the lookup service, makes sets, hands them the
// leases of its registrations, and hears expiration warnings and renewal
// failures on its own listeners.
//
// The leases Java hands in are renewed as Java would renew them, by
// calling their grantor: jinid's own registrar's in process, a remote
// Reggie's (ServiceLease, EventLease) and any landlord's (LandlordLease:
// Norm's, Mercury's, Mahalo's) over Jini ERI through the daemon's
// outbound dialer. A lease of another class cannot be renewed without
// running its code, which jinid does not: renewFor refuses it.
package javanorm

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/renewal"
)

//go:embed norm.classes
var normClasses string

//go:embed norm.methods
var normMethods string

// Types are the types of Norm's proxy, as the lookup service matches
// them: what a Java client asks for (LeaseRenewalService) and the rest
// of the proxy's class.
var Types = []string{
	"org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy",
	"org.apache.river.norm.proxy.NormProxy",
	"org.apache.river.norm.proxy.AbstractProxy",
	"net.jini.lease.LeaseRenewalService",
	"net.jini.admin.Administrable",
	"net.jini.core.constraint.RemoteMethodControl",
	"net.jini.id.ReferentUuid",
	"net.jini.security.proxytrust.ProxyAccessor",
	"java.io.Serializable",
}

// Config gives the service its dependencies.
type Config struct {
	Lineage *javalookup.Lineage
	Renewal *renewal.Service
	Grantor *lease.Grantor
	// Object is the Norm server's object Uuid, Port the Jini ERI port
	// jinid serves Java on.
	Object jeri.Uuid
	Port   int
	// Registrar is jinid's registrar's object Uuid: the leases it
	// granted are renewed in process.
	Registrar jeri.Uuid
	// Outbound checks the grantors of the leases Java hands in; Dial
	// makes the connections that renew them (the daemon's outbound
	// dialer).
	Outbound *outbound.Policy
	Dial     reggie.DialFunc
	// MayChange says whether a Java client on conn may make sets and
	// change them; nil lets none. Its error is the message the client
	// sees.
	MayChange func(conn jeri.Conn) error
	// MayRead says whether it may read a set's leases; nil lets all.
	MayRead func(conn jeri.Conn) error
	Logger  *slog.Logger
}

// Service is Norm's server as Java clients call it: a jeri.Object.
type Service struct {
	cfg     Config
	l       *javalookup.Lineage
	classes *javaio.Catalogue
	methods *lineage.Methods
	log     *slog.Logger

	mu      sync.Mutex
	proxies map[string][]byte
	remotes *remotes
}

// New returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cat, err := javaio.ParseCatalogue(normClasses, cfg.Lineage.Classes)
	if err != nil {
		return nil, fmt.Errorf("Norm's classes: %w", err)
	}
	m, err := lineage.ParseMethods(normMethods)
	if err != nil {
		return nil, fmt.Errorf("Norm's methods: %w", err)
	}
	s := &Service{cfg: cfg, l: cfg.Lineage, classes: cat, methods: m,
		log: cfg.Logger.With("component", "javanorm"), proxies: make(map[string][]byte)}
	if s.remotes, err = newRemotes(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Service) class(name string) *javaio.Class { return s.classes.Class(name) }

// server is the JERI proxy of Norm's server for clients that reach
// jinid at host.
func (s *Service) server(host string) *javaio.Object {
	return s.l.RemoteRef(s.class("norm"), javalookup.Endpoint{Host: host, Port: s.cfg.Port, Object: s.cfg.Object})
}

// Proxy returns Norm's proxy (ConstrainableNormProxy) for clients that
// reach jinid at host, as an object stream: the service object of
// jinid's renewal service in the lookup service.
func (s *Service) Proxy(host string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.proxies[host]; ok {
		return b, nil
	}
	p := javaio.NewObject(s.class("org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy")).
		Set("server", s.server(host)).Set("uuid", s.l.Uuid(s.cfg.Object))
	b, err := javaio.Encode(p, false)
	if err != nil {
		return nil, fmt.Errorf("making Norm's proxy: %w", err)
	}
	if len(s.proxies) >= 64 {
		clear(s.proxies) // addresses change rarely: a full cache went stale
	}
	s.proxies[host] = b
	return b, nil
}

// Close closes the connections kept to the grantors of Java leases.
func (s *Service) Close() error {
	s.remotes.close()
	return nil
}

// Invoke serves a call to Norm's server.
func (s *Service) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	key, ok := s.methods.Method(c.Method)
	if !ok {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	var err error
	switch key {
	case "getServiceProxy/0", "getAdmin/0":
	case "getLeases/1":
		if s.cfg.MayRead != nil {
			err = s.cfg.MayRead(c.Conn)
		}
	default:
		if s.cfg.MayChange == nil {
			err = errors.New("jinid: Java clients may not use the lease renewal service here")
		} else {
			err = s.cfg.MayChange(c.Conn)
		}
	}
	if err != nil {
		return jeri.Throw(jeri.NewException("java.rmi.AccessException", err.Error()))
	}
	k := &call{s: s, c: c, host: javalookup.HostOf(c.Conn.Local), ctx: ctx}
	switch key {
	case "createLeaseRenewalSet/1":
		return k.createSet()
	case "renewFor/4":
		return k.renewFor()
	case "remove/2":
		return k.remove()
	case "getLeases/1":
		return k.getLeases()
	case "setExpirationWarningListener/4":
		return k.setWarningListener()
	case "setRenewalFailureListener/3":
		return k.setFailureListener()
	case "renew/2":
		return k.renew()
	case "cancel/1":
		return k.cancel()
	case "renewAll/2":
		return k.renewAll()
	case "cancelAll/1":
		return k.cancelAll()
	case "getServiceProxy/0":
		b, err := s.Proxy(k.host)
		if err != nil {
			return k.fail(err)
		}
		p, err := javaio.Decode(b)
		if err != nil {
			return k.fail(err)
		}
		return returnObject(p)
	}
	return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
		"jinid's lease renewal service has no Java admin interface: administer it with jinid's HTTP API or CLI"))
}

// call is one call being served.
type call struct {
	s    *Service
	c    *jeri.Call
	host string // the host the client reached jinid on
	ctx  context.Context
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
			return jeri.Throw(k.s.l.Exception(k.s.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), f.Message))
		case apitypes.LeaseDenied:
			return jeri.Throw(k.s.l.Exception(k.s.class("net.jini.core.lease.LeaseDeniedException"), f.Message))
		case apitypes.InvalidArgument, apitypes.NullArgument:
			return illegal("%s", f.Message)
		case apitypes.Forbidden, apitypes.Unauthenticated:
			return jeri.Throw(jeri.NewException("java.rmi.AccessException", "jinid: "+f.Message))
		}
		return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid: "+f.Message))
	}
	k.s.log.Warn("lease renewal service call failed", "err", err)
	return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid could not complete the call; see its log"))
}

// throwThis is Norm's ThrowThis carrying a RemoteException for SetProxy
// to throw.
func (k *call) throwThis(exc *javaio.Object) jeri.Reply {
	msg, _ := exc.Get("detailMessage")
	m, _ := msg.(string)
	return jeri.Throw(k.s.l.Exception(k.s.class("org.apache.river.proxy.ThrowThis"), m).Set("toThrow", exc))
}

// unknownLease is the UnknownLeaseException of a set lease jinid does
// not know.
func (k *call) unknownLease(id string) *javaio.Object {
	return k.s.l.Exception(k.s.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), "no renewal set lease "+id)
}

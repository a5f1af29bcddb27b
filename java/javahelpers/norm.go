// Norm is jinid's lease renewal service as Java sees it:
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

package javahelpers

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/services/renewal"
)

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

// Norm is Norm's server as Java clients call it: a jeri.Object.
type Norm struct {
	*face
	renewal *renewal.Service
	object  jeri.Uuid
	methods *lineage.Methods
	proxies proxyCache
	remotes *remotes
}

// NewNorm returns the lease renewal service's Java face, on r.
func NewNorm(cfg Config, r *renewal.Service) (*Norm, error) {
	f, err := newFace(cfg)
	if err != nil {
		return nil, err
	}
	m, err := lineage.ParseMethods(normMethods)
	if err != nil {
		return nil, fmt.Errorf("Norm's methods: %w", err)
	}
	s := &Norm{face: f, renewal: r, object: cfg.Identity.Derived("norm"), methods: m}
	if s.remotes, err = newRemotes(f); err != nil {
		return nil, err
	}
	return s, nil
}

// Object is the Norm server's object Uuid, to export it under.
func (s *Norm) Object() jeri.Uuid { return s.object }

// server is the JERI proxy of Norm's server for clients that reach
// jinid at host.
func (s *Norm) server(host string) *javaio.Object { return s.remoteRef("norm", s.object, host) }

// Proxy returns Norm's proxy (ConstrainableNormProxy) for clients that
// reach jinid at host, as an object stream: the service object of
// jinid's renewal service in the lookup service.
func (s *Norm) Proxy(host string) ([]byte, error) {
	return s.proxies.get(host, func() *javaio.Object { return s.proxy(host) })
}

func (s *Norm) proxy(host string) *javaio.Object {
	return javaio.NewObject(s.class("org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy")).
		Set("server", s.server(host)).Set("uuid", s.l.Uuid(s.object))
}

// Close closes the connections kept to the grantors of Java leases.
func (s *Norm) Close() error {
	s.remotes.close()
	return nil
}

// Invoke serves a call to Norm's server.
func (s *Norm) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	return s.counted("norm", s.methods, c, s.invoke(ctx, c))
}

func (s *Norm) invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	key, ok := s.methods.Method(c.Method)
	if !ok {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	if r, denied := s.may(c.Conn, key, "getLeases/1"); denied {
		return r
	}
	k := s.call(ctx, c, renewal.SetLease)
	if r, ok := k.landlord(key); ok {
		return r
	}
	switch key {
	case "createLeaseRenewalSet/1":
		return s.createSet(k)
	case "renewFor/4":
		return s.renewFor(k)
	case "remove/2":
		return s.remove(k)
	case "getLeases/1":
		return s.getLeases(k)
	case "setExpirationWarningListener/4":
		return s.setWarningListener(k)
	case "setRenewalFailureListener/3":
		return s.setFailureListener(k)
	case "getServiceProxy/0":
		return returnObject(s.proxy(k.host))
	}
	return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
		"jinid's lease renewal service has no Java admin interface: administer it with jinid's HTTP API or CLI"))
}

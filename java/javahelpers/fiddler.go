package javahelpers

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lds"
)

//go:embed fiddler.methods
var fiddlerMethods string

// FiddlerTypes are the types of Fiddler's proxy, as the lookup service
// matches them.
var FiddlerTypes = []string{
	"org.apache.river.fiddler.proxy.FiddlerProxy$ConstrainableFiddlerProxy",
	"org.apache.river.fiddler.proxy.FiddlerProxy",
	"net.jini.discovery.LookupDiscoveryService",
	"net.jini.admin.Administrable",
	"net.jini.core.constraint.RemoteMethodControl",
	"net.jini.id.ReferentUuid",
	"net.jini.security.proxytrust.ProxyAccessor",
	"java.io.Serializable",
}

// Fiddler is Fiddler's server as Java clients call it: a jeri.Object, on
// jinid's lookup discovery service.
type Fiddler struct {
	*face
	lds     *lds.Service
	object  jeri.Uuid
	methods *lineage.Methods
	proxies proxyCache
}

// NewFiddler returns the lookup discovery service's Java face, on s.
func NewFiddler(cfg Config, s *lds.Service) (*Fiddler, error) {
	f, err := newFace(cfg)
	if err != nil {
		return nil, err
	}
	m, err := lineage.ParseMethods(fiddlerMethods)
	if err != nil {
		return nil, fmt.Errorf("Fiddler's methods: %w", err)
	}
	return &Fiddler{face: f, lds: s, object: cfg.Identity.Derived("fiddler"), methods: m}, nil
}

// Object is the Fiddler server's object Uuid, to export it under.
func (s *Fiddler) Object() jeri.Uuid { return s.object }

func (s *Fiddler) server(host string) *javaio.Object { return s.remoteRef("fiddler", s.object, host) }

func (s *Fiddler) proxy(host string) *javaio.Object {
	return javaio.NewObject(s.class("org.apache.river.fiddler.proxy.FiddlerProxy$ConstrainableFiddlerProxy")).
		Set("server", s.server(host)).Set("proxyID", s.l.Uuid(s.object))
}

// Proxy returns Fiddler's proxy (ConstrainableFiddlerProxy) for clients
// that reach jinid at host, as an object stream.
func (s *Fiddler) Proxy(host string) ([]byte, error) {
	return s.proxies.get(host, func() *javaio.Object { return s.proxy(host) })
}

// Invoke serves a call to Fiddler's server.
func (s *Fiddler) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	return s.counted("fiddler", s.methods, c, s.invoke(ctx, c))
}

func (s *Fiddler) invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	key, ok := s.methods.Method(c.Method)
	if !ok {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	if r, denied := s.may(c.Conn, key, "getRegistrars/1", "getGroups/1", "getLocators/1", "getProxyID/0"); denied {
		return r
	}
	k := s.call(ctx, c, lds.LeaseKind)
	switch key {
	case "register/5":
		return s.register(k)
	case "getRegistrars/1":
		return s.getRegistrars(k)
	case "getGroups/1":
		return s.getGroups(k)
	case "getLocators/1":
		return s.getLocators(k)
	case "addGroups/2", "setGroups/2", "removeGroups/2":
		return s.mutateGroups(k, mutation(key))
	case "addLocators/2", "setLocators/2", "removeLocators/2":
		return s.mutateLocators(k, mutation(key))
	case "discard/2":
		return s.discard(k)
	case "renewLease/3":
		return s.renewLease(k)
	case "renewLeases/3":
		return s.renewLeases(k)
	case "cancelLease/2":
		return s.cancelLease(k)
	case "cancelLeases/2":
		return s.cancelLeases(k)
	case "getProxyID/0":
		return returnObject(s.l.Uuid(s.object))
	case "getServiceProxy/0":
		return returnObject(s.proxy(k.host))
	}
	return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
		"jinid's lookup discovery service has no Java admin interface: administer it with jinid's HTTP API or CLI"))
}

func mutation(key string) lds.Mutation {
	switch key[:3] {
	case "add":
		return lds.Add
	case "set":
		return lds.Set
	}
	return lds.Remove
}

// lease is a registration's lease as Fiddler hands it out.
func (s *Fiddler) lease(host, regID, leaseID string, expiration int64) (*javaio.Object, error) {
	reg, err := s.l.IDUuid(regID)
	if err != nil {
		return nil, err
	}
	id, err := s.l.IDUuid(leaseID)
	if err != nil {
		return nil, err
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(s.remaining(expiration)))
	o := javaio.NewObject(s.class("org.apache.river.fiddler.proxy.FiddlerLease$ConstrainableFiddlerLease")).
		Set("serialFormat", int32(durationFormat)).Set("leaseID", id).Set("registrationID", reg).
		Set("server", s.server(host)).Set("serverID", s.l.Uuid(s.object))
	return o.SetCustom(abstractLease, javaio.Block(d[:])), nil
}

// strings reads a String[] argument; null is nil.
func (k *call) strings() ([]string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil || v == nil {
		return nil, err
	}
	elems, err := reggie.Elems(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("a group is not a String (%s)", reggie.Describe(e))
		}
		out = append(out, str)
	}
	return out, nil
}

// locators reads a LookupLocator[] argument.
func (k *call) locators() ([]discovery.Locator, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil || v == nil {
		return nil, err
	}
	elems, err := reggie.Elems(v)
	if err != nil {
		return nil, err
	}
	out := make([]discovery.Locator, 0, len(elems))
	for _, e := range elems {
		o, err := reggie.Object(e, "net.jini.core.discovery.LookupLocator")
		if err != nil {
			return nil, err
		}
		host, _ := reggie.Field(o, "host").(string)
		port, _ := reggie.Field(o, "port").(int32)
		if host == "" || port <= 0 || port > 65535 {
			return nil, errors.New("a locator without a host or port")
		}
		out = append(out, discovery.Locator{Host: host, Port: int(port)})
	}
	return out, nil
}

func (s *Fiddler) strs(v []string) *javaio.Array {
	a := &javaio.Array{Class: s.l.Classes.Class("[Ljava.lang.String;"), Elems: make([]javaio.Value, len(v))}
	for i, g := range v {
		a.Elems[i] = g
	}
	return a
}

func (s *Fiddler) locatorArray(locs []discovery.Locator) *javaio.Array {
	a := &javaio.Array{Class: s.class("[Lnet.jini.core.discovery.LookupLocator;"), Elems: make([]javaio.Value, len(locs))}
	for i, l := range locs {
		a.Elems[i] = javaio.NewObject(s.l.Classes.Class("net.jini.discovery.ConstrainableLookupLocator")).
			Set("host", l.Host).Set("port", int32(l.Port)).Set("scheme", "jini")
	}
	return a
}

// register is register(String[] groups, LookupLocator[] locators,
// RemoteEventListener, MarshalledObject handback, long leaseDuration).
func (s *Fiddler) register(k *call) jeri.Reply {
	groups, err := k.strings()
	if err != nil {
		return argError(err)
	}
	locs, err := k.locators()
	if err != nil {
		return argError(err)
	}
	listener, reply := k.required("the listener")
	if reply != nil {
		return reply
	}
	hb, err := k.handback()
	if err != nil {
		return argError(err)
	}
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	reg, err := s.lds.Register(lds.RegisterRequest{Groups: groups, Locators: locs, Listener: listener, Handback: hb, Duration: d, Owner: k.owner()})
	if err != nil {
		return k.fail(err)
	}
	ls, err := s.lease(k.host, reg.ID, reg.Lease.ID, reg.Lease.Expiration)
	if err != nil {
		return k.fail(err)
	}
	id, err := s.l.IDUuid(reg.ID)
	if err != nil {
		return k.fail(err)
	}
	er := javaio.NewObject(s.l.Classes.Class("net.jini.core.event.EventRegistration")).
		Set("eventID", reg.EventID).Set("seqNum", reg.SeqNum).Set("lease", ls).Set("source", s.proxy(k.host))
	return returnObject(javaio.NewObject(s.class("org.apache.river.fiddler.proxy.FiddlerRegistration$ConstrainableFiddlerRegistration")).
		Set("eventReg", er).Set("registrationID", id).Set("server", s.server(k.host)))
}

// marshalledRegistrar is a registrar's proxy, as discovery received it,
// as the java.rmi.MarshalledObject Fiddler hands back.
func (s *Fiddler) marshalledRegistrar(m []byte) (*javaio.Object, error) {
	mo, _, err := s.l.Handback(m)
	if err == nil && mo == nil {
		err = errors.New("a registrar's proxy is not an object")
	}
	return mo, err
}

// getRegistrars is getRegistrars(Uuid): the managed set's proxies.
func (s *Fiddler) getRegistrars(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	ls, err := s.lds.Registrars(id)
	if err != nil {
		return k.fail(err)
	}
	a := &javaio.Array{Class: s.class("[Ljava.rmi.MarshalledObject;")}
	for _, l := range ls {
		mo, err := s.marshalledRegistrar(l.Registrar.Marshalled)
		if err != nil {
			continue // one Java could not use either
		}
		a.Elems = append(a.Elems, mo)
	}
	return returnObject(a)
}

func (s *Fiddler) getGroups(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	info, err := s.lds.Get(id)
	if err != nil {
		return k.fail(err)
	}
	if info.AllGroups {
		return returnObject(nil) // ALL_GROUPS
	}
	return returnObject(s.strs(info.Groups))
}

func (s *Fiddler) getLocators(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	info, err := s.lds.Get(id)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(s.locatorArray(info.Locators))
}

// mutateGroups and mutateLocators are the add, set and remove of a
// registration's groups and locators.
func (s *Fiddler) mutateGroups(k *call, m lds.Mutation) jeri.Reply {
	return s.mutate(k, func(id string) error {
		groups, err := k.strings()
		if err != nil {
			return badArg{err}
		}
		return s.lds.MutateGroups(id, m, groups)
	})
}

func (s *Fiddler) mutateLocators(k *call, m lds.Mutation) jeri.Reply {
	return s.mutate(k, func(id string) error {
		locs, err := k.locators()
		if err != nil {
			return badArg{err}
		}
		return s.lds.MutateLocators(id, m, locs)
	})
}

// mutate reads the registration's Uuid and makes change to it.
func (s *Fiddler) mutate(k *call, change func(id string) error) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	return k.answer(change(id))
}

// discard is discard(Uuid, ServiceRegistrar): the registrar's ServiceID
// is in its proxy.
func (s *Fiddler) discard(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	if v == nil {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", "the registrar cannot be null"))
	}
	sid, ok := registrarID(v)
	if !ok {
		return illegal("the registrar is not a lookup service's proxy jinid can read (%s)", reggie.Describe(v))
	}
	if err := s.lds.Discard(id, sid); err != nil {
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// registrarID reads the ServiceID a registrar proxy carries: the 16
// bytes RegistrarProxy writes after its fields, in every lineage.
func registrarID(v javaio.Value) (discovery.ServiceID, bool) {
	o, ok := v.(*javaio.Object)
	if !ok {
		return discovery.ServiceID{}, false
	}
	for c := o.Class; c != nil; c = c.Super {
		if b := block(o.Custom(c.Name)); len(b) >= 16 && strings.HasSuffix(c.Name, ".RegistrarProxy") {
			return discovery.ServiceID(b[:16]), true
		}
	}
	return discovery.ServiceID{}, false
}

// regLease reads the (Uuid registration, Uuid lease) that name a
// registration's lease, checking the lease is that registration's.
func (s *Fiddler) regLease(regID, leaseID string) error {
	info, err := s.lds.Get(regID)
	if err != nil || info.Lease != leaseID {
		return errUnknownLease
	}
	return nil
}

func (s *Fiddler) renewOne(k *call, regID, leaseID string, d int64) (int64, error) {
	if err := s.regLease(regID, leaseID); err != nil {
		return 0, err
	}
	return k.renewOne(leaseID, d)
}

// regAndLease reads the (Uuid, Uuid) that name a registration and its
// lease.
func (k *call) regAndLease() (reg, id string, err error) {
	if reg, err = k.uuidArg(); err == nil {
		id, err = k.uuidArg()
	}
	return reg, id, err
}

func (s *Fiddler) renewLease(k *call) jeri.Reply {
	reg, id, err := k.regAndLease()
	if err != nil {
		return argError(err)
	}
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	granted, err := s.renewOne(k, reg, id, d)
	if err != nil {
		return jeri.Throw(k.leaseException(id, err))
	}
	return returnLong(granted)
}

func (s *Fiddler) cancelLease(k *call) jeri.Reply {
	reg, id, err := k.regAndLease()
	if err != nil {
		return argError(err)
	}
	if err := s.regLease(reg, id); err != nil {
		return jeri.Throw(k.unknownLease(id))
	}
	if err := s.cfg.Grantor.Cancel(id); err != nil {
		return jeri.Throw(k.leaseException(id, err))
	}
	return jeri.Return(nil)
}

// renewLeases is renewLeases(Uuid[] registrations, Uuid[] leases,
// long[] durations): FiddlerRenewResults, -1 and an exception (in order)
// for each lease not renewed.
func (s *Fiddler) renewLeases(k *call) jeri.Reply {
	regs, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	ids, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	durs, err := k.longs(len(ids))
	if err != nil || len(regs) != len(ids) {
		return argError(errors.New("renewLeases wants as many registrations and durations as leases"))
	}
	granted := make([]int64, len(ids))
	var denied []javaio.Value
	for i, id := range ids {
		g, err := s.renewOne(k, regs[i], id, durs[i])
		if err != nil {
			granted[i] = -1
			denied = append(denied, k.leaseException(id, err))
			continue
		}
		granted[i] = g
	}
	rr := javaio.NewObject(s.class("org.apache.river.fiddler.proxy.FiddlerRenewResults")).Set("durations", s.longArray(granted))
	if denied != nil {
		rr.Set("exceptions", &javaio.Array{Class: s.l.Classes.Class("[Ljava.lang.Exception;"), Elems: denied})
	}
	return returnObject(rr)
}

// cancelLeases is cancelLeases(Uuid[], Uuid[]): null when every lease
// was cancelled, else an exception for each (null where it was).
func (s *Fiddler) cancelLeases(k *call) jeri.Reply {
	regs, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	ids, err := k.uuids()
	if err != nil || len(regs) != len(ids) {
		return argError(errors.New("cancelLeases wants as many registrations as leases"))
	}
	out := &javaio.Array{Class: s.l.Classes.Class("[Ljava.lang.Exception;"), Elems: make([]javaio.Value, len(ids))}
	failed := false
	for i, id := range ids {
		var exc *javaio.Object
		if s.regLease(regs[i], id) != nil {
			exc = k.unknownLease(id)
		} else if err := s.cfg.Grantor.Cancel(id); err != nil {
			exc = k.leaseException(id, err)
		}
		if exc != nil {
			out.Elems[i], failed = exc, true
		}
	}
	if !failed {
		return returnObject(nil)
	}
	return returnObject(out)
}

// Events makes the RemoteDiscoveryEvents of registrations a Java client
// made (or any whose listener is Java's): a javalookup.EventMaker.
func (s *Fiddler) Events(del event.Delivery, via string) (*javaio.Object, bool, error) {
	ev, ok := del.Event.(apitypes.RemoteDiscoveryEvent)
	if !ok {
		return nil, false, nil
	}
	o, err := s.discoveryEvent(ev, del.Native, via)
	return o, true, err
}

func (s *Fiddler) discoveryEvent(ev apitypes.RemoteDiscoveryEvent, native any, via string) (*javaio.Object, error) {
	marshalled, _ := native.(lds.JavaRegistrars)
	o := javaio.NewObject(s.class("net.jini.discovery.RemoteDiscoveryEvent")).
		Set("eventID", ev.EventID).Set("seqNum", ev.SeqNum).Set("source", s.proxy(via)).Set("discarded", ev.Discarded)
	mo, mi, err := s.l.Handback(ev.Handback)
	if err != nil {
		return nil, err
	}
	if mo != nil {
		o.Set("handback", mo).Set("miHandback", mi)
	}
	var regs, groups []javaio.Value
	for i, r := range ev.Registrars {
		if i >= len(marshalled) {
			break
		}
		m, err := s.marshalledRegistrar(marshalled[i])
		if err != nil {
			continue
		}
		sid, err := discovery.ParseServiceID(r.ServiceID)
		if err != nil {
			continue
		}
		regs = append(regs, m)
		groups = append(groups, reggie.ServiceIDObject(s.l.Lineage, sid), s.strs(ev.Groups[r.ServiceID]))
	}
	if len(regs) == 0 {
		return nil, errors.New("no registrar of the event is one Java can read")
	}
	o.Set("marshalledRegs", s.arrayList(regs)).
		Set("regs", &javaio.Array{Class: s.class("[Lnet.jini.core.lookup.ServiceRegistrar;"), Elems: make([]javaio.Value, len(regs))}).
		Set("groups", s.hashMap(groups))
	return o, nil
}

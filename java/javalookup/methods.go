package javalookup

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
)

// call is one registrar call being served.
type call struct {
	s    *Service
	c    *jeri.Call
	host string // the host the client reached us on
}

func (k *call) readObject() (javaio.Value, error) { return k.c.Args.ReadObject() }

// owner is who a Java client is, for ownership and quotas: it has no
// token, so its address.
func (k *call) owner() string { return "java@" + HostOf(k.c.Conn.Remote) }

// dispatch serves a registrar method by key; every method Reggie's
// clients call is here, and any other answers an exception.
func (s *Service) dispatch(key string, k *call) jeri.Reply {
	switch key {
	case "getMemberGroups/0":
		return returnObject(s.strings(s.cfg.Registrar.Meta().Groups))
	case "getLocator/0":
		loc := s.l.Classes.Class("net.jini.discovery.ConstrainableLookupLocator")
		return returnObject(javaio.NewObject(loc).Set("host", k.host).
			Set("port", int32(s.cfg.UnicastPort())).Set("scheme", "jini"))
	case "getAdmin/0":
		return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
			"jinid's lookup service has no Java admin interface: administer it with jinid's HTTP API or CLI"))
	case "register/2":
		return k.register()
	case "lookup/1":
		return k.lookupOne()
	case "lookup/2":
		return k.lookupMatches()
	case "lookUp/2":
		return k.lookupBootstrap()
	case "addAttributes/3", "setAttributes/3":
		return k.attributes(key == "setAttributes/3")
	case "modifyAttributes/4":
		return k.modifyAttributes()
	case "renewServiceLease/3":
		return k.renewServiceLease()
	case "cancelServiceLease/2":
		return k.cancelServiceLease()
	case "renewLeases/3":
		return k.renewLeases()
	case "cancelLeases/2":
		return k.cancelLeases()
	case "notify/5", "notiFy/5":
		return k.notify()
	case "renewEventLease/3":
		return k.renewEventLease()
	case "cancelEventLease/2":
		return k.cancelEventLease()
	case "getServiceTypes/2":
		return k.getServiceTypes()
	case "getEntryClasses/1":
		return k.getEntryClasses()
	case "getFieldValues/3":
		return k.getFieldValues()
	}
	return jeri.Throw(jeri.NewException("java.rmi.UnmarshalException",
		fmt.Sprintf("jinid does not implement the registrar method %s", key)))
}

// returnObject answers with v.
func returnObject(v javaio.Value) jeri.Reply {
	return jeri.Return(func(e *javaio.Encoder) error { return e.WriteObject(v) })
}

// argError is the exception for arguments jinid cannot use.
func argError(err error) jeri.Reply {
	return jeri.Throw(jeri.NewException("java.rmi.UnmarshalException", "jinid: "+err.Error()))
}

// faultReply turns an error of the registrar into the exception Reggie
// would throw.
func (k *call) faultReply(err error) jeri.Reply {
	var f *fault.Error
	if errors.As(err, &f) {
		switch f.Code {
		case apitypes.UnknownLease, apitypes.NoSuchObject:
			return jeri.Throw(k.s.unknownLease(f.Message))
		case apitypes.Forbidden, apitypes.Unauthenticated:
			return jeri.Throw(jeri.NewException("java.rmi.AccessException", "jinid: "+f.Message))
		case apitypes.InvalidArgument, apitypes.NullArgument:
			return jeri.Throw(jeri.NewException("java.lang.IllegalArgumentException", f.Message))
		}
		return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid: "+f.Message))
	}
	k.s.cfg.Logger.Warn("registrar call failed", "err", err)
	return jeri.Throw(jeri.NewException("java.rmi.RemoteException", "jinid could not complete the call; see its log"))
}

// unknownLease is JGDMS's UnknownLeaseException.
func (s *Service) unknownLease(msg string) *javaio.Object {
	return s.l.Exception(s.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), msg)
}

// Exception is an exception of class c with a message and no stack
// trace; one of JGDMS's (an AtomicException) gets its own fields too.
func (l *Lineage) Exception(c *javaio.Class, msg string) *javaio.Object {
	noStack := &javaio.Array{Class: l.Classes.Class("[Ljava.lang.StackTraceElement;")}
	o := javaio.NewObject(c).Set("detailMessage", msg).Set("stackTrace", noStack)
	if c.IsA("org.apache.river.api.io.AtomicException") {
		o.Set("message", msg).Set("stack", noStack).
			Set("suppressed", &javaio.Array{Class: l.Classes.Class("[Ljava.lang.Throwable;")})
	}
	return o
}

func (k *call) register() jeri.Reply {
	v, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	it, err := k.s.itemFrom(v)
	if err != nil {
		return argError(err)
	}
	reg, err := k.s.cfg.Registrar.Register(it, dur, k.owner())
	if err != nil {
		return k.faultReply(err)
	}
	sid, _ := discovery.ParseServiceID(reg.ServiceID)
	ls, err := k.s.serviceLease(k.host, sid, reg.Lease.ID, reg.Lease.Expiration)
	if err != nil {
		return k.faultReply(err)
	}
	r := k.s.l.New("ConstrainableRegistration").Set("lease", ls).Set("server", k.s.server(k.host))
	return returnObject(r)
}

// leaseUuid is a lease ID (32 hex digits) as a Java Uuid.
func (s *Service) leaseUuid(id string) (*javaio.Object, error) { return s.l.IDUuid(id) }

// IDUuid is one of jinid's IDs (32 hex digits: a lease's, a renewal
// set's) as a Java Uuid.
func (l *Lineage) IDUuid(id string) (*javaio.Object, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return nil, fmt.Errorf("ID %q is not 128 bits", id)
	}
	return l.Uuid(jeri.Uuid(b)), nil
}

// leaseID reads a Java Uuid argument as a lease ID.
func leaseID(v javaio.Value) (string, error) { return UuidID(v) }

// UuidID reads a Java Uuid as one of jinid's IDs (32 hex digits).
func UuidID(v javaio.Value) (string, error) {
	o, err := reggie.Object(v, "net.jini.id.Uuid")
	if err != nil {
		return "", err
	}
	b0, _ := reggie.Field(o, "bits0").(int64)
	b1, _ := reggie.Field(o, "bits1").(int64)
	u := jeri.UuidOf(b0, b1)
	return hex.EncodeToString(u[:]), nil
}

// remaining is the duration a lease object carries: jinid's grant, in
// milliseconds from now.
func (s *Service) remaining(expiration int64) int64 {
	return max(expiration-s.cfg.Grantor.Now().UnixMilli(), 0)
}

func (s *Service) serviceLease(host string, sid discovery.ServiceID, leaseID string, expiration int64) (*javaio.Object, error) {
	id, err := s.leaseUuid(leaseID)
	if err != nil {
		return nil, err
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(s.remaining(expiration)))
	o := s.l.New("ConstrainableServiceLease").Set("serialFormat", int32(1)).Set("leaseID", id).Set("server", s.server(host))
	o.SetCustom("org.apache.river.lease.AbstractLease", javaio.Block(d[:]))
	o.SetCustom(s.l.Package+".RegistrarLease", serviceIDBlock(s.cfg.Registrar.Meta().ServiceID))
	o.SetCustom(s.l.Package+".ServiceLease", serviceIDBlock(sid))
	return o, nil
}

func (s *Service) server(host string) *javaio.Object {
	return s.l.server(Endpoint{Host: host, Port: s.cfg.Identity.Port, Object: s.cfg.Identity.Object})
}

// itemTo is an item as Java reads it. Like Reggie, it leaves out the
// type tree (serviceType null): clients do not need it back.
func (s *codec) itemTo(it lookup.Item) (*javaio.Object, error) {
	o := s.l.New("Item")
	sid, err := discovery.ParseServiceID(it.ServiceID)
	if err != nil {
		return nil, err
	}
	o.Set("serviceID", s.l.serviceID(sid))
	var reps []javaio.Value
	for _, a := range it.Attributes {
		if rep, ok := s.entryTo(a); ok {
			reps = append(reps, rep)
		}
	}
	o.Set("attributeSets", &javaio.Array{Class: s.l.Classes.Class("[L" + s.l.Package + ".EntryRep;"), Elems: reps})
	if it.Java != nil {
		svc, err := javaio.Decode(it.Java.Service)
		if err != nil {
			return nil, err
		}
		o.Set("service", svc)
		if it.Java.BootstrapProxy != nil {
			bp, err := javaio.Decode(it.Java.BootstrapProxy)
			if err != nil {
				return nil, err
			}
			o.Set("bootstrapProxy", bp)
		}
		if it.Java.Codebase != nil {
			o.Set("codebase", *it.Java.Codebase)
		}
		return o, nil
	}
	// An item registered over HTTP is its JSON service to Java, or
	// when it has none its endpoint (a static service's).
	svc := string(it.Service)
	if svc == "" {
		svc = it.Endpoint
	}
	w, err := s.WrapString(svc)
	if err != nil {
		return nil, err
	}
	return o.Set("service", w), nil
}

func (k *call) template() (lookup.Template, error) {
	v, err := k.readObject()
	if err != nil {
		return lookup.Template{}, err
	}
	return k.s.templateFrom(v)
}

// lookupOne is lookup(Template): the service object of one match, or
// null.
func (k *call) lookupOne() jeri.Reply {
	t, err := k.template()
	if err != nil {
		return argError(err)
	}
	items, _, err := k.s.cfg.Registrar.Query(t, 1)
	if err != nil {
		return k.faultReply(err)
	}
	if len(items) == 0 {
		return returnObject(nil)
	}
	if items, err = k.s.forHost(items, k.host); err != nil {
		return k.faultReply(err)
	}
	o, err := k.s.itemTo(items[0])
	if err != nil {
		return k.faultReply(err)
	}
	svc, _ := o.Get("service")
	return returnObject(svc)
}

// query reads the (Template, int maxMatches) of the lookup forms and
// runs the query; a reply is the exception to answer instead.
func (k *call) query() ([]lookup.Item, int, jeri.Reply) {
	t, err := k.template()
	if err != nil {
		return nil, 0, argError(err)
	}
	n, err := k.c.Args.ReadInt()
	if err != nil {
		return nil, 0, argError(err)
	}
	items, total, err := k.s.cfg.Registrar.Query(t, max(int(n), 0))
	if err != nil {
		return nil, 0, k.faultReply(err)
	}
	return items, total, nil
}

// lookupMatches is lookup(Template, int): Matches, items in a
// LinkedList.
func (k *call) lookupMatches() jeri.Reply {
	items, total, reply := k.query()
	if reply != nil {
		return reply
	}
	items, err := k.s.forHost(items, k.host)
	if err != nil {
		return k.faultReply(err)
	}
	m, err := k.s.matches(items, total)
	if err != nil {
		return k.faultReply(err)
	}
	return returnObject(m)
}

// matches is Reggie's Matches of items, in a LinkedList.
func (c *codec) matches(items []lookup.Item, total int) (*javaio.Object, error) {
	list := javaio.NewObject(c.l.Classes.Class("java.util.LinkedList"))
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(items)))
	custom := []javaio.Value{javaio.Block(size[:])}
	for _, it := range items {
		o, err := c.itemTo(it)
		if err != nil {
			return nil, err
		}
		custom = append(custom, o)
	}
	list.SetCustom("java.util.LinkedList", custom...)
	return c.l.New("Matches").Set("items", list).Set("totalMatches", int32(total)), nil
}

// lookupBootstrap is lookUp(Template, int): the bootstrap proxies of the
// matches that have one.
func (k *call) lookupBootstrap() jeri.Reply {
	items, _, reply := k.query()
	if reply != nil {
		return reply
	}
	out := &javaio.Array{Class: k.s.l.Classes.Class("[Ljava.lang.Object;")}
	for _, it := range items {
		if it.Java == nil || it.Java.BootstrapProxy == nil {
			continue
		}
		bp, err := javaio.Decode(it.Java.BootstrapProxy)
		if err != nil {
			continue
		}
		out.Elems = append(out.Elems, bp)
	}
	return returnObject(out)
}

// serviceAndLease reads the (ServiceID, Uuid) that name a registration.
func (k *call) serviceAndLease() (string, string, error) {
	v, err := k.readObject()
	if err != nil {
		return "", "", err
	}
	sid, err := k.s.ServiceIDFrom(v)
	if err != nil || sid == "" {
		return "", "", fmt.Errorf("%w: no ServiceID", reggie.ErrBadArgument)
	}
	u, err := k.readObject()
	if err != nil {
		return "", "", err
	}
	id, err := leaseID(u)
	return sid, id, err
}

// checkLease makes sure the lease is the registration's current one, as
// Reggie does: a lease of a cancelled registration is unknown.
func (k *call) checkLease(sid, id string) error {
	rec, err := k.s.cfg.Registrar.Lease(sid)
	if err != nil || rec.ID != id {
		return fault.New(apitypes.UnknownLease, "No service recorded for ID: %s", sid)
	}
	return nil
}

func (k *call) entries() ([]lookup.Attribute, error) {
	v, err := k.readObject()
	if err != nil {
		return nil, err
	}
	reps, err := reggie.Elems(v)
	if err != nil {
		return nil, err
	}
	var out []lookup.Attribute
	for _, r := range reps {
		if r == nil {
			out = append(out, lookup.Attribute{})
			continue
		}
		a, err := k.s.entryFrom(r, false)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (k *call) attributes(set bool) jeri.Reply {
	sid, id, err := k.serviceAndLease()
	if err != nil {
		return argError(err)
	}
	attrs, err := k.entries()
	if err != nil {
		return argError(err)
	}
	if err := k.checkLease(sid, id); err != nil {
		return k.faultReply(err)
	}
	c := lookup.AttributeChange{Add: attrs}
	if set {
		c = lookup.AttributeChange{Set: attrs}
		if attrs == nil {
			c.Set = []lookup.Attribute{}
		}
	}
	if err := k.s.cfg.Registrar.ChangeAttributes(sid, c, k.owner()); err != nil {
		return k.faultReply(err)
	}
	return jeri.Return(nil)
}

func (k *call) modifyAttributes() jeri.Reply {
	sid, id, err := k.serviceAndLease()
	if err != nil {
		return argError(err)
	}
	tmpls, err := k.entries()
	if err != nil {
		return argError(err)
	}
	v, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	reps, err := reggie.Elems(v)
	if err != nil {
		return argError(err)
	}
	changes := make([]*lookup.Attribute, len(reps))
	for i, r := range reps {
		if r == nil {
			continue
		}
		a, err := k.s.entryFrom(r, true)
		if err != nil {
			return argError(err)
		}
		changes[i] = &a
	}
	for i := range tmpls {
		for name, v := range tmpls[i].Fields {
			if v == nil {
				delete(tmpls[i].Fields, name)
			}
		}
		tmpls[i].Java = nil
	}
	if err := k.checkLease(sid, id); err != nil {
		return k.faultReply(err)
	}
	c := lookup.AttributeChange{Modify: &lookup.AttributeModify{Templates: tmpls, Changes: changes}}
	if err := k.s.cfg.Registrar.ChangeAttributes(sid, c, k.owner()); err != nil {
		return k.faultReply(err)
	}
	return jeri.Return(nil)
}

func (k *call) renewServiceLease() jeri.Reply {
	sid, id, err := k.serviceAndLease()
	if err != nil {
		return argError(err)
	}
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	if err := k.checkLease(sid, id); err != nil {
		return k.faultReply(err)
	}
	rec, err := k.s.cfg.Grantor.Renew(id, dur)
	if err != nil {
		return k.faultReply(err)
	}
	granted := k.s.remaining(rec.Expiration)
	return jeri.Return(func(e *javaio.Encoder) error { e.WriteLong(granted); return nil })
}

func (k *call) cancelServiceLease() jeri.Reply {
	sid, id, err := k.serviceAndLease()
	if err != nil {
		return argError(err)
	}
	if err := k.checkLease(sid, id); err != nil {
		return k.faultReply(err)
	}
	if err := k.s.cfg.Grantor.Cancel(id); err != nil {
		return k.faultReply(err)
	}
	return jeri.Return(nil)
}

// batchLease reads the lease of one entry of a batch: a ServiceID (a
// service lease) or a Long (an event lease's event ID), with its Uuid.
func (k *call) batchLease(reg javaio.Value, u javaio.Value) (string, error) {
	id, err := leaseID(u)
	if err != nil {
		return "", err
	}
	if o, ok := reg.(*javaio.Object); ok && o.Class.IsA("net.jini.core.lookup.ServiceID") {
		sid, err := k.s.ServiceIDFrom(o)
		if err != nil {
			return "", err
		}
		return id, k.checkLease(sid, id)
	}
	if o, ok := reg.(*javaio.Object); ok && o.Class.IsA("java.lang.Long") {
		eid, _ := reggie.Field(o, "value").(int64)
		return id, k.checkEventLease(eid, id)
	}
	return "", fmt.Errorf("%w: a lease of a batch is named by a %s", reggie.ErrBadArgument, reggie.Describe(reg))
}

// batch reads the Object[] and Uuid[] that name the leases of a batched
// call (a ServiceID or a Long event ID for each, and its lease's Uuid)
// and checks each lease is what names it: ids[i] is the lease ID, and
// bad[i] set where it is not one.
func (k *call) batch() (ids []string, bad []bool, err error) {
	regsV, err := k.readObject()
	if err != nil {
		return nil, nil, err
	}
	idsV, err := k.readObject()
	if err != nil {
		return nil, nil, err
	}
	regs, err1 := reggie.Elems(regsV)
	uuids, err2 := reggie.Elems(idsV)
	if err := errors.Join(err1, err2); err != nil || len(regs) != len(uuids) {
		return nil, nil, fmt.Errorf("%w: a batch wants arrays of one length", reggie.ErrBadArgument)
	}
	ids, bad = make([]string, len(regs)), make([]bool, len(regs))
	for i := range regs {
		ids[i], err = k.batchLease(regs[i], uuids[i])
		bad[i] = err != nil
	}
	return ids, bad, nil
}

// renewLeases is LeaseMap.renewAll: the leases renewed in one store
// transaction, as the HTTP batch renews them.
func (k *call) renewLeases() jeri.Reply {
	ids, bad, err := k.batch()
	if err != nil {
		return argError(err)
	}
	dursV, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	durs, ok := dursV.(*javaio.Array)
	if !ok || durs.Prim == nil || durs.Len() != len(ids) {
		return argError(fmt.Errorf("%w: renewLeases wants as many durations as leases", reggie.ErrBadArgument))
	}
	granted := slices.Clone(durs.Prim)
	var asked []lease.Renewal
	var at []int
	for i, id := range ids {
		if !bad[i] {
			asked = append(asked, lease.Renewal{ID: id, Duration: int64(binary.BigEndian.Uint64(granted[i*8:]))})
			at = append(at, i)
		}
	}
	for j, r := range k.s.cfg.Grantor.RenewAll(asked) {
		if r.Err != nil {
			bad[at[j]] = true
			continue
		}
		binary.BigEndian.PutUint64(granted[at[j]*8:], uint64(k.s.remaining(r.Lease.Expiration)))
	}
	// RenewResults: each lease's granted duration, -1 for one that
	// failed, and the failures' exceptions in order.
	var excs []javaio.Value
	for i, id := range ids {
		if bad[i] {
			binary.BigEndian.PutUint64(granted[i*8:], ^uint64(0))
			excs = append(excs, k.s.unknownLease(fmt.Sprintf("No lease recorded for ID: %s", id)))
		}
	}
	rr := k.s.l.New("RenewResults").Set("durations", &javaio.Array{Class: durs.Class, Prim: granted})
	if excs != nil {
		rr.Set("exceptions", &javaio.Array{Class: k.s.l.Classes.Class("[Ljava.lang.Exception;"), Elems: excs})
	}
	return returnObject(rr)
}

// cancelLeases is LeaseMap.cancelAll: null when every lease was
// cancelled, else an exception where one was not.
func (k *call) cancelLeases() jeri.Reply {
	ids, bad, err := k.batch()
	if err != nil {
		return argError(err)
	}
	var asked []string
	var at []int
	for i, id := range ids {
		if !bad[i] {
			asked = append(asked, id)
			at = append(at, i)
		}
	}
	for j, err := range k.s.cfg.Grantor.CancelAll(asked) {
		bad[at[j]] = err != nil
	}
	if !slices.Contains(bad, true) {
		return returnObject(nil)
	}
	out := &javaio.Array{Class: k.s.l.Classes.Class("[Ljava.lang.Exception;"), Elems: make([]javaio.Value, len(ids))}
	for i, id := range ids {
		if bad[i] {
			out.Elems[i] = k.s.unknownLease(fmt.Sprintf("No lease recorded for ID: %s", id))
		}
	}
	return returnObject(out)
}

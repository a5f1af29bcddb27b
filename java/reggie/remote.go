package reggie

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
)

// Remote is a lookup service's registrar called over Jini ERI, as a Java
// program holding its proxy calls it: Reggie's, or jinid's as Java sees
// it. `jinid browse` reads Java lookup services with it, and the
// daemon's join manager keeps its static services registered in them.
// Calls run one at a time on one connection, kept open between calls
// and dialled again when it breaks; every connection is made by the dial
// given (the daemon's outbound dialer), and every reply is bounded.
type Remote struct {
	c    *Codec
	ep   endpoint
	sid  discovery.ServiceID
	dial DialFunc

	mu sync.Mutex
	cc *jeri.ClientConn
}

// DialFunc makes the connections of a Remote.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Bounds of a Remote's calls.
const (
	// MaxRemoteReply bounds one reply: a lookup of MaxRemoteMatches
	// items of a few KB each.
	MaxRemoteReply = 8 << 20
	// MaxRemoteMatches bounds the items one lookup asks for.
	MaxRemoteMatches = 1000
	// maxConverted bounds what one reply becomes once read (items,
	// attributes, field values, counted in bytes as Go holds them,
	// roughly): a back-reference names a value again in five bytes, and
	// each is a copy once converted (a 1.25 MB reply naming one item
	// 250,000 times took 413 MB). A real answer (MaxRemoteMatches items
	// of a few KB) comes to a few MB.
	maxConverted = 2 * MaxRemoteReply
)

// ErrBadReply is a registrar's answer that is not one to what was
// asked: more items than asked for, values repeated past any real
// answer's size.
var ErrBadReply = errors.New("the registrar's answer is not one to what was asked")

// budget is what the conversion of one reply may still produce.
type budget struct{ left int }

// take spends n of b (a nil budget has no bound).
func (b *budget) take(n int) error {
	if b == nil {
		return nil
	}
	if b.left -= n; b.left < 0 {
		return fmt.Errorf("%w: its values, repeated by back-reference, come to more than %d bytes", ErrBadReply, maxConverted)
	}
	return nil
}

// ErrUnknownLease is what a registrar's UnknownLeaseException becomes:
// the lease (or the registration) is not there any more.
var ErrUnknownLease = errors.New("the registrar knows no such lease")

// ErrUnreachable wraps the failures of a call that did not get an
// answer: the connection could not be made, broke, or timed out.
var ErrUnreachable = errors.New("the registrar could not be reached")

// ErrNoSuchObject: nothing answers for the registrar's object at its
// endpoint any more (the lookup service restarted with a new one).
var ErrNoSuchObject = errors.New("the registrar object is not exported at its endpoint any more")

// ErrLeaseDenied is what a grantor's LeaseDeniedException becomes: it
// would not renew the lease.
var ErrLeaseDenied = errors.New("the grantor denied the renewal")

// RemoteError is an exception a registrar threw.
type RemoteError struct {
	Class, Message string
	// Remote: a RemoteException, which may mend on retry.
	Remote bool
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("the registrar threw %s: %s", e.Class, e.Message)
}

// endpoint is where a remote object is: a TCP endpoint and the object's
// Uuid there.
type endpoint struct {
	Host   string
	Port   int
	Object jeri.Uuid
}

// NewRemote reads the registrar proxy a unicast discovery response
// carried (m, as discovery.Registrar.Marshalled holds it) and returns
// its client. Nothing is dialled until the first call.
func (c *Codec) NewRemote(m []byte, dial DialFunc) (*Remote, error) {
	p, ok := unicast.ProxyObject(m)
	if !ok {
		return nil, errors.New("the registrar proxy is not one jinid can read")
	}
	srv := Field(p, "server")
	if srv == nil {
		return nil, fmt.Errorf("the registrar proxy (%s) holds no server reference", p.Class)
	}
	host, port, id, err := RemoteEndpoint(srv, "registrar")
	if err != nil {
		return nil, err
	}
	return &Remote{c: c, ep: endpoint{Host: host, Port: port, Object: id}, sid: unicast.ReadRegistrar(m).ServiceID, dial: dial}, nil
}

// RemoteAt returns a client of the remote object obj at host:port (a
// registrar, or another object a lease names: a landlord). Nothing is
// dialled until the first call.
func (c *Codec) RemoteAt(host string, port int, obj jeri.Uuid, dial DialFunc) *Remote {
	return &Remote{c: c, ep: endpoint{Host: host, Port: port, Object: obj}, dial: dial}
}

// Address is the registrar's Jini ERI endpoint, host:port.
func (r *Remote) Address() string { return net.JoinHostPort(r.ep.Host, strconv.Itoa(r.ep.Port)) }

// ServiceID is the lookup service's, as its proxy carries it.
func (r *Remote) ServiceID() discovery.ServiceID { return r.sid }

// Close closes the connection kept.
func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cc != nil {
		r.cc.Close()
		r.cc = nil
	}
	return nil
}

// call invokes a method (a lineage key, "lookup/2") with the arguments
// args writes, and returns a reader of the return value.
func (r *Remote) call(ctx context.Context, method string, args func(e *javaio.Encoder) error) (*javaio.Decoder, error) {
	hash := r.c.l.Hash(method)
	if hash == 0 {
		return nil, fmt.Errorf("the registrar of lineage %s has no method %s", r.c.l.Name, method)
	}
	return r.Call(ctx, method, hash, args)
}

// Call invokes the method of hash (method names it in errors) with the
// arguments args writes, and returns a reader of the return value. An
// exception the object threw is a *RemoteError (ErrUnknownLease for an
// UnknownLeaseException); a call that got no answer wraps
// ErrUnreachable.
func (r *Remote) Call(ctx context.Context, method string, hash int64, args func(e *javaio.Encoder) error) (*javaio.Decoder, error) {
	e := javaio.NewEncoder(true)
	e.WriteLong(hash)
	if args != nil {
		if err := args(e); err != nil {
			return nil, fmt.Errorf("encoding the arguments of %s: %w", method, err)
		}
	}
	req := append(append(r.ep.Object[:], 0, 0), e.Bytes()...)

	r.mu.Lock()
	defer r.mu.Unlock()
	var reply []byte
	for try := 0; ; try++ {
		reused := r.cc != nil
		if err := r.connect(ctx); err != nil {
			return nil, err
		}
		var err error
		reply, err = r.cc.Call(ctx, req)
		if err == nil {
			break
		}
		r.cc.Close()
		r.cc = nil
		// A kept connection the registrar closed while idle (Java closes
		// its own after 15 s) fails the next call: once more, on a new
		// one, as Java's own client does.
		if !reused || try > 0 || ctx.Err() != nil {
			return nil, fmt.Errorf("%w: calling %s at %s: %w", ErrUnreachable, method, r.Address(), err)
		}
	}
	return r.c.readReply(reply)
}

// connect makes the connection kept, if there is none; the caller
// holds mu.
func (r *Remote) connect(ctx context.Context) error {
	if r.cc != nil {
		return nil
	}
	conn, err := r.dial(ctx, "tcp", r.Address())
	if err != nil {
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, r.Address(), err)
	}
	cc, err := jeri.NewClientConn(ctx, conn)
	if err != nil {
		conn.Close()
		return fmt.Errorf("%w: opening a Jini ERI connection to %s: %w", ErrUnreachable, r.Address(), err)
	}
	cc.SetMaxReply(MaxRemoteReply)
	r.cc = cc
	return nil
}

// localHost is the address this host reaches the remote object from:
// the one its host reaches this one at.
func (r *Remote) localHost(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.connect(ctx); err != nil {
		return "", err
	}
	ap, err := netip.ParseAddrPort(r.cc.LocalAddr().String())
	if err != nil {
		return "", fmt.Errorf("the local address of the connection to %s: %w", r.Address(), err)
	}
	return ap.Addr().Unmap().WithZone("").String(), nil
}

// RemoteEndpoint reads where the remote object behind a Java proxy (a
// listener, a registrar) is: a JERI dynamic proxy over TCP. what names
// the object in errors.
func RemoteEndpoint(v javaio.Value, what string) (host string, port int, id jeri.Uuid, err error) {
	p, ok := v.(*javaio.Object)
	if !ok || !p.Class.IsA("java.lang.reflect.Proxy") {
		return "", 0, id, fmt.Errorf("%w: the %s is not a Jini ERI proxy (%s)", ErrBadArgument, what, Describe(v))
	}
	h, ok := Field(p, "h").(*javaio.Object)
	if !ok {
		return "", 0, id, fmt.Errorf("%w: the %s proxy has no invocation handler", ErrBadArgument, what)
	}
	if c, ok := Field(h, "compression").(*javaio.Enum); ok && c.Name != "NONE" {
		return "", 0, id, fmt.Errorf("%w: the %s wants %s-compressed calls, which jinid does not make", ErrBadArgument, what, c.Name)
	}
	oe, ok := Field(h, "oe").(*javaio.Object)
	if !ok {
		return "", 0, id, fmt.Errorf("%w: the %s's invocation handler has no object endpoint", ErrBadArgument, what)
	}
	ep, ok := Field(oe, "ep").(*javaio.Object)
	if !ok || !ep.Class.IsA("net.jini.jeri.tcp.TcpEndpoint") {
		return "", 0, id, fmt.Errorf("%w: the %s is not on a plain TCP endpoint (%s); jinid calls only those", ErrBadArgument, what, Describe(Field(oe, "ep")))
	}
	host, _ = Field(ep, "host").(string)
	p32, _ := Field(ep, "port").(int32)
	uo, ok := Field(oe, "id").(*javaio.Object)
	if !ok || host == "" || p32 <= 0 || p32 > 65535 {
		return "", 0, id, fmt.Errorf("%w: the %s's endpoint lacks a host, port or object ID", ErrBadArgument, what)
	}
	b0, _ := Field(uo, "bits0").(int64)
	b1, _ := Field(uo, "bits1").(int64)
	return host, int(p32), jeri.UuidOf(b0, b1), nil
}

// readReply reads a Jini ERI reply: a return value's reader, or the
// error the registrar's exception is.
func (c *Codec) readReply(reply []byte) (*javaio.Decoder, error) {
	if len(reply) == 1 && reply[0] == 0 {
		return nil, ErrNoSuchObject
	}
	if len(reply) < 2 || reply[0] != 1 {
		return nil, fmt.Errorf("reply %x is not a Jini ERI reply", reply[:min(len(reply), 8)])
	}
	d, err := javaio.NewDecoder(reply[2:])
	if err != nil {
		return nil, fmt.Errorf("reading the registrar's reply: %w", err)
	}
	switch reply[1] {
	case 1:
		return d, nil
	case 2:
		v, err := d.ReadObject()
		if err != nil {
			return nil, fmt.Errorf("reading the registrar's exception: %w", err)
		}
		exc, ok := v.(*javaio.Object)
		if !ok {
			return nil, errors.New("the registrar threw a non-object")
		}
		msg, _ := Field(exc, "detailMessage").(string)
		re := &RemoteError{Class: exc.Class.Name, Message: msg, Remote: exc.Class.IsA("java.rmi.RemoteException")}
		switch {
		case exc.Class.IsA("net.jini.core.lease.UnknownLeaseException"):
			return nil, fmt.Errorf("%w (%w)", ErrUnknownLease, re)
		case exc.Class.IsA("net.jini.core.lease.LeaseDeniedException"):
			return nil, fmt.Errorf("%w (%w)", ErrLeaseDenied, re)
		}
		return nil, re
	}
	return nil, fmt.Errorf("the registrar answered with marshalling version %d", reply[1])
}

// Item is a service item as data.
type Item struct {
	ServiceID string
	// Types: registered, every type templates may name; read from a
	// registrar, the service's types as far as it tells them (a dynamic
	// proxy's interfaces, else its most specific types).
	Types      []string
	Attributes []Entry
	// Endpoint is where the service is: registered, what its service
	// object is (a string); read, what the object says (such a string,
	// or a Jini ERI proxy's endpoint).
	Endpoint string
	// Class, read, is the service object's class (empty for a dynamic
	// proxy or an object jinid could not read).
	Class string
	// Java, registered, makes the service object instead of Endpoint:
	// one of jinid's own Java services, whose proxy names the address
	// the lookup service's host reaches this one at. (A pointer, so
	// that items compare equal while they keep the same maker.)
	Java *ServiceMaker
}

// ServiceMaker makes an item's Java service object (its object stream)
// for clients that reach this host at host.
type ServiceMaker struct {
	Make func(host string) ([]byte, error)
}

// Template selects items as Reggie matches them: by ServiceID, types
// (each among the item's) and entries (fields left out match anything).
type Template struct {
	ServiceID  string
	Types      []string
	Attributes []Entry
}

// Lookup runs lookup(template, max), at most MaxRemoteMatches: the items
// and how many match in all.
func (r *Remote) Lookup(ctx context.Context, t Template, max int) ([]Item, int, error) {
	tmpl, err := r.c.templateTo(t)
	if err != nil {
		return nil, 0, err
	}
	max = min(max, MaxRemoteMatches)
	d, err := r.call(ctx, "lookup/2", func(e *javaio.Encoder) error {
		if err := e.WriteObject(tmpl); err != nil {
			return err
		}
		e.WriteInt(int32(max))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	out, total, err := r.c.readMatches(d, max)
	if err != nil {
		return nil, 0, err
	}
	// Reggie leaves the type tree out of what lookup returns; a service
	// object that does not say its types has them asked for.
	for i := range out {
		if len(out[i].Types) > 0 {
			continue
		}
		types, err := r.serviceTypes(ctx, out[i].ServiceID)
		if err != nil {
			return nil, 0, err
		}
		out[i].Types = types
	}
	return out, total, nil
}

// readMatches reads Reggie's Matches: the items (at most max: a
// registrar answers no more than asked), and how many match in all.
func (c *Codec) readMatches(d *javaio.Decoder, max int) ([]Item, int, error) {
	v, err := d.ReadObject()
	if err != nil {
		return nil, 0, fmt.Errorf("reading the matches: %w", err)
	}
	m, err := Object(v, c.l.Package+".Matches")
	if err != nil {
		return nil, 0, err
	}
	total, _ := Field(m, "totalMatches").(int32)
	elems := listElems(Field(m, "items"))
	if len(elems) > max {
		return nil, 0, fmt.Errorf("%w: %d items, at most %d asked for", ErrBadReply, len(elems), max)
	}
	b := &budget{left: maxConverted}
	var out []Item
	for _, iv := range elems {
		it, ok := iv.(*javaio.Object)
		if !ok || !it.Class.IsA(c.l.Package+".Item") {
			continue
		}
		ri, err := c.remoteItem(it, b)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, ri)
	}
	return out, int(total), nil
}

// listElems returns the elements a serialized java.util list holds (an
// ArrayList or LinkedList writes them in its custom data).
func listElems(v javaio.Value) []javaio.Value {
	o, ok := v.(*javaio.Object)
	if !ok {
		return nil
	}
	var out []javaio.Value
	for _, cd := range o.Data {
		for _, x := range cd.Custom {
			if _, ok := x.(javaio.Block); !ok {
				out = append(out, x)
			}
		}
	}
	return out
}

// serviceTypes runs getServiceTypes for one service: its most specific
// types.
func (r *Remote) serviceTypes(ctx context.Context, sid string) ([]string, error) {
	tmpl, err := r.c.templateTo(Template{ServiceID: sid})
	if err != nil {
		return nil, err
	}
	d, err := r.call(ctx, "getServiceTypes/2", func(e *javaio.Encoder) error {
		if err := e.WriteObject(tmpl); err != nil {
			return err
		}
		return e.WriteObject("")
	})
	if err != nil {
		return nil, err
	}
	v, err := d.ReadObject()
	if err != nil {
		return nil, fmt.Errorf("reading the service types: %w", err)
	}
	bases, _ := Elems(v)
	var out []string
	for _, b := range bases {
		if bo, ok := b.(*javaio.Object); ok {
			if t, ok := Field(bo, "type").(*javaio.Object); ok {
				if name, _ := Field(t, "name").(string); name != "" && !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	return out, nil
}

// infrastructure are interfaces every Jini ERI proxy has, which say
// nothing of what the service is.
var infrastructure = map[string]bool{
	"net.jini.core.constraint.RemoteMethodControl":      true,
	"net.jini.security.proxytrust.TrustEquivalence":     true,
	"java.io.Serializable":                              true,
	"java.rmi.Remote":                                   true,
	"net.jini.export.CodebaseAccessor":                  true,
	"net.jini.lookup.ServiceProxyAccessor":              true,
	"net.jini.lookup.ServiceAttributesAccessor":         true,
	"net.jini.lookup.ServiceIDAccessor":                 true,
	"net.jini.core.constraint.RemoteMethodControl$Impl": true,
}

// remoteItem reads one of a registrar's items.
func (c *Codec) remoteItem(o *javaio.Object, b *budget) (Item, error) {
	var ri Item
	var err error
	if err := b.take(256); err != nil {
		return Item{}, err
	}
	if ri.ServiceID, err = c.ServiceIDFrom(Field(o, "serviceID")); err != nil {
		return Item{}, err
	}
	if st := Field(o, "serviceType"); st != nil {
		if ri.Types, err = c.TypeNames(st, nil, map[*javaio.Object]bool{}); err != nil {
			return Item{}, err
		}
	}
	sets, err := Elems(Field(o, "attributeSets"))
	if err != nil {
		return Item{}, err
	}
	if err := b.take(16 * len(sets)); err != nil {
		return Item{}, err
	}
	for _, e := range sets {
		if e == nil {
			continue
		}
		a, _, err := c.readEntry(e, false, b)
		if err != nil {
			return Item{}, err
		}
		ri.Attributes = append(ri.Attributes, a)
	}
	svc := ServiceObject(Field(o, "service"))
	switch s := svc.(type) {
	case string:
		ri.Endpoint, ri.Class = s, "java.lang.String"
	case *javaio.Object:
		if s.Class.Proxy {
			if len(ri.Types) == 0 {
				for _, i := range s.Class.Interfaces {
					if !infrastructure[i] {
						ri.Types = append(ri.Types, i)
					}
				}
			}
			if host, port, _, err := RemoteEndpoint(s, "service"); err == nil {
				ri.Endpoint = "jeri://" + net.JoinHostPort(host, strconv.Itoa(port))
			}
		} else {
			ri.Class = s.Class.Name
		}
	}
	return ri, nil
}

// templateTo is a template as Reggie reads it. Attribute templates must
// be of entry classes jinid knows the fields of (entries.txt).
func (c *Codec) templateTo(t Template) (*javaio.Object, error) {
	o := c.l.New("Template")
	if t.ServiceID != "" {
		sid, err := discovery.ParseServiceID(t.ServiceID)
		if err != nil {
			return nil, err
		}
		o.Set("serviceID", c.ServiceIDObject(sid))
	}
	if len(t.Types) > 0 {
		types := &javaio.Array{Class: c.l.Classes.Class("[L" + c.l.Package + ".ServiceType;")}
		for _, name := range t.Types {
			types.Elems = append(types.Elems, c.serviceType(name, nil))
		}
		o.Set("serviceTypes", types)
	}
	if len(t.Attributes) > 0 {
		reps, err := c.entryReps(t.Attributes)
		if err != nil {
			return nil, err
		}
		o.Set("attributeSetTemplates", reps)
	}
	return o, nil
}

// entryReps are entries as Reggie's EntryRep array; each must be of a
// class jinid knows the fields of (Java could not load another).
func (c *Codec) entryReps(es []Entry) (*javaio.Array, error) {
	reps := &javaio.Array{Class: c.l.Classes.Class("[L" + c.l.Package + ".EntryRep;")}
	for _, a := range es {
		rep, ok := c.EntryRep(a)
		if !ok {
			return nil, fmt.Errorf("attribute %s: not an entry class jinid knows the fields of, so a Java lookup service cannot be given it", a.Type)
		}
		reps.Elems = append(reps.Elems, rep)
	}
	return reps, nil
}

// serviceType is Reggie's ServiceType of a type name; a registered
// item's tree has its other types as interfaces, so that a template of
// any of them matches it.
func (c *Codec) serviceType(name string, ifaces []string) *javaio.Object {
	o := c.l.New("ServiceType").Set("name", name).Set("hash", TypeHash(name))
	if len(ifaces) > 0 {
		arr := &javaio.Array{Class: c.l.Classes.Class("[L" + c.l.Package + ".ServiceType;")}
		for _, i := range ifaces {
			arr.Elems = append(arr.Elems, c.serviceType(i, nil))
		}
		o.Set("interfaces", arr)
	}
	return o
}

// RemoteLease is a service registration's lease in a remote registrar.
type RemoteLease struct {
	ServiceID string
	ID        jeri.Uuid
	// Granted is the duration the registrar granted.
	Granted time.Duration
}

// Register runs register(item, duration): the item is registered (or
// replaces the one of its ServiceID) with a lease of at most d.
func (r *Remote) Register(ctx context.Context, it Item, d time.Duration) (RemoteLease, error) {
	var svc []byte
	if it.Java != nil {
		host, err := r.localHost(ctx)
		if err != nil {
			return RemoteLease{}, err
		}
		if svc, err = it.Java.Make(host); err != nil {
			return RemoteLease{}, fmt.Errorf("making the service object: %w", err)
		}
	}
	o, err := r.c.itemRep(it, svc)
	if err != nil {
		return RemoteLease{}, err
	}
	dec, err := r.call(ctx, "register/2", func(e *javaio.Encoder) error {
		if err := e.WriteObject(o); err != nil {
			return err
		}
		e.WriteLong(d.Milliseconds())
		return nil
	})
	if err != nil {
		return RemoteLease{}, err
	}
	v, err := dec.ReadObject()
	if err != nil {
		return RemoteLease{}, fmt.Errorf("reading the registration: %w", err)
	}
	reg, ok := v.(*javaio.Object)
	if !ok {
		return RemoteLease{}, fmt.Errorf("the registrar answered register with %s", Describe(v))
	}
	ls, ok := Field(reg, "lease").(*javaio.Object)
	if !ok {
		return RemoteLease{}, errors.New("the registration has no lease")
	}
	u, ok := Field(ls, "leaseID").(*javaio.Object)
	if !ok {
		return RemoteLease{}, errors.New("the registration's lease has no ID")
	}
	b0, _ := Field(u, "bits0").(int64)
	b1, _ := Field(u, "bits1").(int64)
	out := RemoteLease{ServiceID: it.ServiceID, ID: jeri.UuidOf(b0, b1), Granted: d}
	// AbstractLease writes its expiration in its custom data: a duration
	// from now (serialFormat 1, Reggie's default) or a time.
	var blk []byte
	for _, x := range ls.Custom("org.apache.river.lease.AbstractLease") {
		if b, ok := x.(javaio.Block); ok {
			blk = append(blk, b...)
		}
	}
	if len(blk) >= 8 {
		ms := int64(binary.BigEndian.Uint64(blk))
		if f, _ := Field(ls, "serialFormat").(int32); f == 2 {
			ms -= time.Now().UnixMilli()
		}
		out.Granted = time.Duration(max(ms, 0)) * time.Millisecond
	}
	return out, nil
}

// itemRep is an item to register as Reggie's Item: its entries of
// well-known classes (others cannot be sent: Java could not load them),
// its endpoint as its service object, its types as one type tree.
func (c *Codec) itemRep(it Item, java []byte) (*javaio.Object, error) {
	if len(it.Types) == 0 {
		return nil, errors.New("an item registered in a Java lookup service needs a type")
	}
	sid, err := discovery.ParseServiceID(it.ServiceID)
	if err != nil {
		return nil, err
	}
	reps, err := c.entryReps(it.Attributes)
	if err != nil {
		return nil, err
	}
	var svc *javaio.Object
	if java != nil {
		svc = c.Wrap(java)
	} else if svc, err = c.WrapString(it.Endpoint); err != nil {
		return nil, err
	}
	return c.l.New("Item").Set("serviceID", c.ServiceIDObject(sid)).Set("attributeSets", reps).Set("service", svc).
		Set("serviceType", c.serviceType(it.Types[0], it.Types[1:])), nil
}

// leaseArgs writes the (ServiceID, Uuid) that name a service lease.
func (r *Remote) leaseArgs(e *javaio.Encoder, l RemoteLease) error {
	sid, err := discovery.ParseServiceID(l.ServiceID)
	if err != nil {
		return err
	}
	if err := e.WriteObject(r.c.ServiceIDObject(sid)); err != nil {
		return err
	}
	b0, b1 := l.ID.Bits()
	return e.WriteObject(javaio.NewObject(r.c.l.Classes.Class("net.jini.id.UuidFactory$Impl")).Set("bits0", b0).Set("bits1", b1))
}

// Renew runs renewServiceLease: the duration granted.
func (r *Remote) Renew(ctx context.Context, l RemoteLease, d time.Duration) (time.Duration, error) {
	dec, err := r.call(ctx, "renewServiceLease/3", func(e *javaio.Encoder) error {
		if err := r.leaseArgs(e, l); err != nil {
			return err
		}
		e.WriteLong(d.Milliseconds())
		return nil
	})
	if err != nil {
		return 0, err
	}
	ms, err := dec.ReadLong()
	if err != nil {
		return 0, fmt.Errorf("reading the duration granted: %w", err)
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// Cancel runs cancelServiceLease: the registration is removed.
func (r *Remote) Cancel(ctx context.Context, l RemoteLease) error {
	_, err := r.call(ctx, "cancelServiceLease/2", func(e *javaio.Encoder) error { return r.leaseArgs(e, l) })
	return err
}

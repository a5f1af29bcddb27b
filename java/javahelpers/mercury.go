package javahelpers

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/mailbox"
)

//go:embed mercury.methods
var mercuryMethods string

// MercuryTypes are the types of Mercury's proxy, as the lookup service
// matches them: what a Java client asks for (EventMailbox,
// PullEventMailbox) and the rest of the proxy's class.
var MercuryTypes = []string{
	"org.apache.river.mercury.proxy.MailboxProxy$ConstrainableMailboxProxy",
	"org.apache.river.mercury.proxy.MailboxProxy",
	"net.jini.event.PullEventMailbox",
	"net.jini.event.EventMailbox",
	"net.jini.admin.Administrable",
	"net.jini.core.constraint.RemoteMethodControl",
	"net.jini.id.ReferentUuid",
	"net.jini.security.proxytrust.ProxyAccessor",
	"java.io.Serializable",
}

// maxBatch bounds the events one getRemoteEvents or getNextBatch hands
// back. One: jinid's iterator acknowledges an event when the next is
// asked for, as Mercury acknowledges a batch when the next batch is.
const maxBatch = 1

// Mercury is Mercury's server as Java clients call it: a jeri.Object, on
// jinid's event mailbox.
//
// Events a Java generator sends a mailbox listener are stored as the
// JSON an HTTP client pulls (javaEventJSON): the event's object stream
// with what HTTP clients read of it; a Java client gets that object back,
// and one an HTTP generator sent as a plain RemoteEvent.
type Mercury struct {
	*face
	mailbox   *mailbox.Service
	transport *javalookup.Transport
	object    jeri.Uuid
	methods   *lineage.Methods
	proxies   proxyCache
}

// NewMercury returns the event mailbox's Java face, on mb; events it
// pushes to Java listeners go through t.
func NewMercury(cfg Config, mb *mailbox.Service, t *javalookup.Transport) (*Mercury, error) {
	f, err := newFace(cfg)
	if err != nil {
		return nil, err
	}
	m, err := lineage.ParseMethods(mercuryMethods)
	if err != nil {
		return nil, fmt.Errorf("Mercury's methods: %w", err)
	}
	s := &Mercury{face: f, mailbox: mb, transport: t, object: cfg.Identity.Derived("mercury"), methods: m}
	mb.SetDeliverer(s.deliver)
	t.SetLocal(s.local)
	return s, nil
}

// Object is the Mercury server's object Uuid, to export it under.
func (s *Mercury) Object() jeri.Uuid { return s.object }

// Owns says u names one of this mailbox's listeners (a jeri URL of its
// server with a registration): events for it stay in the process.
func (s *Mercury) Owns(u *url.URL) bool {
	if u.Scheme != "jeri" || u.Query().Get("mailbox") == "" {
		return false
	}
	var id jeri.Uuid
	return id.UnmarshalText([]byte(u.Path[min(1, len(u.Path)):])) == nil && id == s.object
}

func (s *Mercury) server(host string) *javaio.Object { return s.remoteRef("mercury", s.object, host) }

// Proxy returns Mercury's proxy (ConstrainableMailboxProxy) for clients
// that reach jinid at host, as an object stream.
func (s *Mercury) Proxy(host string) ([]byte, error) {
	return s.proxies.get(host, func() *javaio.Object { return s.proxy(host) })
}

func (s *Mercury) proxy(host string) *javaio.Object {
	return javaio.NewObject(s.class("org.apache.river.mercury.proxy.MailboxProxy$ConstrainableMailboxProxy")).
		Set("mailbox", s.server(host)).Set("proxyID", s.l.Uuid(s.object))
}

// Invoke serves a call to Mercury's server.
func (s *Mercury) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	return s.counted("mercury", s.methods, c, s.invoke(ctx, c))
}

func (s *Mercury) invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	key, ok := s.methods.Method(c.Method)
	if !ok {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	// A mailbox listener takes events from any generator that holds it
	// (its Uuid is the capability), as the HTTP listener does.
	if r, denied := s.may(c.Conn, key, "notify/2", "getRemoteEvents/1", "getNextBatch/4"); denied {
		return r
	}
	k := s.call(ctx, c, mailbox.LeaseKind)
	if r, ok := k.landlord(key); ok {
		return r
	}
	switch key {
	case "register/1", "pullRegister/1":
		return s.register(k, key == "pullRegister/1")
	case "notify/2":
		return s.notify(k)
	case "getRemoteEvents/1":
		return s.getRemoteEvents(k)
	case "getNextBatch/4":
		return s.getNextBatch(k)
	case "enableDelivery/2":
		return s.enableDelivery(k)
	case "disableDelivery/1":
		id, err := k.uuidArg()
		if err != nil {
			return argError(err)
		}
		return k.answer(s.mailbox.EnableDelivery(k.ctx, id, ""))
	case "addUnknownEvents/2":
		return s.addUnknownEvents(k)
	case "getServiceProxy/0":
		return returnObject(s.proxy(k.host))
	}
	return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
		"jinid's event mailbox has no Java admin interface: administer it with jinid's HTTP API or CLI"))
}

// register is register(long) and pullRegister(long): a Registration
// (both MailboxRegistration and MailboxPullRegistration), its lease and
// its listener.
func (s *Mercury) register(k *call, pull bool) jeri.Reply {
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	made, err := s.mailbox.Register(d, pull, k.owner())
	if err != nil {
		return k.fail(err)
	}
	id, err := s.l.IDUuid(made.ID)
	if err != nil {
		return k.fail(err)
	}
	srv := s.server(k.host)
	ls, err := s.landlordLease(srv, s.object, made.Lease.ID, made.Lease.Expiration)
	if err != nil {
		return k.fail(err)
	}
	listener := javaio.NewObject(s.class("org.apache.river.mercury.proxy.ListenerProxy$ConstrainableListenerProxy")).
		Set("registrationID", id).Set("server", srv)
	r := javaio.NewObject(s.class("org.apache.river.mercury.proxy.Registration$ConstrainableRegistration")).
		Set("lease", ls).Set("listener", listener).Set("mailbox", srv).Set("registrationID", id)
	return returnObject(r)
}

// notify is notify(Uuid, RemoteEvent): what the mailbox's listener does
// with an event a generator sends it.
func (s *Mercury) notify(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	ev, ok := v.(*javaio.Object)
	if !ok || !ev.Class.IsA("net.jini.core.event.RemoteEvent") {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", "the event cannot be null"))
	}
	if err := s.store(id, ev); err != nil {
		var f *fault.Error
		if errors.As(err, &f) && f.Code == apitypes.UnknownEvent {
			return jeri.Throw(s.l.Exception(s.l.Classes.Class("net.jini.core.event.UnknownEventException"), f.Message))
		}
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// store keeps a Java event for registration id.
func (s *Mercury) store(id string, ev *javaio.Object) error {
	info, err := s.mailbox.Get(id)
	if err != nil {
		return err
	}
	body, err := s.eventJSON(ev)
	if err != nil {
		return fault.New(apitypes.InvalidArgument, "the event: %v", err)
	}
	return s.mailbox.Notify(info.Listener, body, 0)
}

// local takes, in the process, the events jinid's own Java senders (the
// registrar) deliver to one of this mailbox's listeners.
func (s *Mercury) local(u *url.URL, ev *javaio.Object) (event.Outcome, error, bool) {
	if !s.Owns(u) {
		return 0, nil, false
	}
	err := s.store(u.Query().Get("mailbox"), ev)
	var full *mailbox.Full
	var f *fault.Error
	switch {
	case err == nil:
		return event.Delivered, nil, true
	case errors.As(err, &full):
		return event.Indefinite, err, true
	case errors.As(err, &f) && f.Code == apitypes.UnknownEvent:
		return event.UnknownEvent, err, true
	}
	return event.Definite, err, true
}

// deliver pushes a stored event to a Java target (the mailbox's
// Deliverer).
func (s *Mercury) deliver(ctx context.Context, target string, body []byte, _ int) (event.Outcome, error) {
	ev, err := s.javaEvent(body)
	if err != nil {
		return event.Definite, fmt.Errorf("the stored event as Java's: %w", err)
	}
	return s.transport.Send(ctx, target, ev)
}

// eventData is Mercury's RemoteEventData of a stored event: its object
// stream, and a cookie (the client sends the last one back; jinid's
// iterator knows where it is without it).
func (s *Mercury) eventData(body []byte, seq int64) (*javaio.Object, error) {
	ev, err := s.javaEvent(body)
	if err != nil {
		return nil, err
	}
	b, err := javaio.Encode(ev, false)
	if err != nil {
		return nil, err
	}
	cookie := javaio.NewObject(s.l.Classes.Class("java.lang.Long")).Set("value", seq)
	return javaio.NewObject(s.class("org.apache.river.mercury.proxy.RemoteEventData")).
		Set("mi", reggie.MarshalledInstance(s.l.Lineage, b)).Set("cookie", cookie), nil
}

// batch is the next events of iterator it of registration id, as a
// Collection (ArrayList) of RemoteEventData: up to maxBatch, waiting up
// to timeout for the first.
func (s *Mercury) batch(ctx context.Context, id, it string, timeout time.Duration) (*javaio.Object, error) {
	var elems []javaio.Value
	for n := int64(0); n < maxBatch; n++ {
		body, err := s.mailbox.Next(ctx, id, it, timeout)
		if err != nil {
			return nil, err
		}
		if body == nil {
			break
		}
		d, err := s.eventData(body, n)
		if err != nil {
			return nil, err
		}
		elems = append(elems, d)
	}
	return s.arrayList(elems), nil
}

// getRemoteEvents is getRemoteEvents(Uuid): a new iterator (the old ones
// invalid, delivery disabled) and the first of its events.
func (s *Mercury) getRemoteEvents(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	it, err := s.mailbox.Iterator(id)
	if err != nil {
		return k.fail(err)
	}
	events, err := s.batch(k.ctx, id, it, 0)
	if err != nil {
		return k.fail(err)
	}
	u, err := s.l.IDUuid(it)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(javaio.NewObject(s.class("org.apache.river.mercury.proxy.RemoteEventIteratorData")).
		Set("uuid", u).Set("events", events))
}

// maxWait bounds how long one getNextBatch waits: a client asking for
// longer asks again.
const maxWait = 10 * time.Minute

// getNextBatch is getNextBatch(Uuid registration, Uuid iterator, long
// timeout, Object lastCookie): the next events, the one returned before
// acknowledged.
func (s *Mercury) getNextBatch(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	it, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	ms, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	if ms < 0 {
		return illegal("timeout %d: must not be negative", ms)
	}
	events, err := s.batch(k.ctx, id, it, min(time.Duration(ms)*time.Millisecond, maxWait))
	if err != nil {
		var f *fault.Error
		if errors.As(err, &f) && f.Code == apitypes.InvalidIterator {
			return jeri.Throw(s.l.Exception(s.class("net.jini.event.InvalidIteratorException"), f.Message))
		}
		return k.fail(err)
	}
	return returnObject(events)
}

// enableDelivery is enableDelivery(Uuid, RemoteEventListener).
func (s *Mercury) enableDelivery(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	target, err := k.listener()
	if err != nil && !errors.Is(err, errNullListener) {
		return argError(err)
	}
	// EM.4: a null target has the same effect as disableDelivery.
	if u, err := url.Parse(target); err == nil && s.Owns(u) {
		return illegal("the target is a listener of this event mailbox: events would loop")
	}
	if err := s.mailbox.EnableDelivery(k.ctx, id, target); err != nil {
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// addUnknownEvents is addUnknownEvents(Uuid, Collection<RemoteEvent>):
// kinds of event (source and event ID) the client wants no more of.
func (s *Mercury) addUnknownEvents(k *call) jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	var keys []mailbox.Key
	for _, ev := range remoteEvents(v) {
		key, err := s.key(ev)
		if err != nil {
			return argError(err)
		}
		keys = append(keys, key)
	}
	if err := s.mailbox.AddUnknownEvents(id, keys); err != nil {
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// maxUnknown bounds the events one addUnknownEvents names.
const maxUnknown = 1000

// remoteEvents are the RemoteEvents a serialized collection holds
// (ArrayList, HashSet, Collections.singleton, an unmodifiable wrapper,
// ...): found in its fields, custom data and arrays, however the
// collection class keeps them, at most maxUnknown, without looking
// inside the events themselves.
func remoteEvents(v javaio.Value) []*javaio.Object {
	var out []*javaio.Object
	seen := map[any]bool{}
	var walk func(v javaio.Value, depth int)
	walk = func(v javaio.Value, depth int) {
		if depth > 8 || len(out) >= maxUnknown {
			return
		}
		switch x := v.(type) {
		case *javaio.Object:
			if seen[x] {
				return
			}
			seen[x] = true
			if x.Class.IsA("net.jini.core.event.RemoteEvent") {
				out = append(out, x)
				return
			}
			for _, d := range x.Data {
				for _, f := range d.Fields {
					walk(f, depth+1)
				}
				for _, c := range d.Custom {
					walk(c, depth+1)
				}
			}
		case *javaio.Array:
			if seen[x] {
				return
			}
			seen[x] = true
			for _, e := range x.Elems {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}

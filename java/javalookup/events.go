package javalookup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/outbound"
)

// Transition bits of ServiceRegistrar.notify.
var transitionBits = []struct {
	bit  int32
	name string
}{{1, lookup.MatchNoMatch}, {2, lookup.NoMatchMatch}, {4, lookup.MatchMatch}}

// listenerEndpoint reads where a Java listener proxy is.
func listenerEndpoint(v javaio.Value) (host string, port int, id jeri.Uuid, err error) {
	return reggie.RemoteEndpoint(v, "listener")
}

// listenerURL names a Java listener for the event engine; via is the
// host the client reached jinid on, for the event's source proxy.
func listenerURL(host string, port int, id jeri.Uuid, via string) string {
	return "jeri://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/" + id.String() + "?via=" + url.QueryEscape(via)
}

// ListenerURL names the Java RemoteEventListener proxy v for the event
// engine (jeri://host:port/uuid); via is the host the client reached
// jinid on, for the sources of the events it gets.
//
// A mailbox's listener (Mercury's ListenerProxy, which Java calls as a
// RemoteEventListener but which calls its mailbox's notify(registration,
// event)) is its server's endpoint with the registration:
// jeri://host:port/uuid?via=...&mailbox=REGISTRATION.
func ListenerURL(v javaio.Value, via string) (string, error) {
	if o, ok := v.(*javaio.Object); ok && o.Class.IsA(mailboxListener) {
		host, port, id, err := reggie.RemoteEndpoint(reggie.Field(o, "server"), "mailbox listener's server")
		if err != nil {
			return "", err
		}
		reg, err := UuidID(reggie.Field(o, "registrationID"))
		if err != nil {
			return "", fmt.Errorf("the mailbox listener's registration: %w", err)
		}
		return listenerURL(host, port, id, via) + "&mailbox=" + reg, nil
	}
	host, port, id, err := listenerEndpoint(v)
	if err != nil {
		return "", err
	}
	return listenerURL(host, port, id, via), nil
}

// mailboxListener is the class of Mercury's mailbox listeners.
const mailboxListener = "org.apache.river.mercury.proxy.ListenerProxy"

// mailboxNotify is the hash of the method a mailbox listener calls:
// MailboxBackEnd.notify(Uuid registrationID, RemoteEvent).
var mailboxNotify = lineage.MethodHash("notify", "(Lnet/jini/id/Uuid;Lnet/jini/core/event/RemoteEvent;)V")

// Handback reads back a handback stored as an object stream (a
// MarshalledObject or MarshalledInstance a client gave) as the two forms
// a RemoteEvent carries; both nil for none.
func (l *Lineage) Handback(stored []byte) (mo, mi *javaio.Object, err error) {
	if stored == nil {
		return nil, nil, nil
	}
	hb, err := javaio.Decode(stored)
	if err != nil {
		return nil, nil, err
	}
	h, ok := hb.(*javaio.Object)
	if !ok {
		return nil, nil, nil
	}
	mo = javaio.NewObject(l.Classes.Class("java.rmi.MarshalledObject"))
	mi = javaio.NewObject(l.Classes.Class("net.jini.io.MarshalledInstance"))
	for _, f := range []string{"hash", "locBytes", "objBytes"} {
		v, _ := h.Get(f)
		mo.Set(f, v)
		mi.Set(f, v)
	}
	return mo, mi, nil
}

// notify is notify and notiFy (the handback as a MarshalledObject or a
// MarshalledInstance).
func (k *call) notify() jeri.Reply {
	t, err := k.template()
	if err != nil {
		return argError(err)
	}
	bits, err := k.c.Args.ReadInt()
	if err != nil {
		return argError(err)
	}
	lv, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	hb, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	listener, err := ListenerURL(lv, k.host)
	if err != nil {
		return argError(err)
	}
	var transitions []string
	for _, tb := range transitionBits {
		if bits&tb.bit != 0 {
			transitions = append(transitions, tb.name)
		}
	}
	var handback []byte
	if hb != nil {
		if handback, err = javaio.Encode(hb, false); err != nil {
			return argError(err)
		}
	}
	reg, err := k.s.cfg.Registrar.Notify(lookup.NotifyRequest{Template: t, Transitions: transitions,
		Listener: listener, Handback: handback, Duration: dur, Owner: k.owner()})
	if err != nil {
		return k.faultReply(err)
	}
	ls, err := k.s.eventLease(k.host, reg.EventID, reg.Lease.ID, reg.Lease.Expiration)
	if err != nil {
		return k.faultReply(err)
	}
	er := javaio.NewObject(k.s.l.Classes.Class("net.jini.core.event.EventRegistration")).
		Set("eventID", reg.EventID).Set("seqNum", reg.SeqNum).Set("lease", ls).
		Set("source", k.s.l.Registrar(Endpoint{Host: k.host, Port: k.s.cfg.Identity.Port, Object: k.s.cfg.Identity.Object}, k.s.cfg.Registrar.Meta().ServiceID, ""))
	return returnObject(er)
}

func (s *Service) eventLease(host string, eventID int64, leaseID string, expiration int64) (*javaio.Object, error) {
	id, err := s.leaseUuid(leaseID)
	if err != nil {
		return nil, err
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(s.remaining(expiration)))
	o := s.l.New("ConstrainableEventLease").Set("serialFormat", int32(1)).Set("leaseID", id).
		Set("server", s.server(host)).Set("eventID", eventID)
	o.SetCustom("org.apache.river.lease.AbstractLease", javaio.Block(d[:]))
	o.SetCustom(s.l.Package+".RegistrarLease", serviceIDBlock(s.cfg.Registrar.Meta().ServiceID))
	return o, nil
}

// eventAndLease reads the (long eventID, Uuid) that name an event
// registration, and checks the lease is its.
func (k *call) eventAndLease() (string, error) {
	eid, err := k.c.Args.ReadLong()
	if err != nil {
		return "", err
	}
	u, err := k.readObject()
	if err != nil {
		return "", err
	}
	id, err := leaseID(u)
	if err != nil {
		return "", err
	}
	return id, k.checkEventLease(eid, id)
}

func (k *call) checkEventLease(eventID int64, id string) error {
	rec, err := k.s.cfg.Registrar.NotifyLease(eventID)
	if err != nil || rec.ID != id {
		return unknownEventLease(eventID)
	}
	return nil
}

// unknownEventLease is the error for an event lease that is not the
// named registration's.
type unknownEventLease int64

func (e unknownEventLease) Error() string {
	return fmt.Sprintf("No event registration recorded for ID: %d", int64(e))
}

func (k *call) renewEventLease() jeri.Reply {
	id, err := k.eventAndLease()
	if err != nil {
		return k.leaseErr(err)
	}
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	rec, err := k.s.cfg.Grantor.Renew(id, dur)
	if err != nil {
		return k.faultReply(err)
	}
	granted := k.s.remaining(rec.Expiration)
	return jeri.Return(func(e *javaio.Encoder) error { e.WriteLong(granted); return nil })
}

func (k *call) cancelEventLease() jeri.Reply {
	id, err := k.eventAndLease()
	if err != nil {
		return k.leaseErr(err)
	}
	if err := k.s.cfg.Grantor.Cancel(id); err != nil {
		return k.faultReply(err)
	}
	return jeri.Return(nil)
}

func (k *call) leaseErr(err error) jeri.Reply {
	var u unknownEventLease
	if errors.As(err, &u) {
		return jeri.Throw(k.s.unknownLease(u.Error()))
	}
	return argError(err)
}

// Transport delivers lookup service events to Java listeners: one Jini
// ERI call of RemoteEventListener.notify per event, on connections kept
// per listener endpoint. It is the event engine's transport for jeri
// listeners, so Java listeners get the ordering, retries and EV rules
// HTTP listeners do.
type Transport struct {
	s    *Service
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	conns  map[string]*idleConn
	makers []EventMaker
	local  func(*url.URL, *javaio.Object) (event.Outcome, error, bool)
	closed bool
}

// EventMaker makes the Java event for a delivery of a service other
// than the lookup service's; ok is false for an event not its own.
type EventMaker func(del event.Delivery, via string) (ev *javaio.Object, ok bool, err error)

// AddEvents has the transport send the events m makes, beside the
// registrar's.
func (t *Transport) AddEvents(m EventMaker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.makers = append(t.makers, m)
}

// javaEvent is the Java event for a delivery: the registrar's, or one a
// maker makes.
func (t *Transport) javaEvent(del event.Delivery, via string) (*javaio.Object, error) {
	if ev, ok := del.Event.(apitypes.ServiceEvent); ok {
		native, _ := del.Native.(lookup.NativeEvent)
		return t.s.javaEvent(ev, native, via)
	}
	t.mu.Lock()
	makers := t.makers
	t.mu.Unlock()
	for _, m := range makers {
		if obj, ok, err := m(del, via); ok {
			return obj, err
		}
	}
	return nil, fmt.Errorf("a %T cannot go to a Java listener", del.Event)
}

type idleConn struct {
	cc   *jeri.ClientConn
	used time.Time
}

// Defaults of the transport.
const (
	// callTimeout bounds one event call: a Java listener answers at once.
	callTimeout = 30 * time.Second
	// idleAfter closes a connection no event used for this long, as Java
	// closes its own after 15 s.
	idleAfter = 15 * time.Second
	// maxConns bounds the connections kept.
	maxConns = 64
)

// NewTransport returns the transport; its connections go through
// dial, the daemon's outbound dialer.
func (s *Service) NewTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Transport {
	return &Transport{s: s, dial: dial, conns: make(map[string]*idleConn)}
}

// Close closes every kept connection.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for k, c := range t.conns {
		c.cc.Close()
		delete(t.conns, k)
	}
	return nil
}

// Attempt delivers one event once.
func (t *Transport) Attempt(ctx context.Context, del event.Delivery) (event.Outcome, error) {
	u, err := url.Parse(del.Listener)
	if err != nil || u.Scheme != "jeri" {
		return event.Definite, fmt.Errorf("listener %q is not a jeri URL", del.Listener)
	}
	obj, err := t.javaEvent(del, u.Query().Get("via"))
	if err != nil {
		return event.Definite, fmt.Errorf("building the Java event: %w", err)
	}
	return t.send(ctx, u, obj)
}

// SetLocal has the events for jeri listeners local says are jinid's own
// objects (a mailbox listener of jinid's event mailbox) handed to it in
// the process: they go to no connection. ok is false for a listener
// that is not local's.
func (t *Transport) SetLocal(local func(listener *url.URL, ev *javaio.Object) (out event.Outcome, err error, ok bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.local = local
}

// Send delivers the Java event ev to the listener (a jeri URL, as
// ListenerURL names it) once, with the EV rules' outcome.
func (t *Transport) Send(ctx context.Context, listener string, ev *javaio.Object) (event.Outcome, error) {
	u, err := url.Parse(listener)
	if err != nil || u.Scheme != "jeri" {
		return event.Definite, fmt.Errorf("listener %q is not a jeri URL", listener)
	}
	return t.send(ctx, u, ev)
}

func (t *Transport) send(ctx context.Context, u *url.URL, ev *javaio.Object) (event.Outcome, error) {
	var id jeri.Uuid
	if err := id.UnmarshalText([]byte(u.Path[min(1, len(u.Path)):])); err != nil {
		return event.Definite, fmt.Errorf("listener %q: %w", u, err)
	}
	t.mu.Lock()
	local := t.local
	t.mu.Unlock()
	if local != nil {
		if out, err, ok := local(u, ev); ok {
			return out, err
		}
	}
	e := javaio.NewEncoder(true)
	if reg := u.Query().Get("mailbox"); reg != "" {
		// A mailbox's listener: its server's notify(registration, event).
		r, err := t.s.l.IDUuid(reg)
		if err != nil {
			return event.Definite, fmt.Errorf("listener %q: %w", u, err)
		}
		e.WriteLong(mailboxNotify)
		if err := e.WriteObject(r); err != nil {
			return event.Definite, err
		}
	} else {
		e.WriteLong(t.s.l.Listener())
	}
	if err := e.WriteObject(ev); err != nil {
		return event.Definite, fmt.Errorf("encoding the Java event: %w", err)
	}
	req := append(append(id[:], 0, 0), e.Bytes()...)

	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cc, err := t.conn(ctx, u.Host)
	if err != nil {
		if errors.Is(err, outbound.ErrForbidden) {
			return event.Definite, err
		}
		return event.Indefinite, err
	}
	reply, err := cc.Call(ctx, req)
	t.release(u.Host, cc)
	if err != nil {
		return event.Indefinite, err
	}
	return t.s.outcome(reply)
}

// outcome classifies a listener's reply by the EV rules: UnknownEvent
// cancels, a RemoteException may mend on retry, anything else is a bad
// object.
func (s *Service) outcome(reply []byte) (event.Outcome, error) {
	if len(reply) == 1 && reply[0] == 0 {
		return event.Definite, errors.New("the listener object is not exported any more (NoSuchObject)")
	}
	if len(reply) < 2 || reply[0] != 1 {
		return event.Definite, fmt.Errorf("reply %x is not a Jini ERI reply", reply[:min(len(reply), 8)])
	}
	switch reply[1] {
	case 1:
		return event.Delivered, nil
	case 2:
		v, err := javaio.Decode(reply[2:])
		if err != nil {
			return event.Definite, fmt.Errorf("the listener threw something unreadable: %w", err)
		}
		exc, _ := v.(*javaio.Object)
		if exc == nil {
			return event.Definite, errors.New("the listener threw a non-object")
		}
		msg, _ := exc.Get("detailMessage")
		err = fmt.Errorf("the listener threw %s: %v", exc.Class, msg)
		switch {
		case exc.Class.IsA("net.jini.core.event.UnknownEventException"):
			return event.UnknownEvent, err
		case exc.Class.IsA("java.rmi.RemoteException"):
			return event.Indefinite, err
		}
		return event.Definite, err
	}
	return event.Definite, fmt.Errorf("the listener answered with marshalling version %d", reply[1])
}

func (t *Transport) conn(ctx context.Context, hostport string) (*jeri.ClientConn, error) {
	t.mu.Lock()
	now := time.Now()
	for k, c := range t.conns {
		if now.Sub(c.used) > idleAfter {
			c.cc.Close()
			delete(t.conns, k)
		}
	}
	if c, ok := t.conns[hostport]; ok {
		delete(t.conns, hostport) // in use; put back by release
		t.mu.Unlock()
		return c.cc, nil
	}
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	c, err := t.dial(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	cc, err := jeri.NewClientConn(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return cc, nil
}

func (t *Transport) release(hostport string, cc *jeri.ClientConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cc.Broken() || t.closed || len(t.conns) >= maxConns {
		cc.Close()
		return
	}
	if old, ok := t.conns[hostport]; ok {
		old.cc.Close()
	}
	t.conns[hostport] = &idleConn{cc: cc, used: time.Now()}
}

// javaEvent is the RegistrarEvent Reggie sends for ev.
func (s *Service) javaEvent(ev apitypes.ServiceEvent, native lookup.NativeEvent, via string) (*javaio.Object, error) {
	o := s.l.New("ConstrainableRegistrarEvent").Set("eventID", ev.EventID).Set("seqNum", ev.SeqNum).
		Set("source", s.l.Registrar(Endpoint{Host: via, Port: s.cfg.Identity.Port, Object: s.cfg.Identity.Object}, s.cfg.Registrar.Meta().ServiceID, ""))
	mo, mi, err := s.l.Handback(native.Handback)
	if err != nil {
		return nil, err
	}
	if mo != nil {
		o.Set("handback", mo).Set("miHandback", mi)
	}
	for _, tb := range transitionBits {
		if tb.name == ev.Transition {
			o.Set("transition", tb.bit)
		}
	}
	if native.Item != nil {
		items, err := s.forHost([]lookup.Item{*native.Item}, via)
		if err != nil {
			return nil, err
		}
		it, err := s.itemTo(items[0])
		if err != nil {
			return nil, err
		}
		o.Set("serviceItem", it)
	}
	sid, err := discovery.ParseServiceID(ev.ServiceID)
	if err != nil {
		return nil, err
	}
	o.SetCustom(s.l.Package+".RegistrarEvent", serviceIDBlock(sid))
	return o, nil
}

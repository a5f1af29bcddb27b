package javahelpers

import (
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/renewal"
)

// Events makes the Java events of renewal sets for listeners Java
// registered: Norm's ExpirationWarningEvent and BasicRenewalFailureEvent,
// their source the set's proxy. It is a javalookup.EventMaker.
func (s *Norm) Events(del event.Delivery, via string) (*javaio.Object, bool, error) {
	switch ev := del.Event.(type) {
	case apitypes.ExpirationWarningEvent:
		o, err := s.warning(ev, via)
		return o, true, err
	case apitypes.RenewalFailureEvent:
		lb, _ := del.Native.(renewal.JavaLease)
		o, err := s.failure(ev, lb, via)
		return o, true, err
	}
	return nil, false, nil
}

// remoteEvent fills the RemoteEvent part of a set's event.
func (s *Norm) remoteEvent(o *javaio.Object, ev apitypes.RemoteEvent, src *javaio.Object) (*javaio.Object, error) {
	o.Set("eventID", ev.EventID).Set("seqNum", ev.SeqNum).Set("source", src)
	mo, mi, err := s.l.Handback(ev.Handback)
	if err != nil {
		return nil, err
	}
	if mo != nil {
		o.Set("handback", mo).Set("miHandback", mi)
	}
	return o, nil
}

func (s *Norm) warning(ev apitypes.ExpirationWarningEvent, via string) (*javaio.Object, error) {
	src, err := s.setProxy(via, ev.Source.ID, ev.Lease, ev.Expiration)
	if err != nil {
		return nil, err
	}
	return s.remoteEvent(javaio.NewObject(s.class("net.jini.lease.ExpirationWarningEvent")), ev.RemoteEvent, src)
}

func (s *Norm) failure(ev apitypes.RenewalFailureEvent, kept renewal.JavaLease, via string) (*javaio.Object, error) {
	src, err := s.setOf(via, ev.Source.ID)
	if err != nil {
		// The set ended while the event was on its way (its delivery
		// stops with the set's lease): the set's proxy with a lease that
		// has ended, under no cookie jinid knows.
		const ended = "00000000000000000000000000000000"
		if src, err = s.setProxy(via, ev.Source.ID, ended, 0); err != nil {
			return nil, err
		}
	}
	o, err := s.remoteEvent(javaio.NewObject(s.class("org.apache.river.lease.BasicRenewalFailureEvent")), ev.RemoteEvent, src)
	if err != nil {
		return nil, err
	}
	if kept != nil {
		b, err := s.leaseBytes(kept, ev.Lease.Expiration)
		if err != nil {
			return nil, err
		}
		o.Set("marshalledLease", reggie.MarshalledInstance(s.l.Lineage, b))
	}
	if exc := s.throwable(ev.Error, kept == nil); exc != nil {
		b, err := javaio.Encode(exc, false)
		if err != nil {
			return nil, err
		}
		o.Set("marshalledThrowable", reggie.MarshalledInstance(s.l.Lineage, b))
	}
	return o, nil
}

// throwable is the exception a failure event carries for why a lease
// left its set (LR.2: the one the last renewal attempt ended with; none
// when it simply expired). A lease handed in over HTTP has no Java
// object: the event then says so by its throwable.
func (s *Norm) throwable(e *apitypes.Error, noLease bool) *javaio.Object {
	if e == nil {
		if !noLease {
			return nil
		}
		return s.l.Exception(s.l.Classes.Class("java.rmi.RemoteException"), "the lease was handed in over jinid's HTTP API; see the set there")
	}
	switch e.Code {
	case apitypes.UnknownLease:
		return s.l.Exception(s.l.Classes.Class("net.jini.core.lease.UnknownLeaseException"), e.Message)
	case apitypes.LeaseDenied:
		return s.l.Exception(s.class("net.jini.core.lease.LeaseDeniedException"), e.Message)
	case apitypes.NoSuchObject:
		return s.l.Exception(s.l.Classes.Class("java.rmi.NoSuchObjectException"), e.Message)
	}
	return s.l.Exception(s.l.Classes.Class("java.rmi.RemoteException"), e.Message)
}

package javahelpers

import (
	"errors"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/renewal"
)

// Serial formats of a lease's expiration (net.jini.core.lease.Lease).
const (
	durationFormat = 1 // DURATION: the time left, relative to the reader's clock
	absoluteFormat = 2 // ABSOLUTE: milliseconds since the epoch
)

// setLease is a set's lease as Norm hands it out: a landlord lease
// whose landlord is Norm's server.
func (s *Norm) setLease(host, leaseID string, expiration int64) (*javaio.Object, error) {
	return s.landlordLease(s.server(host), s.object, leaseID, expiration)
}

// setProxy is a set as Norm hands it out: a ConstrainableSetProxy
// holding its lease.
func (s *Norm) setProxy(host, setID, leaseID string, expiration int64) (*javaio.Object, error) {
	id, err := s.l.IDUuid(setID)
	if err != nil {
		return nil, err
	}
	ls, err := s.setLease(host, leaseID, expiration)
	if err != nil {
		return nil, err
	}
	return javaio.NewObject(s.class("org.apache.river.norm.proxy.SetProxy$ConstrainableSetProxy")).
		Set("server", s.server(host)).Set("uuid", id).Set("ourLease", ls), nil
}

// setOf is a set's proxy by its ID, with its lease as it is now.
func (s *Norm) setOf(host, setID string) (*javaio.Object, error) {
	info, err := s.renewal.Get(setID)
	if err != nil {
		return nil, err
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		return nil, err
	}
	return s.setProxy(host, setID, info.Lease, rec.Expiration)
}

// setID reads the Uuid that names a set.
func (s *Norm) setID(k *call) (string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return "", err
	}
	return javalookup.UuidID(v)
}

// createSet is createLeaseRenewalSet(long).
func (s *Norm) createSet(k *call) jeri.Reply {
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	made, err := s.renewal.Create(dur, k.owner())
	if err != nil {
		return k.fail(err)
	}
	p, err := s.setProxy(k.host, made.ID, made.Lease.ID, made.Lease.Expiration)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(p)
}

// renewFor is renewFor(Uuid, Lease, long membershipDuration, long
// renewDuration); SetProxy's two-argument form sends FOREVER.
func (s *Norm) renewFor(k *call) jeri.Reply {
	setID, err := s.setID(k)
	if err != nil {
		return argError(err)
	}
	lv, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	membership, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	renew, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	if lv == nil {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", "leaseToRenew cannot be null"))
	}
	cl, err := s.readLease(k.ctx, lv)
	if err != nil {
		return k.fail(err)
	}
	if err := s.renewal.RenewFor(setID, cl, membership, renew); err != nil {
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// remove is remove(Uuid, Lease): the lease, out of the set, or null.
func (s *Norm) remove(k *call) jeri.Reply {
	setID, err := s.setID(k)
	if err != nil {
		return argError(err)
	}
	lv, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	if lv == nil {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", "leaseToRemove cannot be null"))
	}
	cl, err := s.readLease(k.ctx, lv)
	if errors.Is(err, errNotRenewable) {
		// Never put in a set, so not in this one; the set must still
		// be there.
		if _, err := s.renewal.Get(setID); err != nil {
			return k.fail(err)
		}
		return returnObject(nil)
	}
	if err != nil {
		return k.fail(err)
	}
	out, err := s.renewal.Remove(setID, cl.Grantor+"|"+cl.ID)
	if err != nil {
		return k.fail(err)
	}
	if out == nil || out.Java == nil {
		return returnObject(nil)
	}
	obj, err := s.javaLease(out.Java, out.Expiration)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(obj)
}

// getLeases is getLeases(Uuid): the leases Java handed in, each with
// its last recorded expiration, marshalled one by one (GetLeasesResult)
// so that a client that cannot read one still gets the others.
func (s *Norm) getLeases(k *call) jeri.Reply {
	setID, err := s.setID(k)
	if err != nil {
		return argError(err)
	}
	ms, err := s.renewal.Leases(setID)
	if err != nil {
		return k.fail(err)
	}
	arr := &javaio.Array{Class: s.class("[Lnet.jini.io.MarshalledInstance;")}
	for _, m := range ms {
		if m.Java == nil {
			// Handed in over HTTP: no Java object to give back.
			continue
		}
		b, err := s.leaseBytes(m.Java, m.Expiration)
		if err != nil {
			return k.fail(err)
		}
		arr.Elems = append(arr.Elems, reggie.MarshalledInstance(s.l.Lineage, b))
	}
	return returnObject(javaio.NewObject(s.class("org.apache.river.norm.proxy.GetLeasesResult")).Set("marshalledLeases", arr))
}

// setWarningListener is setExpirationWarningListener(Uuid,
// RemoteEventListener, long minWarning, MarshalledObject).
func (s *Norm) setWarningListener(k *call) jeri.Reply { return s.setListener(k, true) }

// setFailureListener is setRenewalFailureListener(Uuid,
// RemoteEventListener, MarshalledObject).
func (s *Norm) setFailureListener(k *call) jeri.Reply { return s.setListener(k, false) }

// setListener registers a set's warning listener (warning) or its
// failure listener; with no listener it clears that registration
// (clearExpirationWarningListener and clearRenewalFailureListener send
// none: SetProxy refuses a null one itself).
func (s *Norm) setListener(k *call, warning bool) jeri.Reply {
	setID, err := s.setID(k)
	if err != nil {
		return argError(err)
	}
	url, err := k.listener()
	clear := errors.Is(err, errNullListener)
	if err != nil && !clear {
		return argError(err)
	}
	var minWarning int64
	if warning {
		if minWarning, err = k.c.Args.ReadLong(); err != nil {
			return argError(err)
		}
	}
	hb, err := k.handback()
	if err != nil {
		return argError(err)
	}
	var reg renewal.Registration
	switch {
	case clear && warning:
		err = s.renewal.ClearWarningListener(setID)
	case clear:
		err = s.renewal.ClearFailureListener(setID)
	case warning:
		reg, err = s.renewal.SetWarningListener(k.ctx, setID, url, minWarning, hb)
	default:
		reg, err = s.renewal.SetFailureListener(k.ctx, setID, url, hb)
	}
	switch {
	case err != nil:
		return k.fail(err)
	case clear:
		return returnObject(nil)
	}
	return s.registration(k, setID, reg)
}

// registration is the EventRegistration of a set's listener: the set
// its source, the set's lease its lease (LR.3).
func (s *Norm) registration(k *call, setID string, reg renewal.Registration) jeri.Reply {
	src, err := s.setOf(k.host, setID)
	if err != nil {
		return k.fail(err)
	}
	ls, _ := src.Get("ourLease")
	er := javaio.NewObject(s.l.Classes.Class("net.jini.core.event.EventRegistration")).
		Set("eventID", reg.EventID).Set("seqNum", reg.SeqNum).Set("lease", ls).Set("source", src)
	return returnObject(er)
}

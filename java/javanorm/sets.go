package javanorm

import (
	"encoding/binary"
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

// remaining is what a lease object carries for an expiration: the time
// left, from now.
func (s *Service) remaining(expiration int64) int64 {
	return max(expiration-s.cfg.Grantor.Now().UnixMilli(), 0)
}

// setLease is a set's lease as Norm hands it out: a
// ConstrainableLandlordLease whose landlord is Norm's server.
func (s *Service) setLease(host, leaseID string, expiration int64) (*javaio.Object, error) {
	cookie, err := s.l.IDUuid(leaseID)
	if err != nil {
		return nil, err
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(s.remaining(expiration)))
	o := javaio.NewObject(s.class("org.apache.river.landlord.ConstrainableLandlordLease")).
		Set("serialFormat", int32(durationFormat)).Set("cookie", cookie).
		Set("landlord", s.server(host)).Set("landlordUuid", s.l.Uuid(s.cfg.Object))
	return o.SetCustom("org.apache.river.lease.AbstractLease", javaio.Block(d[:])), nil
}

// setProxy is a set as Norm hands it out: a ConstrainableSetProxy
// holding its lease.
func (s *Service) setProxy(host, setID, leaseID string, expiration int64) (*javaio.Object, error) {
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
func (s *Service) setOf(host, setID string) (*javaio.Object, error) {
	info, err := s.cfg.Renewal.Get(setID)
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
func (k *call) setID() (string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return "", err
	}
	return javalookup.UuidID(v)
}

// createSet is createLeaseRenewalSet(long).
func (k *call) createSet() jeri.Reply {
	dur, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	made, err := k.s.cfg.Renewal.Create(dur, k.owner())
	if err != nil {
		return k.fail(err)
	}
	p, err := k.s.setProxy(k.host, made.ID, made.Lease.ID, made.Lease.Expiration)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(p)
}

// renewFor is renewFor(Uuid, Lease, long membershipDuration, long
// renewDuration); SetProxy's two-argument form sends FOREVER.
func (k *call) renewFor() jeri.Reply {
	setID, err := k.setID()
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
	cl, err := k.s.readLease(k.ctx, lv)
	if err != nil {
		return k.fail(err)
	}
	if err := k.s.cfg.Renewal.RenewFor(setID, cl, membership, renew); err != nil {
		return k.fail(err)
	}
	return jeri.Return(nil)
}

// remove is remove(Uuid, Lease): the lease, out of the set, or null.
func (k *call) remove() jeri.Reply {
	setID, err := k.setID()
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
	cl, err := k.s.readLease(k.ctx, lv)
	if errors.Is(err, errNotRenewable) {
		// Never put in a set, so not in this one; the set must still
		// be there.
		if _, err := k.s.cfg.Renewal.Get(setID); err != nil {
			return k.fail(err)
		}
		return returnObject(nil)
	}
	if err != nil {
		return k.fail(err)
	}
	out, err := k.s.cfg.Renewal.Remove(setID, cl.Grantor+"|"+cl.ID)
	if err != nil {
		return k.fail(err)
	}
	if out == nil || out.Java == nil {
		return returnObject(nil)
	}
	obj, err := k.s.javaLease(out.Java, out.Expiration)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(obj)
}

// getLeases is getLeases(Uuid): the leases Java handed in, each with
// its last recorded expiration, marshalled one by one (GetLeasesResult)
// so that a client that cannot read one still gets the others.
func (k *call) getLeases() jeri.Reply {
	setID, err := k.setID()
	if err != nil {
		return argError(err)
	}
	ms, err := k.s.cfg.Renewal.Leases(setID)
	if err != nil {
		return k.fail(err)
	}
	arr := &javaio.Array{Class: k.s.class("[Lnet.jini.io.MarshalledInstance;")}
	for _, m := range ms {
		if m.Java == nil {
			// Handed in over HTTP: no Java object to give back.
			continue
		}
		b, err := k.s.leaseBytes(m.Java, m.Expiration)
		if err != nil {
			return k.fail(err)
		}
		arr.Elems = append(arr.Elems, reggie.MarshalledInstance(k.s.l.Lineage, b))
	}
	return returnObject(javaio.NewObject(k.s.class("org.apache.river.norm.proxy.GetLeasesResult")).Set("marshalledLeases", arr))
}

// listener reads a listener and handback argument pair's listener.
func (k *call) listener() (string, error) {
	lv, err := k.c.Args.ReadObject()
	if err != nil {
		return "", err
	}
	if lv == nil {
		return "", errNullListener
	}
	return javalookup.ListenerURL(lv, k.host)
}

var errNullListener = errors.New("listener cannot be null")

// handback reads a MarshalledObject handback as it is kept.
func (k *call) handback() ([]byte, error) {
	hb, err := k.c.Args.ReadObject()
	if err != nil || hb == nil {
		return nil, err
	}
	return javaio.Encode(hb, false)
}

// setWarningListener is setExpirationWarningListener(Uuid,
// RemoteEventListener, long minWarning, MarshalledObject).
func (k *call) setWarningListener() jeri.Reply {
	setID, err := k.setID()
	if err != nil {
		return argError(err)
	}
	url, err := k.listener()
	if errors.Is(err, errNullListener) {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", err.Error()))
	}
	if err != nil {
		return argError(err)
	}
	minWarning, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	hb, err := k.handback()
	if err != nil {
		return argError(err)
	}
	reg, err := k.s.cfg.Renewal.SetWarningListener(k.ctx, setID, url, minWarning, hb)
	if err != nil {
		return k.fail(err)
	}
	return k.registration(setID, reg)
}

// setFailureListener is setRenewalFailureListener(Uuid,
// RemoteEventListener, MarshalledObject).
func (k *call) setFailureListener() jeri.Reply {
	setID, err := k.setID()
	if err != nil {
		return argError(err)
	}
	url, err := k.listener()
	if errors.Is(err, errNullListener) {
		return jeri.Throw(jeri.NewException("java.lang.NullPointerException", err.Error()))
	}
	if err != nil {
		return argError(err)
	}
	hb, err := k.handback()
	if err != nil {
		return argError(err)
	}
	reg, err := k.s.cfg.Renewal.SetFailureListener(k.ctx, setID, url, hb)
	if err != nil {
		return k.fail(err)
	}
	return k.registration(setID, reg)
}

// registration is the EventRegistration of a set's listener: the set
// its source, the set's lease its lease (LR.3).
func (k *call) registration(setID string, reg renewal.Registration) jeri.Reply {
	src, err := k.s.setOf(k.host, setID)
	if err != nil {
		return k.fail(err)
	}
	ls, _ := src.Get("ourLease")
	er := javaio.NewObject(k.s.l.Classes.Class("net.jini.core.event.EventRegistration")).
		Set("eventID", reg.EventID).Set("seqNum", reg.SeqNum).Set("lease", ls).Set("source", src)
	return returnObject(er)
}

// --- the sets' leases, as a Landlord ---------------------------------------

// setLeaseID reads a cookie: the ID of a set's lease, which must be one.
func (k *call) setLeaseID() (string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return "", err
	}
	return javalookup.UuidID(v)
}

// isSetLease tells whether id is a renewal set's lease.
func (s *Service) isSetLease(id string) bool {
	rec, err := s.cfg.Grantor.Get(id)
	return err == nil && rec.Kind == renewal.SetLease
}

// renewOne renews a set's lease: the duration granted.
func (s *Service) renewOne(id string, d int64) (int64, error) {
	if !s.isSetLease(id) {
		return 0, errUnknownSetLease
	}
	rec, err := s.cfg.Grantor.Renew(id, d)
	if err != nil {
		return 0, err
	}
	return s.remaining(rec.Expiration), nil
}

var errUnknownSetLease = errors.New("no such renewal set lease")

// leaseException is the exception a landlord call answers for err.
func (k *call) leaseException(id string, err error) *javaio.Object {
	r := k.fail(err)
	if errors.Is(err, errUnknownSetLease) {
		return k.unknownLease(id)
	}
	exc, derr := javaio.Decode(r[1:])
	if o, ok := exc.(*javaio.Object); ok && derr == nil {
		return o
	}
	return k.unknownLease(id)
}

// renew is Landlord.renew(Uuid, long): the duration granted.
func (k *call) renew() jeri.Reply {
	id, err := k.setLeaseID()
	if err != nil {
		return argError(err)
	}
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	granted, err := k.s.renewOne(id, d)
	if err != nil {
		return jeri.Throw(k.leaseException(id, err))
	}
	return returnLong(granted)
}

// cancel is Landlord.cancel(Uuid): the set ends, its leases let go.
func (k *call) cancel() jeri.Reply {
	id, err := k.setLeaseID()
	if err != nil {
		return argError(err)
	}
	if !k.s.isSetLease(id) {
		return jeri.Throw(k.unknownLease(id))
	}
	if err := k.s.cfg.Grantor.Cancel(id); err != nil {
		return jeri.Throw(k.leaseException(id, err))
	}
	return jeri.Return(nil)
}

// uuids reads a Uuid[] argument as IDs.
func (k *call) uuids() ([]string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return nil, err
	}
	elems, err := reggie.Elems(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if out[i], err = javalookup.UuidID(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renewAll is Landlord.renewAll(Uuid[], long[]): RenewResults, -1 and
// an exception (in order) for each lease not renewed.
func (k *call) renewAll() jeri.Reply {
	ids, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	dv, err := k.c.Args.ReadObject()
	if err != nil {
		return argError(err)
	}
	durs, ok := dv.(*javaio.Array)
	if !ok || durs.Len() != len(ids) {
		return argError(errors.New("renewAll wants as many durations as leases"))
	}
	granted := make([]int64, len(ids))
	var denied []javaio.Value
	for i, id := range ids {
		d := int64(binary.BigEndian.Uint64(durs.Prim[8*i:]))
		g, err := k.s.renewOne(id, d)
		if err != nil {
			granted[i] = -1
			denied = append(denied, k.leaseException(id, err))
			continue
		}
		granted[i] = g
	}
	prim := make([]byte, 8*len(granted))
	for i, g := range granted {
		binary.BigEndian.PutUint64(prim[8*i:], uint64(g))
	}
	rr := javaio.NewObject(k.s.class("org.apache.river.landlord.Landlord$RenewResults")).
		Set("granted", &javaio.Array{Class: k.s.l.Classes.Class("[J"), Prim: prim})
	if denied != nil {
		rr.Set("denied", &javaio.Array{Class: k.s.l.Classes.Class("[Ljava.lang.Exception;"), Elems: denied})
	}
	return returnObject(rr)
}

// cancelAll is Landlord.cancelAll(Uuid[]): null when every lease was
// cancelled, else a map from each Uuid not cancelled to why.
func (k *call) cancelAll() jeri.Reply {
	ids, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	var pairs []javaio.Value
	for _, id := range ids {
		var exc *javaio.Object
		if !k.s.isSetLease(id) {
			exc = k.unknownLease(id)
		} else if err := k.s.cfg.Grantor.Cancel(id); err != nil {
			exc = k.leaseException(id, err)
		}
		if exc != nil {
			u, _ := k.s.l.IDUuid(id)
			pairs = append(pairs, u, exc)
		}
	}
	if pairs == nil {
		return returnObject(nil)
	}
	// HashMap's serial form: capacity and size, then key and value
	// pairs.
	var head [8]byte
	n := len(pairs) / 2
	binary.BigEndian.PutUint32(head[:4], uint32(max(16, 2*n)))
	binary.BigEndian.PutUint32(head[4:], uint32(n))
	m := javaio.NewObject(k.s.class("java.util.HashMap")).Set("loadFactor", float32(0.75)).Set("threshold", int32(12))
	return returnObject(m.SetCustom("java.util.HashMap", append([]javaio.Value{javaio.Block(head[:])}, pairs...)...))
}

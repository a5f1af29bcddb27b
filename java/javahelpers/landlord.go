package javahelpers

import (
	"encoding/binary"
	"errors"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
)

// remaining is what a lease object carries for an expiration: the time
// left, from now.
func (f *face) remaining(expiration int64) int64 {
	return max(expiration-f.cfg.Grantor.Now().UnixMilli(), 0)
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

// required reads a listener argument that may not be null (what names
// it in the NullPointerException); a reply is the exception to answer.
func (k *call) required(what string) (string, jeri.Reply) {
	url, err := k.listener()
	switch {
	case errors.Is(err, errNullListener):
		return "", jeri.Throw(jeri.NewException("java.lang.NullPointerException", what+" cannot be null"))
	case err != nil:
		return "", argError(err)
	}
	return url, nil
}

// handback reads a MarshalledObject handback as it is kept.
func (k *call) handback() ([]byte, error) {
	hb, err := k.c.Args.ReadObject()
	if err != nil || hb == nil {
		return nil, err
	}
	return javaio.Encode(hb, false)
}

// --- a service's leases, as a Landlord -------------------------------------

// uuidArg reads a Uuid argument as one of jinid's IDs (a set's, a
// registration's, a lease's cookie).
func (k *call) uuidArg() (string, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return "", err
	}
	return javalookup.UuidID(v)
}

// isLease tells whether id is a lease this landlord granted: of its
// kind.
func (k *call) isLease(id string) bool {
	rec, err := k.f.cfg.Grantor.Get(id)
	return err == nil && rec.Kind == k.kind
}

// renewOne renews a lease of the landlord's: the duration granted.
func (k *call) renewOne(id string, d int64) (int64, error) {
	if !k.isLease(id) {
		return 0, errUnknownLease
	}
	rec, err := k.f.cfg.Grantor.Renew(id, d)
	if err != nil {
		return 0, err
	}
	return k.f.remaining(rec.Expiration), nil
}

var errUnknownLease = errors.New("no such lease of this landlord")

// leaseException is the exception a landlord call answers for err.
func (k *call) leaseException(id string, err error) *javaio.Object {
	r := k.fail(err)
	if errors.Is(err, errUnknownLease) {
		return k.unknownLease(id)
	}
	exc, derr := javaio.Decode(r[1:])
	if o, ok := exc.(*javaio.Object); ok && derr == nil {
		return o
	}
	return k.unknownLease(id)
}

// landlord serves the Landlord methods of the service's leases (renew,
// cancel, renewAll, cancelAll); ok is false for any other method.
func (k *call) landlord(key string) (r jeri.Reply, ok bool) {
	switch key {
	case "renew/2":
		return k.renew(), true
	case "cancel/1":
		return k.cancel(), true
	case "renewAll/2":
		return k.renewAll(), true
	case "cancelAll/1":
		return k.cancelAll(), true
	}
	return nil, false
}

// renew is Landlord.renew(Uuid, long): the duration granted.
func (k *call) renew() jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	granted, err := k.renewOne(id, d)
	if err != nil {
		return jeri.Throw(k.leaseException(id, err))
	}
	return returnLong(granted)
}

// cancel is Landlord.cancel(Uuid): the set ends, its leases let go.
func (k *call) cancel() jeri.Reply {
	id, err := k.uuidArg()
	if err != nil {
		return argError(err)
	}
	if !k.isLease(id) {
		return jeri.Throw(k.unknownLease(id))
	}
	if err := k.f.cfg.Grantor.Cancel(id); err != nil {
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

// longs reads a long[] argument of n elements.
func (k *call) longs(n int) ([]int64, error) {
	v, err := k.c.Args.ReadObject()
	if err != nil {
		return nil, err
	}
	a, ok := v.(*javaio.Array)
	if !ok || a.Len() != n || len(a.Prim) != 8*n {
		return nil, errors.New("want as many durations as leases")
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(a.Prim[8*i:]))
	}
	return out, nil
}

// longArray is a long[].
func (f *face) longArray(v []int64) *javaio.Array {
	prim := make([]byte, 8*len(v))
	for i, x := range v {
		binary.BigEndian.PutUint64(prim[8*i:], uint64(x))
	}
	return &javaio.Array{Class: f.l.Classes.Class("[J"), Prim: prim}
}

// hashMap is a java.util.HashMap of key and value pairs: its serial
// form, capacity and size, then the pairs.
func (f *face) hashMap(pairs []javaio.Value) *javaio.Object {
	var head [8]byte
	n := len(pairs) / 2
	binary.BigEndian.PutUint32(head[:4], uint32(max(16, 2*n)))
	binary.BigEndian.PutUint32(head[4:], uint32(n))
	m := javaio.NewObject(f.class("java.util.HashMap")).Set("loadFactor", float32(0.75)).Set("threshold", int32(12))
	return m.SetCustom("java.util.HashMap", append([]javaio.Value{javaio.Block(head[:])}, pairs...)...)
}

// arrayList is a java.util.ArrayList of elems: its serial form, the
// size, then the elements.
func (f *face) arrayList(elems []javaio.Value) *javaio.Object {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(elems)))
	return javaio.NewObject(f.l.Classes.Class("java.util.ArrayList")).Set("size", int32(len(elems))).
		SetCustom("java.util.ArrayList", append([]javaio.Value{javaio.Block(n[:])}, elems...)...)
}

// renewAll is Landlord.renewAll(Uuid[], long[]): RenewResults, -1 and
// an exception (in order) for each lease not renewed.
func (k *call) renewAll() jeri.Reply {
	ids, err := k.uuids()
	if err != nil {
		return argError(err)
	}
	durs, err := k.longs(len(ids))
	if err != nil {
		return argError(err)
	}
	granted := make([]int64, len(ids))
	var denied []javaio.Value
	for i, id := range ids {
		g, err := k.renewOne(id, durs[i])
		if err != nil {
			granted[i] = -1
			denied = append(denied, k.leaseException(id, err))
			continue
		}
		granted[i] = g
	}
	rr := javaio.NewObject(k.f.class("org.apache.river.landlord.Landlord$RenewResults")).Set("granted", k.f.longArray(granted))
	if denied != nil {
		rr.Set("denied", &javaio.Array{Class: k.f.l.Classes.Class("[Ljava.lang.Exception;"), Elems: denied})
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
		if !k.isLease(id) {
			exc = k.unknownLease(id)
		} else if err := k.f.cfg.Grantor.Cancel(id); err != nil {
			exc = k.leaseException(id, err)
		}
		if exc != nil {
			u, _ := k.f.l.IDUuid(id)
			pairs = append(pairs, u, exc)
		}
	}
	if pairs == nil {
		return returnObject(nil)
	}
	return returnObject(k.f.hashMap(pairs))
}

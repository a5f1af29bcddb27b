package javahelpers

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/renewal"
)

// Classes of the leases jinid renews for Java.
const (
	abstractLease  = "org.apache.river.lease.AbstractLease"
	registrarLease = "org.apache.river.reggie.proxy.RegistrarLease"
	serviceLease   = "org.apache.river.reggie.proxy.ServiceLease"
	eventLease     = "org.apache.river.reggie.proxy.EventLease"
	landlordLease  = "org.apache.river.landlord.LandlordLease"
)

// selfHost is the host of the grantor URL of the leases jinid's own
// registrar granted: renewed in process, whatever address the client
// had them from.
const selfHost = "self"

// maxJavaLease bounds the object stream of a lease a set keeps: a
// Reggie's lease, with its registrar's proxy, is about 1 KB; the set
// holds it for as long as the lease is in it, in memory and on disk.
const maxJavaLease = 16 << 10

// errNotRenewable: a lease of a class jinid cannot renew.
var errNotRenewable = errors.New("not a lease jinid can renew")

// A Java lease in a set is a renewal.ClientLease whose grantor is
// jeri://HOST:PORT/OBJECT (the remote object that renews it, or
// jeri://self/OBJECT for jinid's registrar) and whose ID says which of
// the grantor's calls renews it:
//
//	service/SERVICEID/LEASE   a registrar's service lease (renewServiceLease)
//	event/EVENTID/LEASE       a registrar's event lease (renewEventLease)
//	landlord/COOKIE           a landlord's lease (Landlord.renew)
//
// The lease object itself is kept beside it, for getLeases, remove and
// the failure event.

// readLease reads a lease a Java client handed in as the set member it
// becomes.
func (s *Norm) readLease(ctx context.Context, v javaio.Value) (renewal.ClientLease, error) {
	o, ok := v.(*javaio.Object)
	if !ok || !o.Class.IsA(abstractLease) {
		return renewal.ClientLease{}, notRenewable(v)
	}
	exp, err := s.expiration(o)
	if err != nil {
		return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the lease: %v", err)
	}
	var server javaio.Value
	var id string
	switch {
	case o.Class.IsA(serviceLease), o.Class.IsA(eventLease):
		server = reggie.Field(o, "server")
		lid, err := javalookup.UuidID(reggie.Field(o, "leaseID"))
		if err != nil {
			return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the lease's ID: %v", err)
		}
		if o.Class.IsA(serviceLease) {
			sid := block(o.Custom(serviceLease))
			if len(sid) != 16 {
				return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the service lease carries no ServiceID")
			}
			id = "service/" + hex.EncodeToString(sid) + "/" + lid
		} else {
			eid, _ := reggie.Field(o, "eventID").(int64)
			id = "event/" + strconv.FormatInt(eid, 10) + "/" + lid
		}
	case o.Class.IsA(landlordLease):
		server = reggie.Field(o, "landlord")
		cookie, err := javalookup.UuidID(reggie.Field(o, "cookie"))
		if err != nil {
			return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the lease's cookie: %v", err)
		}
		id = "landlord/" + cookie
	default:
		return renewal.ClientLease{}, notRenewable(v)
	}
	host, port, obj, err := reggie.RemoteEndpoint(server, "lease's grantor")
	if err != nil {
		return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "%v", err)
	}
	if obj == s.object {
		// LR.2: a set's own lease cannot be put in a set.
		return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the lease is a renewal set's lease granted by this renewal service; it cannot be renewed by it")
	}
	grantor := "jeri://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/" + obj.String()
	if obj == s.cfg.Identity.Object {
		grantor = "jeri://" + selfHost + "/" + obj.String()
	} else if err := s.cfg.Outbound.CheckListener(ctx, "lease grantor", grantor); err != nil {
		return renewal.ClientLease{}, err
	}
	b, err := javaio.Encode(o, false)
	if err != nil {
		return renewal.ClientLease{}, fmt.Errorf("keeping the lease: %w", err)
	}
	if len(b) > maxJavaLease {
		return renewal.ClientLease{}, fault.New(apitypes.InvalidArgument, "the lease's object is %d bytes, more than the %d a lease takes", len(b), maxJavaLease)
	}
	return renewal.ClientLease{Grantor: grantor, ID: id, Expiration: exp, Java: b}, nil
}

// notRenewable is the refusal of a lease jinid cannot renew: Norm would
// call its renew method, which is code jinid does not run.
func notRenewable(v javaio.Value) error {
	return fault.New(apitypes.InvalidArgument, "%v: %s; jinid renews Reggie's service and event leases and landlord leases (Norm's, Mercury's, Mahalo's, Fiddler's)",
		errNotRenewable, reggie.Describe(v))
}

// block is the bytes of the first block of a class's custom data.
func block(custom []javaio.Value) []byte {
	for _, v := range custom {
		if b, ok := v.(javaio.Block); ok {
			return b
		}
	}
	return nil
}

// expiration reads a lease's expiration (AbstractLease's custom data:
// the time left, or the time itself, as its serial format says).
func (s *Norm) expiration(o *javaio.Object) (int64, error) {
	b := block(o.Custom(abstractLease))
	if len(b) < 8 {
		return 0, errors.New("no expiration")
	}
	v := int64(binary.BigEndian.Uint64(b))
	switch f, _ := reggie.Field(o, "serialFormat").(int32); f {
	case absoluteFormat:
		return v, nil
	case durationFormat:
		now := s.cfg.Grantor.Now().UnixMilli()
		if v > math.MaxInt64-now {
			return math.MaxInt64, nil
		}
		return now + v, nil
	default:
		return 0, fmt.Errorf("serial format %d", f)
	}
}

// javaLease is a kept lease object with its expiration set to exp.
func (s *Norm) javaLease(kept []byte, exp int64) (*javaio.Object, error) {
	v, err := javaio.Decode(kept)
	if err != nil {
		return nil, fmt.Errorf("reading a kept lease: %w", err)
	}
	o, ok := v.(*javaio.Object)
	if !ok {
		return nil, errors.New("a kept lease is not an object")
	}
	val := exp
	if f, _ := reggie.Field(o, "serialFormat").(int32); f != absoluteFormat {
		val = s.remaining(exp)
	}
	var d [8]byte
	binary.BigEndian.PutUint64(d[:], uint64(val))
	return o.SetCustom(abstractLease, javaio.Block(d[:])), nil
}

// leaseBytes is javaLease as an object stream.
func (s *Norm) leaseBytes(kept []byte, exp int64) ([]byte, error) {
	o, err := s.javaLease(kept, exp)
	if err != nil {
		return nil, err
	}
	return javaio.Encode(o, false)
}

// leaseRef is a member's ID read back.
type leaseRef struct {
	kind  string // service, event, landlord
	sid   []byte // service
	event int64  // event
	id    jeri.Uuid
}

func parseRef(id string) (leaseRef, error) {
	parts := strings.Split(id, "/")
	var r leaseRef
	var idHex string
	switch {
	case len(parts) == 3 && parts[0] == "service":
		sid, err := hex.DecodeString(parts[1])
		if err != nil || len(sid) != 16 {
			return r, fmt.Errorf("lease %q: bad ServiceID", id)
		}
		r.sid, idHex = sid, parts[2]
	case len(parts) == 3 && parts[0] == "event":
		e, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return r, fmt.Errorf("lease %q: bad event ID", id)
		}
		r.event, idHex = e, parts[2]
	case len(parts) == 2 && parts[0] == "landlord":
		idHex = parts[1]
	default:
		return r, fmt.Errorf("lease %q is not a Java lease", id)
	}
	b, err := hex.DecodeString(idHex)
	if err != nil || len(b) != 16 {
		return r, fmt.Errorf("lease %q: bad lease ID", id)
	}
	r.kind, r.id = parts[0], jeri.Uuid(b)
	return r, nil
}

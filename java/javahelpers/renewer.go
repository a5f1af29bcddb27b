package javahelpers

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"sync"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/renewal"
)

// Renewer renews the Java leases of renewal sets (their grantors are
// jeri: URLs): jinid's registrar's in process, the others by calling
// their grantor over Jini ERI as Java's lease classes do. It is the
// renewal service's renewer of Java leases (renewal.Renewers).
func (s *Norm) Renewer() renewal.Renewer { return s.remotes }

// landlordRenew is the hash of Landlord.renew(Uuid, long), the same
// method on every landlord.
var landlordRenew = lineage.MethodHash("renew", "(Lnet/jini/id/Uuid;J)J")

// maxRemotes bounds the grantors kept connected.
const maxRemotes = 64

// remotes are the connections to remote Java objects (the grantors of
// Java leases, transaction participants), one per object, each running
// its calls one at a time.
type remotes struct {
	f     *face
	codec *reggie.Codec

	mu sync.Mutex
	m  map[string]*reggie.Remote
}

func newRemotes(f *face) (*remotes, error) {
	c, err := reggie.NewCodec(f.l.Lineage)
	if err != nil {
		return nil, err
	}
	return &remotes{f: f, codec: c, m: make(map[string]*reggie.Remote)}, nil
}

func (r *remotes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, rm := range r.m {
		rm.Close()
		delete(r.m, k)
	}
}

// remote is the client of the grantor at u.
func (r *remotes) remote(u *url.URL, obj jeri.Uuid) (*reggie.Remote, error) {
	port, err := strconv.Atoi(u.Port())
	if err != nil || port <= 0 || port > 65535 {
		return nil, errors.New("the grantor has no port")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := u.String()
	if rm := r.m[key]; rm != nil {
		return rm, nil
	}
	if len(r.m) >= maxRemotes {
		for k, rm := range r.m {
			rm.Close()
			delete(r.m, k)
			break
		}
	}
	rm := r.codec.RemoteAt(u.Hostname(), port, obj, r.f.cfg.Dial)
	r.m[key] = rm
	return rm, nil
}

// RenewAll implements renewal.Renewer.
func (r *remotes) RenewAll(ctx context.Context, grantor string, rs []lease.Renewal) ([]renewal.Result, error) {
	u, err := url.Parse(grantor)
	var obj jeri.Uuid
	if err == nil {
		err = obj.UnmarshalText([]byte(u.Path[min(1, len(u.Path)):]))
	}
	if err != nil {
		bad := failure(apitypes.NoSuchObject, "the grantor is not a Java object jinid can call")
		return each(len(rs), renewal.Result{Err: bad}), nil
	}
	if u.Host == selfHost {
		return inProcess(r.f.cfg.Grantor, rs), nil
	}
	rm, err := r.remote(u, obj)
	if err != nil {
		return each(len(rs), renewal.Result{Err: failure(apitypes.NoSuchObject, "%v", err)}), nil
	}
	out := make([]renewal.Result, len(rs))
	for i, x := range rs {
		ref, err := parseRef(x.ID)
		if err != nil {
			out[i] = renewal.Result{Err: failure(apitypes.NoSuchObject, "%v", err)}
			continue
		}
		granted, err := r.renewRemote(ctx, rm, ref, x.Duration)
		if errors.Is(err, reggie.ErrUnreachable) {
			return nil, err // the whole call: an indefinite failure of each
		}
		out[i] = r.result(granted, err)
	}
	return out, nil
}

// inProcess renews leases jinid's registrar granted.
func inProcess(g *lease.Grantor, rs []lease.Renewal) []renewal.Result {
	batch := make([]lease.Renewal, 0, len(rs))
	out := make([]renewal.Result, len(rs))
	at := make([]int, 0, len(rs))
	for i, x := range rs {
		ref, err := parseRef(x.ID)
		if err != nil {
			out[i] = renewal.Result{Err: failure(apitypes.NoSuchObject, "%v", err)}
			continue
		}
		batch = append(batch, lease.Renewal{ID: hex.EncodeToString(ref.id[:]), Duration: x.Duration})
		at = append(at, i)
	}
	for j, res := range g.RenewAll(batch) {
		i := at[j]
		if res.Err != nil {
			var f *fault.Error
			if !errors.As(res.Err, &f) {
				f = failure(apitypes.Internal, "jinid could not renew the lease")
			}
			out[i] = renewal.Result{Err: f}
			continue
		}
		out[i] = renewal.Result{Expiration: res.Lease.Expiration}
	}
	return out
}

// renewRemote renews one lease at its grantor, as its class's renew
// does: the duration granted.
func (r *remotes) renewRemote(ctx context.Context, rm *reggie.Remote, ref leaseRef, d int64) (int64, error) {
	l := r.f.l
	id := l.Uuid(ref.id)
	var method string
	var args func(e *javaio.Encoder) error
	switch ref.kind {
	case "service":
		method = "renewServiceLease/3"
		args = func(e *javaio.Encoder) error {
			var sid [16]byte
			copy(sid[:], ref.sid)
			if err := e.WriteObject(reggie.ServiceIDObject(l.Lineage, sid)); err != nil {
				return err
			}
			if err := e.WriteObject(id); err != nil {
				return err
			}
			e.WriteLong(d)
			return nil
		}
	case "event":
		method = "renewEventLease/3"
		args = func(e *javaio.Encoder) error {
			e.WriteLong(ref.event)
			if err := e.WriteObject(id); err != nil {
				return err
			}
			e.WriteLong(d)
			return nil
		}
	default:
		// Landlord.renew(Uuid, long), the same method on every landlord.
		dec, err := rm.Call(ctx, "Landlord.renew", landlordRenew, func(e *javaio.Encoder) error {
			if err := e.WriteObject(id); err != nil {
				return err
			}
			e.WriteLong(d)
			return nil
		})
		if err != nil {
			return 0, err
		}
		return dec.ReadLong()
	}
	dec, err := rm.Call(ctx, method, l.Hash(method), args)
	if err != nil {
		return 0, err
	}
	return dec.ReadLong()
}

// result is a remote renewal's outcome as the renewal service counts it.
// What the grantor said goes no further than a category in jinid's own
// words: no other host's bytes reach a client.
func (r *remotes) result(granted int64, err error) renewal.Result {
	var re *reggie.RemoteError
	switch {
	case err == nil:
		now := r.f.cfg.Grantor.Now().UnixMilli()
		exp := math.MaxInt64 - max(granted, 0)
		if exp > now {
			exp = now + max(granted, 0)
		} else {
			exp = math.MaxInt64
		}
		return renewal.Result{Expiration: exp}
	case errors.Is(err, reggie.ErrUnknownLease):
		return renewal.Result{Err: failure(apitypes.UnknownLease, "the grantor does not know the lease (it ended or was cancelled)")}
	case errors.Is(err, reggie.ErrLeaseDenied):
		return renewal.Result{Err: failure(apitypes.LeaseDenied, "the grantor denied the renewal")}
	case errors.Is(err, reggie.ErrNoSuchObject):
		return renewal.Result{Err: failure(apitypes.NoSuchObject, "the grantor's object is not exported at its endpoint any more")}
	case errors.As(err, &re) && re.Remote:
		return renewal.Result{Err: failure(apitypes.Unavailable, "the grantor cannot renew leases just now"), Retry: true}
	case errors.As(err, &re):
		return renewal.Result{Err: failure(apitypes.InvalidArgument, "the grantor refused the renewal")}
	}
	return renewal.Result{Err: failure(apitypes.BadAnswer, "the grantor did not answer as the protocol wants"), Retry: true}
}

// failure is a renewal's error, coded.
func failure(c apitypes.Code, format string, args ...any) *fault.Error {
	return &fault.Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// each is n copies of r.
func each(n int, r renewal.Result) []renewal.Result {
	out := make([]renewal.Result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

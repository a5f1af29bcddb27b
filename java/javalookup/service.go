package javalookup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// Identity is what Java proxies hold of jinid's registrar besides its
// host: the object's Uuid and the Jini ERI port. Both are kept in the
// store, so proxies a Java client holds keep working across restarts.
type Identity struct {
	Object jeri.Uuid `json:"object"`
	Port   int       `json:"port"`
}

const (
	bucket      = "javalookup"
	identityKey = "identity"
)

// LoadIdentity reads the identity, making a new object Uuid (and no
// port yet) on first use.
func LoadIdentity(st *store.Store) (Identity, error) {
	var id Identity
	err := st.View(func(tx *store.Tx) error {
		_, err := tx.Get(bucket, identityKey, &id)
		return err
	})
	if err != nil {
		return Identity{}, fmt.Errorf("reading the Java registrar's identity: %w", err)
	}
	if id.Object == (jeri.Uuid{}) {
		rand.Read(id.Object[:])
		id.Object[6] = id.Object[6]&0x0F | 0x40 // a random (version 4) Uuid, as Java makes them
		id.Object[8] = id.Object[8]&0x3F | 0x80
	}
	return id, nil
}

// Derived is the object Uuid of another of jinid's Java objects (a
// helper service's server), made of the registrar's and name: the same
// at every start, so that the proxies Java holds keep working.
func (id Identity) Derived(name string) jeri.Uuid {
	sum := sha256.Sum256(append(id.Object[:], name...))
	var u jeri.Uuid
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0F | 0x40
	u[8] = u[8]&0x3F | 0x80
	return u
}

// SaveIdentity stores the identity.
func SaveIdentity(st *store.Store, id Identity) error {
	return st.Update(func(tx *store.Tx) error { return tx.Put(bucket, identityKey, id) })
}

// Config gives the service its dependencies.
type Config struct {
	Registrar *lookup.Registrar
	Grantor   *lease.Grantor
	// MayRegister says whether a Java client on conn may change the
	// registry: register and change services, register for events, renew
	// and cancel leases; nil lets none. Its error is the message the
	// client sees.
	MayRegister func(conn jeri.Conn) error
	// MayRead says whether a Java client on conn may look up; nil lets
	// all.
	MayRead  func(conn jeri.Conn) error
	Identity Identity
	// UnicastPort is the unicast discovery port, for getLocator.
	UnicastPort func() int
	// Lineage is the Java lineage served; nil means JGDMS.
	Lineage *Lineage
	Logger  *slog.Logger
	// Metrics, if set, counts and times the calls Java clients make.
	Metrics *metrics.Registry
}

// Service is the registrar as Java clients use it: a jeri.Object, and
// the maker of the proxies that lead to it.
type Service struct {
	*codec
	cfg Config

	mu      sync.Mutex
	proxies map[proxyKey][]byte
	own     map[string]func(host string) ([]byte, error)

	calls    *metrics.Counter
	duration *metrics.Histogram
}

type proxyKey struct {
	host       string
	sid        discovery.ServiceID
	descriptor string
}

// New returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Lineage == nil {
		l, err := JGDMS()
		if err != nil {
			return nil, err
		}
		cfg.Lineage = l
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "javalookup")
	c, err := newCodec(cfg.Lineage)
	if err != nil {
		return nil, err
	}
	return &Service{codec: c, cfg: cfg, proxies: make(map[proxyKey][]byte),
		calls: cfg.Metrics.Counter("jinid_java_calls_total",
			"Registrar calls Java clients made over Jini ERI, by method and outcome (return, throw).", "method", "outcome"),
		duration: cfg.Metrics.Histogram("jinid_java_call_duration_seconds",
			"Time jinid took to serve a Java client's registrar call, by method.", callBuckets, "method"),
	}, nil
}

// Lineage is the lineage served.
func (s *Service) Lineage() *Lineage { return s.l }

// Proxy returns the registrar proxy's object stream for clients that
// reach jinid at host, carrying d for other jinids. Proxies are made
// once per host and descriptor.
func (s *Service) Proxy(host string, d *discovery.Descriptor) ([]byte, error) {
	var desc []byte
	if d != nil {
		var err error
		if desc, err = json.Marshal(d); err != nil {
			return nil, err
		}
	}
	sid := s.cfg.Registrar.Meta().ServiceID
	k := proxyKey{host, sid, string(desc)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.proxies[k]; ok {
		return b, nil
	}
	b, err := s.l.RegistrarBytes(Endpoint{Host: host, Port: s.cfg.Identity.Port, Object: s.cfg.Identity.Object}, sid, string(desc))
	if err != nil {
		return nil, fmt.Errorf("making the registrar proxy: %w", err)
	}
	if len(s.proxies) >= 64 {
		// Hosts and descriptors change rarely; a full cache is one
		// whose entries went stale.
		clear(s.proxies)
	}
	s.proxies[k] = b
	return b, nil
}

func (s *Service) mayRegister(c jeri.Conn) error {
	if s.cfg.MayRegister == nil {
		return errors.New("jinid: Java clients may not register services here")
	}
	return s.cfg.MayRegister(c)
}

// callBuckets are the seconds a registrar call takes: a lookup in tens
// of microseconds, a registration with its fsync in milliseconds.
var callBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}

// Invoke serves a call to the registrar.
func (s *Service) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	start := time.Now()
	key, ok := s.l.Method(c.Method)
	if !ok {
		key = "unknown"
	}
	reply := s.invoke(key, ok, c)
	outcome := "return"
	if len(reply) > 0 && reply[0] != 1 {
		outcome = "throw"
	}
	s.calls.Inc(key, outcome)
	s.duration.Observe(time.Since(start).Seconds(), key)
	return reply
}

func (s *Service) invoke(key string, known bool, c *jeri.Call) jeri.Reply {
	if !known {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	var err error
	switch {
	case key == "getMemberGroups/0" || key == "getLocator/0":
		// What discovery tells anyone anyway.
	case changes(key):
		err = s.mayRegister(c.Conn)
	case s.cfg.MayRead != nil:
		err = s.cfg.MayRead(c.Conn)
	}
	if err != nil {
		return jeri.Throw(jeri.NewException("java.rmi.AccessException", err.Error()))
	}
	return s.dispatch(key, &call{s: s, c: c, host: HostOf(c.Conn.Local)})
}

// changes tells the registrar methods that change the registry (what an
// HTTP client needs a client token for: registrations, event
// registrations, attributes, leases) from those that only look.
func changes(key string) bool {
	switch key {
	case "register/2", "notify/5", "notiFy/5", "addAttributes/3", "setAttributes/3", "modifyAttributes/4",
		"renewServiceLease/3", "cancelServiceLease/2", "renewLeases/3", "cancelLeases/2",
		"renewEventLease/3", "cancelEventLease/2":
		return true
	}
	return false
}

func (s *Service) strings(v []string) *javaio.Array {
	a := &javaio.Array{Class: s.l.Classes.Class("[Ljava.lang.String;"), Elems: make([]javaio.Value, len(v))}
	for i, g := range v {
		a.Elems[i] = g
	}
	return a
}

// HostOf is the address a client reached jinid on, as a host for the
// client to use again.
func HostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	return ap.Addr().Unmap().WithZone("").String()
}

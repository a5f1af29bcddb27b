// Package discoverytest provides test rigs for discovery, as net/http/httptest
// does for HTTP. LAN is an in-memory LAN of simulated lookup services, so the
// discovery engines can be tested without sockets: it answers multicast
// requests (by calling the responder the test wires in), unicast
// discovery, and DNS SRV lookups, and makes the announcements a lookup
// service would send.
package discoverytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/vectors"
	"github.com/jinid/jinid/java/javaio"
)

// ErrUnreachable is what contacting a lookup service that is down gives.
var ErrUnreachable = errors.New("discoverytest: connection refused")

// SimLUS is one simulated lookup service.
type SimLUS struct {
	ID     discovery.ServiceID
	Host   string
	Port   int
	Groups []string
	// Java lookup services hand out a registrar proxy as Reggie (JGDMS)
	// does, which carries the ServiceID; others a jinid descriptor.
	Java bool
	// Opaque Java lookup services hand out a proxy of a class jinid
	// cannot read (another lineage, a custom registrar): jinid learns
	// their ServiceID from their announcements only.
	Opaque bool
	// Proxies are the bytes a Java lookup service hands out, by protocol
	// version; by default made from its ID (JavaProxy).
	Proxies map[int][]byte
	// AnswerVersions are the versions it answers multicast requests in;
	// by default 2 only. A Java lookup service answers both, and its
	// version 1 answer does not say its port (group.Multicast hands it on
	// with port 0), as here.
	AnswerVersions []int
	// FixedSequence: its version 2 announcements all carry sequence
	// number 0, as JGDMS's do until something changes.
	FixedSequence bool
	// Down ones answer nothing.
	Down bool
	seq  int64
}

// LAN is the simulated LAN.
type LAN struct {
	mu       sync.Mutex
	services []*SimLUS
	srv      map[string][]*net.SRV
	// Respond receives the answers to multicast requests (a Discovery's
	// HandleResponse).
	respond func(*unicast.Response, string)

	Requests []Request // every request sent, in order
	Dials    map[string]int
}

// Request is a multicast request as the network saw it.
type Request struct {
	Groups []string
	Known  []discovery.ServiceID
}

// New returns an empty LAN.
func NewLAN() *LAN { return &LAN{srv: map[string][]*net.SRV{}, Dials: map[string]int{}} }

// OnResponse sets where answers to requests go.
func (n *LAN) OnResponse(f func(*unicast.Response, string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.respond = f
}

// Add puts a lookup service on the LAN; a zero ID gets one from its
// position.
func (n *LAN) Add(l SimLUS) *SimLUS {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.ID.IsZero() {
		l.ID[0], l.ID[15] = 0xaa, byte(len(n.services)+1)
		l.ID[14] = byte((len(n.services) + 1) >> 8)
	}
	if l.Port == 0 {
		l.Port = discovery.Port
	}
	p := &l
	n.services = append(n.services, p)
	return p
}

// Set changes a lookup service under the network's lock.
func (n *LAN) Set(l *SimLUS, f func(*SimLUS)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(l)
}

// SetSRV makes name's _jini._tcp SRV records point at addrs (host:port).
func (n *LAN) SetSRV(name string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var recs []*net.SRV
	for _, a := range addrs {
		h, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		recs = append(recs, &net.SRV{Target: h + ".", Port: uint16(port)})
	}
	n.srv[name] = recs
}

// Announcement returns the announcement l would send now (version 2,
// with a growing sequence number, or version 1).
func (n *LAN) Announcement(l *SimLUS, version int) discovery.Announcement {
	n.mu.Lock()
	defer n.mu.Unlock()
	l.seq++
	a := discovery.Announcement{Version: version, Host: l.Host, Port: l.Port, ServiceID: l.ID, Groups: slices.Clone(l.Groups)}
	if version == discovery.ProtocolV2 && !l.FixedSequence {
		a.Sequence = l.seq
	}
	return a
}

// Request implements group.Network: every lookup service up that the
// request wants answers.
func (n *LAN) Request(groups []string, known []discovery.ServiceID) error {
	n.mu.Lock()
	n.Requests = append(n.Requests, Request{Groups: slices.Clone(groups), Known: slices.Clone(known)})
	r := discovery.Request{Groups: groups, Known: known}
	var answers []*unicast.Response
	for _, l := range n.services {
		if l.Down || !r.Wants(l.ID, l.Groups) {
			continue
		}
		versions := l.AnswerVersions
		if versions == nil {
			versions = []int{discovery.ProtocolV2}
		}
		for _, v := range versions {
			a := l.response(v)
			if v == discovery.ProtocolV1 && l.Java {
				a.Port = 0
			}
			answers = append(answers, a)
		}
	}
	respond := n.respond
	n.mu.Unlock()
	if respond != nil {
		for _, a := range answers {
			respond(a, "sim0")
		}
	}
	return nil
}

// RequestCount is how many requests were sent.
func (n *LAN) RequestCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.Requests)
}

// LastRequest is the latest request sent.
func (n *LAN) LastRequest() Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.Requests) == 0 {
		return Request{}
	}
	return n.Requests[len(n.Requests)-1]
}

// DialCount is how often host:port was contacted.
func (n *LAN) DialCount(addr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.Dials[addr]
}

// Unicast implements group.Network.
func (n *LAN) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	n.Dials[addr]++
	for _, l := range n.services {
		if strings.EqualFold(l.Host, host) && l.Port == port {
			if l.Down {
				return nil, fmt.Errorf("dialing %s: %w", addr, ErrUnreachable)
			}
			return l.response(version), nil
		}
	}
	return nil, fmt.Errorf("dialing %s: %w", addr, ErrUnreachable)
}

// Dial is a locator discovery dialer.
func (n *LAN) Dial(ctx context.Context, l discovery.Locator) (*unicast.Response, error) {
	return n.Unicast(ctx, l.Host, l.Port, discovery.ProtocolV2)
}

// LookupSRV is a locator discovery resolver.
func (n *LAN) LookupSRV(_ context.Context, service, proto, name string) (string, []*net.SRV, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	recs, ok := n.srv[name]
	if !ok {
		return "", nil, &net.DNSError{Err: "no such host", Name: "_" + service + "._" + proto + "." + name, IsNotFound: true}
	}
	return "", recs, nil
}

// response is l's answer to unicast discovery; the caller holds n.mu.
func (l *SimLUS) response(version int) *unicast.Response {
	r := &unicast.Response{Version: version, Host: l.Host, Port: l.Port, Groups: slices.Clone(l.Groups)}
	if r.Groups == nil {
		r.Groups = []string{}
	}
	if l.Java {
		m := l.Proxies[version]
		if m == nil {
			m = JavaProxy(l.ID, l.Opaque, version)
		}
		r.Registrar = unicast.ReadRegistrar(m)
	} else {
		r.Registrar.Marshalled = []byte("jinid descriptor of " + l.ID.String())
		r.Registrar.Descriptor = &discovery.Descriptor{ServiceID: l.ID, Groups: r.Groups,
			Locator: discovery.Locator{Host: l.Host, Port: l.Port}.String()}
	}
	return r
}

// Reggie is a Java lookup service at host that behaves on the wire as
// JGDMS's Reggie does: it answers requests in both protocol versions with
// its registrar proxy (a MarshalledObject in version 1, a
// MarshalledInstance in version 2: different bytes, one proxy carrying
// its ServiceID), the version 1 answer without its port, and it
// announces in version 2 only, every time with sequence number 0.
func Reggie(host string, groups ...string) SimLUS {
	return SimLUS{Host: host, Groups: groups, Java: true,
		AnswerVersions: []int{discovery.ProtocolV1, discovery.ProtocolV2}, FixedSequence: true}
}

// Custom is Reggie with a proxy of a class jinid cannot read (a custom
// registrar, or a lineage it does not know): the dynamic proxy the Java
// implementation encoded in the test vectors, the same object in both
// versions.
func Custom(host string, groups ...string) SimLUS {
	proxies := map[int][]byte{}
	for v, name := range map[int]string{discovery.ProtocolV1: "v1.unicast.response", discovery.ProtocolV2: "v2.unicast.response"} {
		resp, err := unicast.ReadResponse(bytes.NewReader(vectors.Named(name).Bytes()), 1<<20)
		if err != nil {
			panic(fmt.Sprintf("discoverytest: vector %s: %v", name, err))
		}
		proxies[v] = resp.Registrar.Marshalled
	}
	l := Reggie(host, groups...)
	l.Opaque, l.Proxies = true, proxies
	return l
}

// JavaProxy returns the marshalled registrar proxy of a Java lookup
// service with ServiceID id, as the given protocol version carries it:
// JGDMS's ConstrainableRegistrarProxy (its fields left null: jinid reads
// the ServiceID only), or with opaque a class of the same shape that
// jinid does not know.
func JavaProxy(id discovery.ServiceID, opaque bool, version int) []byte {
	pkg := "org.apache.river.reggie.proxy"
	if opaque {
		pkg = "com.example.registrar"
	}
	flags := byte(javaio.FlagSerializable | javaio.FlagWriteMethod)
	base := &javaio.Class{Name: pkg + ".RegistrarProxy", SUID: 2, Flags: flags,
		Fields: []javaio.Field{{Code: 'L', Name: "server", Type: "Lorg/apache/river/reggie/proxy/Registrar;"}}}
	c := &javaio.Class{Name: pkg + ".ConstrainableRegistrarProxy", SUID: 2, Flags: flags, Super: base,
		Fields: []javaio.Field{{Code: 'L', Name: "constraints", Type: "Lnet/jini/core/constraint/MethodConstraints;"}}}
	obj, err := javaio.Encode(javaio.NewObject(c).SetCustom(base.Name, javaio.Block(id[:])), false)
	if err != nil {
		panic(fmt.Sprintf("discoverytest: encoding a proxy: %v", err))
	}
	container := javaio.MarshalledInstance
	if version == discovery.ProtocolV1 {
		container = javaio.MarshalledObject
	}
	return javaio.AppendMarshalled(nil, container, obj)
}

package unicast

import (
	"crypto/sha256"
	"encoding/json"
	"strings"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
)

// MaxReadProxy bounds the registrar proxies whose objects jinid reads
// (Java serialization builds a graph: a few allocations per value). A
// Reggie proxy is about 1.2 KB, with codebase annotations a few more;
// a larger one is kept whole but not read, and its lookup service gets a
// stand-in ServiceID until it announces.
const MaxReadProxy = 64 << 10

// ReadRegistrar reads what jinid can of a marshalled registrar proxy (a
// Java object stream holding a java.rmi.MarshalledObject or a
// net.jini.io.MarshalledInstance): the ServiceID a Reggie or jinid proxy
// carries, and a jinid lookup service's descriptor. What it cannot read
// it leaves zero; Marshalled is m in every case.
//
// The Java decoder is bounded in nesting, handles and values, and
// builds at most a small multiple of what it reads; MaxReadProxy bounds
// that.
func ReadRegistrar(m []byte) discovery.Registrar {
	r := discovery.Registrar{Marshalled: m}
	if s, _, ok := javaio.UnmarshalString(m); ok {
		// A jinid from before it served Java: the descriptor alone.
		if r.Descriptor = parseDescriptor(s); r.Descriptor != nil {
			r.ServiceID = r.Descriptor.ServiceID
		}
		return r
	}
	p, ok := ProxyObject(m)
	if !ok {
		return r
	}
	r.ServiceID = registrarID(p)
	if s, ok := descriptorIn(p); ok {
		r.Descriptor = parseDescriptor(s)
	}
	return r
}

// StandInID is the ServiceID that stands in for the real one of a
// lookup service whose proxy jinid cannot read: a hash of the proxy's
// own object stream. The same proxy gives the same ID in both protocol
// versions (the container differs, not what it holds).
func StandInID(m []byte) discovery.ServiceID {
	obj := m
	if b, ok := proxyBytes(m); ok {
		obj = b
	}
	sum := sha256.Sum256(obj)
	var id discovery.ServiceID
	copy(id[:], sum[:])
	return id
}

// proxyBytes returns the object stream a marshalled container holds (its
// objBytes), without reading that stream.
func proxyBytes(m []byte) ([]byte, bool) {
	if len(m) > MaxReadProxy+1024 {
		return nil, false
	}
	v, err := javaio.Decode(m)
	if err != nil {
		return nil, false
	}
	c, ok := v.(*javaio.Object)
	if !ok || !c.Class.IsA("java.rmi.MarshalledObject") && !c.Class.IsA("net.jini.io.MarshalledInstance") {
		return nil, false
	}
	ob, _ := c.Get("objBytes")
	a, ok := ob.(*javaio.Array)
	if !ok || a.Class.Name != "[B" {
		return nil, false
	}
	return a.Prim, true
}

// ProxyObject reads the object a marshalled container holds: a
// registrar proxy, whose remote reference a client of the registrar
// calls (java/javalookup's Remote). It reads at most MaxReadProxy.
func ProxyObject(m []byte) (*javaio.Object, bool) {
	b, ok := proxyBytes(m)
	if !ok || len(b) > MaxReadProxy {
		return nil, false
	}
	v, err := javaio.Decode(b)
	if err != nil {
		return nil, false
	}
	p, ok := v.(*javaio.Object)
	return p, ok
}

// registrarProxyClass reports whether a class is Reggie's RegistrarProxy
// in one of the lineages of the Java implementation. Each writes the
// registrar's ServiceID with ServiceID.writeBytes (most, then least
// significant long) after its fields, and reads it back in readObject;
// ConstrainableRegistrarProxy extends it. jinid's proxy is JGDMS's.
func registrarProxyClass(name string) bool {
	switch name {
	case "org.apache.river.reggie.proxy.RegistrarProxy", // JGDMS
		"org.apache.river.reggie.RegistrarProxy", // Apache River 3
		"com.sun.jini.reggie.RegistrarProxy":     // Jini 2 and Apache River 2
		return true
	}
	return false
}

// registrarID returns the ServiceID a registrar proxy carries, or zero
// if it is of no class known to carry one.
func registrarID(p *javaio.Object) discovery.ServiceID {
	var id discovery.ServiceID
	for k := p.Class; k != nil; k = k.Super {
		if k.Proxy || !registrarProxyClass(k.Name) || k.Flags&javaio.FlagWriteMethod == 0 {
			continue
		}
		// The 16 bytes are block data, which Java may split over blocks.
		n := 0
		for _, v := range p.Custom(k.Name) {
			b, ok := v.(javaio.Block)
			if !ok {
				break
			}
			n += copy(id[n:], b)
			if n == len(id) {
				return id
			}
		}
		return discovery.ServiceID{}
	}
	return id
}

// descriptorIn finds the descriptor string jinid adds to its proxy's
// custom data.
func descriptorIn(p *javaio.Object) (string, bool) {
	for _, cd := range p.Data {
		for _, x := range cd.Custom {
			if s, ok := x.(string); ok && strings.HasPrefix(s, discovery.DescriptorMark) {
				return s[len(discovery.DescriptorMark):], true
			}
		}
	}
	return "", false
}

func parseDescriptor(s string) *discovery.Descriptor {
	var d discovery.Descriptor
	if json.Unmarshal([]byte(s), &d) != nil || d.ServiceID.IsZero() {
		return nil
	}
	return &d
}

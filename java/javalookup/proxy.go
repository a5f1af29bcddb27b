package javalookup

import (
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
)

// Endpoint is where Java reaches jinid's registrar: a TCP endpoint and
// the object's Uuid there.
type Endpoint struct {
	Host   string
	Port   int
	Object jeri.Uuid
}

// remoteRef is the JERI dynamic proxy of an object at ep, implementing
// the proxy class named (from the catalogue), as BasicJeriExporter
// makes them.
func (l *Lineage) remoteRef(proxyClass string, ep Endpoint) *javaio.Object {
	return l.RemoteRef(l.Classes.Class(proxyClass), ep)
}

// RemoteRef is the JERI dynamic proxy of an object at ep whose proxy
// class is proxy (a "proxy" line of a catalogue), as BasicJeriExporter
// makes them: what every River service's smart proxy wraps.
func (l *Lineage) RemoteRef(proxy *javaio.Class, ep Endpoint) *javaio.Object {
	tcp := javaio.NewObject(l.Classes.Class("net.jini.jeri.tcp.TcpEndpoint")).
		Set("port", int32(ep.Port)).Set("host", ep.Host)
	oe := javaio.NewObject(l.Classes.Class("net.jini.jeri.BasicObjectEndpoint")).
		Set("ep", tcp).Set("id", l.Uuid(ep.Object))
	h := javaio.NewObject(l.Classes.Class("net.jini.jeri.BasicInvocationHandler")).Set("oe", oe)
	return javaio.NewObject(proxy).Set("h", h)
}

// Uuid is a Jini Uuid as Java's object.
func (l *Lineage) Uuid(u jeri.Uuid) *javaio.Object {
	bits0, bits1 := u.Bits()
	return javaio.NewObject(l.Classes.Class("net.jini.id.UuidFactory$Impl")).
		Set("bits0", bits0).Set("bits1", bits1)
}

// serviceIDBlock is a ServiceID as RegistrarProxy and the leases write
// it in their custom data: most then least significant long.
func serviceIDBlock(id discovery.ServiceID) javaio.Block {
	b := make([]byte, 16)
	copy(b, id[:])
	return b
}

// Registrar returns the registrar proxy for a registrar with ServiceID
// sid at ep; descriptor, if not empty, is added for other jinids.
func (l *Lineage) Registrar(ep Endpoint, sid discovery.ServiceID, descriptor string) *javaio.Object {
	p := l.New("ConstrainableRegistrarProxy").Set("server", l.server(ep))
	custom := []javaio.Value{serviceIDBlock(sid)}
	if descriptor != "" {
		custom = append(custom, discovery.DescriptorMark+descriptor)
	}
	return p.SetCustom(l.Package+".RegistrarProxy", custom...)
}

func (l *Lineage) server(ep Endpoint) *javaio.Object { return l.remoteRef("registrar", ep) }

// RegistrarBytes returns the registrar proxy as the object stream a
// MarshalledInstance or MarshalledObject holds (no codebase annotations).
func (l *Lineage) RegistrarBytes(ep Endpoint, sid discovery.ServiceID, descriptor string) ([]byte, error) {
	return javaio.Encode(l.Registrar(ep, sid, descriptor), false)
}

// serviceID returns the Java ServiceID object for id.
func (l *Lineage) serviceID(id discovery.ServiceID) *javaio.Object {
	return reggie.ServiceIDObject(l.Lineage, id)
}

package unicast

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/rig/vectors"
	"github.com/jinid/jinid/java/javaio"
)

// captures are Reggie's (JGDMS) unicast responses, as it sent them.
const captures = "../../java/javaio/testdata/"

// reggieID is the ServiceID Reggie logged when the captures were made.
var reggieID, _ = discovery.ParseServiceID("9b2043d1-e829-40e9-8bb9-1a3992edd610")

func captured(t testing.TB, name string) *Response {
	t.Helper()
	b, err := os.ReadFile(captures + name)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ReadResponse(bytes.NewReader(b), DefaultMaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// proxyOf returns a marshalled registrar proxy of the named class (a
// subclass of it when sub is set) whose writeObject wrote custom.
func proxyOf(t testing.TB, c javaio.Container, class, sub string, custom ...javaio.Value) []byte {
	t.Helper()
	k := &javaio.Class{Name: class, SUID: 2, Flags: javaio.FlagSerializable | javaio.FlagWriteMethod,
		Fields: []javaio.Field{{Code: 'L', Name: "server", Type: "Ljava/lang/Object;"}}}
	top := k
	if sub != "" {
		top = &javaio.Class{Name: sub, SUID: 2, Flags: javaio.FlagSerializable | javaio.FlagWriteMethod, Super: k,
			Fields: []javaio.Field{{Code: 'L', Name: "constraints", Type: "Ljava/lang/Object;"}}}
	}
	obj, err := javaio.Encode(javaio.NewObject(top).SetCustom(class, custom...), false)
	if err != nil {
		t.Fatal(err)
	}
	return javaio.AppendMarshalled(nil, c, obj)
}

func idBlock(id discovery.ServiceID) javaio.Block { return javaio.Block(id[:]) }

// The ServiceID a registrar proxy carries is read in both protocol
// versions: Reggie's own responses, each lineage's RegistrarProxy and its
// constrainable subclass, jinid's proxy; a proxy of any other class
// carries none jinid can know, and its stand-in is the same in both
// versions.
func TestReadRegistrar(t *testing.T) {
	id := discovery.ServiceID{0x11, 0x22, 15: 0xff}
	other := discovery.ServiceID{9}
	jgdms := "org.apache.river.reggie.proxy.RegistrarProxy"
	for _, c := range []struct {
		name  string
		m     []byte
		want  discovery.ServiceID
		jinid bool
	}{
		{"Reggie v1 (captured)", captured(t, "reggie-unicast-v1.bin").Registrar.Marshalled, reggieID, false},
		{"Reggie v2 (captured)", captured(t, "reggie-unicast-v2.bin").Registrar.Marshalled, reggieID, false},
		{"JGDMS RegistrarProxy", proxyOf(t, javaio.MarshalledInstance, jgdms, "", idBlock(id)), id, false},
		{"JGDMS ConstrainableRegistrarProxy, v1", proxyOf(t, javaio.MarshalledObject, jgdms, "org.apache.river.reggie.proxy.ConstrainableRegistrarProxy", idBlock(id)), id, false},
		{"Apache River 3", proxyOf(t, javaio.MarshalledInstance, "org.apache.river.reggie.RegistrarProxy", "", idBlock(id)), id, false},
		{"Jini 2", proxyOf(t, javaio.MarshalledObject, "com.sun.jini.reggie.RegistrarProxy", "com.sun.jini.reggie.ConstrainableRegistrarProxy", idBlock(id)), id, false},
		{"the ServiceID split over two blocks", proxyOf(t, javaio.MarshalledInstance, jgdms, "", javaio.Block(id[:5]), javaio.Block(id[5:])), id, false},
		{"jinid", proxyOf(t, javaio.MarshalledInstance, jgdms, "", idBlock(other),
			discovery.DescriptorMark+`{"serviceID":"`+other.String()+`","apiURL":"http://10.0.0.1:4162"}`), other, true},
		{"jinid before it served Java (a string)", javaio.AppendMarshalledString(nil, javaio.MarshalledObject,
			`{"serviceID":"`+other.String()+`","apiURL":"http://10.0.0.1:4162"}`), other, true},
		{"a class jinid does not know", proxyOf(t, javaio.MarshalledInstance, "com.example.MyRegistrar", "", idBlock(id)), discovery.ServiceID{}, false},
		{"a dynamic proxy (the test vectors)", vectorProxy(t, "v2.unicast.response"), discovery.ServiceID{}, false},
		{"a short ServiceID", proxyOf(t, javaio.MarshalledInstance, jgdms, "", javaio.Block(id[:15])), discovery.ServiceID{}, false},
		{"a string where the ServiceID goes", proxyOf(t, javaio.MarshalledInstance, jgdms, "", "x"), discovery.ServiceID{}, false},
		{"no custom data", proxyOf(t, javaio.MarshalledInstance, jgdms, ""), discovery.ServiceID{}, false},
		{"not a container", append([]byte{0xac, 0xed, 0, 5, 0x74, 0, 1}, 'x'), discovery.ServiceID{}, false},
		{"garbage", []byte("java proxy"), discovery.ServiceID{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ReadRegistrar(c.m)
			if r.ServiceID != c.want || (r.Descriptor != nil) != c.jinid || !bytes.Equal(r.Marshalled, c.m) {
				t.Fatalf("ServiceID %s (descriptor %v), want %s (descriptor %v)", r.ServiceID, r.Descriptor != nil, c.want, c.jinid)
			}
			ls := NewLookupService(&Response{Registrar: r}, discovery.ServiceID{})
			if c.want.IsZero() != ls.IDIsStandIn() || !c.want.IsZero() && ls.ID != c.want {
				t.Fatalf("lookup service %s (stand-in %s), want %s", ls.ID, ls.StandIn, c.want)
			}
		})
	}
}

func vectorProxy(t testing.TB, name string) []byte {
	t.Helper()
	resp, err := ReadResponse(bytes.NewReader(vectors.Named(name).Bytes()), DefaultMaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Registrar.Marshalled
}

// A proxy jinid cannot read stands in under one ID in both versions
// (a MarshalledObject and a MarshalledInstance of the same object), and
// an announced ServiceID is taken over the stand-in.
func TestStandIn(t *testing.T) {
	v1, v2 := vectorProxy(t, "v1.unicast.response"), vectorProxy(t, "v2.unicast.response")
	if bytes.Equal(v1, v2) {
		t.Fatal("the vectors' containers are equal: the test shows nothing")
	}
	a := NewLookupService(&Response{Version: 1, Registrar: ReadRegistrar(v1)}, discovery.ServiceID{})
	b := NewLookupService(&Response{Version: 2, Registrar: ReadRegistrar(v2)}, discovery.ServiceID{})
	if a.ID != b.ID || !a.IDIsStandIn() || !a.Same(b) {
		t.Fatalf("v1 %s, v2 %s: want one stand-in", a.ID, b.ID)
	}
	announced := discovery.ServiceID{5}
	c := NewLookupService(&Response{Version: 2, Registrar: ReadRegistrar(v2)}, announced)
	if c.ID != announced || c.IDIsStandIn() || c.StandIn != a.ID || !c.Same(a) {
		t.Fatalf("announced: %s (stand-in %s)", c.ID, c.StandIn)
	}
	// A readable proxy's own ServiceID wins over an announced one.
	r := captured(t, "reggie-unicast-v2.bin")
	if ls := NewLookupService(r, announced); ls.ID != reggieID || !ls.StandIn.IsZero() {
		t.Fatalf("Reggie announced as %s: %s (stand-in %s)", announced, ls.ID, ls.StandIn)
	}
}

// A proxy over MaxReadProxy is kept whole but not read.
func TestReadRegistrarBounded(t *testing.T) {
	id := discovery.ServiceID{1}
	pad := strings.Repeat("x", MaxReadProxy)
	m := proxyOf(t, javaio.MarshalledInstance, "org.apache.river.reggie.proxy.RegistrarProxy", "", idBlock(id), pad)
	if r := ReadRegistrar(m); !r.ServiceID.IsZero() || !bytes.Equal(r.Marshalled, m) {
		t.Fatalf("a %d-byte proxy was read: %s", len(m), r.ServiceID)
	}
}

func BenchmarkReadRegistrar(b *testing.B) {
	m := captured(b, "reggie-unicast-v2.bin").Registrar.Marshalled
	b.ReportAllocs()
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		if ReadRegistrar(m).ServiceID != reggieID {
			b.Fatal("not read")
		}
	}
}

// BenchmarkDiscoverReggie is a whole unicast discovery as jinid runs it
// with Reggie, on loopback: dial, the version 2 request, Reggie's
// captured answer read (its proxy's ServiceID included). Set beside
// BenchmarkReadRegistrar, it shows what reading the proxy adds.
func BenchmarkDiscoverReggie(b *testing.B) {
	answer, err := os.ReadFile(captures + "reggie-unicast-v2.bin")
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := ReadRequest(c); err == nil {
					c.Write(answer)
				}
			}()
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := DiscoverAt(context.Background(), (&net.Dialer{}).DialContext, ln.Addr().String(), discovery.ProtocolV2)
		if err != nil || resp.Registrar.ServiceID != reggieID {
			b.Fatal(err)
		}
	}
}

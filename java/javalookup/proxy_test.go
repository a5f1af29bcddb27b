package javalookup

import (
	"bytes"
	"os"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
)

const captures = "../javaio/testdata/"

func jgdms(t testing.TB) *Lineage {
	t.Helper()
	l, err := JGDMS()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// capturedProxy returns the registrar proxy Reggie served in the captured
// v2 unicast response, as its object stream.
func capturedProxy(t testing.TB) []byte {
	t.Helper()
	v2, err := os.ReadFile(captures + "reggie-unicast-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	mi, err := javaio.Decode(v2[36:])
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := mi.(*javaio.Object).Get("objBytes")
	return ob.(*javaio.Array).Prim
}

// The proxy jinid builds from its catalogue, given Reggie's host, port,
// Uuid and ServiceID, is the proxy Reggie served, byte for byte.
func TestRegistrarIsReggies(t *testing.T) {
	l := jgdms(t)
	want := capturedProxy(t)
	sid, _ := discovery.ParseServiceID("9b2043d1-e829-40e9-8bb9-1a3992edd610")
	ep := Endpoint{Host: "10.77.0.3", Port: 35973, Object: jeri.Uuid(want[1106:1122])}
	got, err := l.RegistrarBytes(ep, sid, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		g, _ := javaio.Decode(got)
		w, _ := javaio.Decode(want)
		t.Fatalf("proxy differs (%d bytes, Reggie's %d):\n%s\n----\n%s", len(got), len(want), javaio.Dump(g), javaio.Dump(w))
	}
}

// Method hashes computed from the table match those Java sent.
func TestMethodHashes(t *testing.T) {
	l := jgdms(t)
	for key, want := range map[string]uint64{
		"getMemberGroups/0":    0x76ebba987a1da390,
		"getLocator/0":         0x45c431cb0f287cf4,
		"register/2":           0x02eea3d8ae6f9da1,
		"lookup/1":             0x21c123ae0a488e6c,
		"lookup/2":             0xdf4d3b9a0bfc2c9f,
		"lookUp/2":             0xf28ef11d154a1d2a,
		"notify/5":             0x1445819c64e90de5,
		"notiFy/5":             0x4e1f14918a48a317,
		"addAttributes/3":      0x618ec67d147a506d,
		"setAttributes/3":      0x162f59f20720f442,
		"modifyAttributes/4":   0x72ef034008345d1e,
		"renewServiceLease/3":  0xfe5c6e23968b39f3,
		"cancelServiceLease/2": 0x65fe84c2fe6e398d,
		"renewEventLease/3":    0x112bbec42679fa01,
		"cancelEventLease/2":   0x8cc5fbe36563d0c7,
		"renewLeases/3":        0x5aef5a2bab2d389f,
		"cancelLeases/2":       0xf8759c85200d8123,
		"getServiceTypes/2":    0x46bc22e0113412d3,
		"getEntryClasses/1":    0xdbbf3725e0788d15,
		"getFieldValues/3":     0xd01e1d64035c77f2,
		"getAdmin/0":           0xc96dea2259d32eed,
		"getServiceProxy/0":    0x3e73cfed0603b062,
	} {
		if got := l.Hash(key); uint64(got) != want {
			t.Errorf("%s: hash %016x, want %016x", key, uint64(got), want)
		}
		if k, ok := l.Method(int64(want)); !ok || k != key {
			t.Errorf("%016x: %q", want, k)
		}
	}
	if uint64(l.Listener()) != 0x0e78bd0be079883c {
		t.Errorf("listener notify hash %016x", uint64(l.Listener()))
	}
}

// The descriptor jinid adds for other jinids is where Java skips it: in
// RegistrarProxy's custom data, after the ServiceID.
func TestRegistrarDescriptor(t *testing.T) {
	l := jgdms(t)
	b, err := l.RegistrarBytes(Endpoint{Host: "h", Port: 1}, discovery.ServiceID{1}, `{"x":1}`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := javaio.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	custom := v.(*javaio.Object).Custom(l.Package + ".RegistrarProxy")
	if len(custom) != 2 || custom[1] != discovery.DescriptorMark+`{"x":1}` {
		t.Fatalf("custom data %v", custom)
	}
}

package javaio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAll reads every top-level element of a stream: block data as Block,
// objects as values.
func readAll(t testing.TB, b []byte) ([]Value, error) {
	t.Helper()
	d, err := NewDecoder(b)
	if err != nil {
		return nil, err
	}
	var out []Value
	for d.off < len(d.b) {
		switch d.b[d.off] {
		case tcBlockData, tcBlockDataLong:
			if err := d.nextBlock("block"); err != nil {
				return nil, err
			}
			out = append(out, Block(d.block))
			d.block = nil
		default:
			v, err := d.ReadObject()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func writeAll(t testing.TB, vs []Value, codebase bool) []byte {
	t.Helper()
	e := NewEncoder(codebase)
	for _, v := range vs {
		if b, ok := v.(Block); ok {
			e.block = append(e.block, b...)
			continue
		}
		if err := e.WriteObject(v); err != nil {
			t.Fatal(err)
		}
	}
	return e.Bytes()
}

func dumpAll(vs []Value) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(Dump(v))
	}
	return b.String()
}

// Every stream Reggie and a Java client exchanged in one registrar
// session (captured on a namespace LAN, testdata/jeri), and the registrar
// proxy of a unicast response: each decodes to the end, and writing the
// graph back gives a stream that decodes to the same graph.
func TestCapturedStreamsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/jeri/*.bin")
	if len(files) < 30 {
		t.Fatalf("only %d captures", len(files))
	}
	type stream struct {
		name string
		b    []byte
	}
	var streams []stream
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A request starts with the object's Uuid and two bytes; a reply
		// with two status bytes.
		skip := 2
		if strings.HasSuffix(f, "-req.bin") {
			skip = 18
		}
		streams = append(streams, stream{filepath.Base(f), raw[skip:]})
	}
	v2, err := os.ReadFile("testdata/reggie-unicast-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	mi, err := Decode(v2[36:])
	if err != nil {
		t.Fatal(err)
	}
	objBytes, _ := mi.(*Object).Get("objBytes")
	streams = append(streams, stream{"registrar proxy", objBytes.(*Array).Prim})

	for _, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			vs, err := readAll(t, s.b)
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			first := dumpAll(vs)
			again := writeAll(t, vs, s.name != "registrar proxy")
			vs2, err := readAll(t, again)
			if err != nil {
				t.Fatalf("decoding what was written: %v", err)
			}
			if second := dumpAll(vs2); second != first {
				t.Fatalf("graph changed in the round trip:\n%s\n----\n%s", first, second)
			}
			if s.name == "registrar proxy" && !bytes.Equal(again, s.b) {
				t.Logf("proxy: %d bytes written, %d read", len(again), len(s.b))
			}
		})
	}
}

func TestDumpProxy(t *testing.T) {
	v2, _ := os.ReadFile("testdata/reggie-unicast-v2.bin")
	mi, err := Decode(v2[36:])
	if err != nil {
		t.Fatal(err)
	}
	objBytes, _ := mi.(*Object).Get("objBytes")
	p, err := Decode(objBytes.(*Array).Prim)
	if err != nil {
		t.Fatal(err)
	}
	out := Dump(p)
	for _, want := range []string{
		"org.apache.river.reggie.proxy.ConstrainableRegistrarProxy(2, 0x03",
		"proxy(org.apache.river.reggie.proxy.Registrar, net.jini.lookup.ServiceProxyAccessor",
		"net.jini.jeri.tcp.TcpEndpoint(-2840731722681368933, 0x03: port I, host Ljava/lang/String;, sf Ljavax/net/SocketFactory;)",
		`host = "10.77.0.3"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
}

func TestDecodeHostile(t *testing.T) {
	hdr := []byte{0xac, 0xed, 0, 5}
	cases := map[string][]byte{
		"bad header":           {0xac, 0xed, 0, 4, 0x70},
		"empty":                hdr,
		"reference to nothing": append(hdr, 0x71, 0, 0x7e, 0, 9),
		"huge array":           append(hdr, 0x75, 0x72, 0, 2, '[', 'B', 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0x78, 0x70, 0x7f, 0xff, 0xff, 0xff),
		"huge object array":    append(hdr, 0x75, 0x72, 0, 3, '[', 'L', 'x', 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0x78, 0x70, 0x7f, 0xff, 0xff, 0xff),
		"object of null class": append(hdr, 0x73, 0x70),
		"reset":                append(hdr, 0x79, 0x70),
		"bad type code":        append(hdr, 0x42),
		"block for object":     append(hdr, 0x77, 1, 0),
		"truncated string":     append(hdr, 0x74, 0, 9, 'a'),
		"huge field count":     append(hdr, 0x73, 0x72, 0, 1, 'A', 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xff, 0xff),
	}
	deep := append([]byte{}, hdr...)
	for range 100 {
		deep = append(deep, 0x75, 0x72, 0, 3, '[', 'L', 'x', 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0x78, 0x70, 0, 0, 0, 1)
	}
	cases["deep"] = deep
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := Decode(b)
			if err == nil {
				t.Fatalf("decoded %v", Dump(v))
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		})
	}
}

// A graph with a cycle and a shared node is written once per node.
func TestEncodeCycle(t *testing.T) {
	c := &Class{Name: "T", SUID: 1, Flags: scSerializable, Fields: []Field{{Code: 'L', Name: "next", Type: "LT;"}, {Code: 'L', Name: "s", Type: "Ljava/lang/String;"}}}
	a := NewObject(c)
	b := NewObject(c).Set("next", a).Set("s", "shared")
	a.Set("next", b).Set("s", "shared")
	out, err := Encode(a, false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(*Object)
	next, _ := got.Get("next")
	back, _ := next.(*Object).Get("next")
	if back != got {
		t.Fatal("the cycle was not kept")
	}
	if n := bytes.Count(out, []byte("shared")); n != 1 {
		t.Fatalf("string written %d times", n)
	}
}

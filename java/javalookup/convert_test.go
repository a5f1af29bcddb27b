package javalookup

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/lookup"
)

func newService(t testing.TB) *Service {
	t.Helper()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readCall returns the arguments of a captured call, after its method
// hash.
func readCall(t testing.TB, name string) *javaio.Decoder {
	t.Helper()
	raw, err := os.ReadFile(captures + "jeri/" + name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := javaio.NewDecoder(raw[18:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadLong(); err != nil {
		t.Fatal(err)
	}
	return d
}

// Reggie's hashes, computed from entries.txt as Reggie computes them.
func TestEntryAndTypeHashes(t *testing.T) {
	s := newService(t)
	for name, want := range map[string]int64{
		"net.jini.lookup.entry.Name":   1415799104916629605,
		"net.jini.entry.AbstractEntry": 9091548176128837513,
		"java.lang.Object":             6338405844266505344,
	} {
		if got := s.EntryHash(name); got != want {
			t.Errorf("%s: hash %d, want %d", name, got, want)
		}
	}
	if got := reggie.TypeHash("com.example.Hello"); got != 8906995994481786780 {
		t.Errorf("type hash of com.example.Hello: %d", got)
	}
}

// The item of a captured Java register call, as the registry keeps it:
// types flattened with supertypes, Name's field by name, the service
// object serialized; and back to Java, the same entries and service.
func TestItemFromJava(t *testing.T) {
	s := newService(t)
	d := readCall(t, "02-register-req.bin")
	v, err := d.ReadObject()
	if err != nil {
		t.Fatal(err)
	}
	it, err := s.itemFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"com.example.HelloProxy", "com.example.Hello", "java.io.Serializable"}; !slices.Equal(it.Types, want) {
		t.Errorf("types %q, want %q", it.Types, want)
	}
	if len(it.Attributes) != 1 || it.Attributes[0].Type != "net.jini.lookup.entry.Name" ||
		it.Attributes[0].Fields["name"] != "hello-1" || !slices.Equal(it.Attributes[0].Supertypes, []string{"net.jini.entry.AbstractEntry"}) {
		t.Errorf("attributes %+v", it.Attributes)
	}
	var svc map[string]string
	if err := json.Unmarshal(it.Service, &svc); err != nil || svc["javaSerialized"] == "" {
		t.Errorf("service %s", it.Service)
	}
	// A template by type and by Name matches it; one by another Name does not.
	it.ServiceID = "01234567-89ab-cdef-0123-456789abcdef"
	for _, c := range []struct {
		tmpl lookup.Template
		want bool
	}{
		{lookup.Template{Types: []string{"com.example.Hello"}}, true},
		{lookup.Template{Attributes: []lookup.Attribute{{Type: "net.jini.entry.AbstractEntry"}}}, true},
		{lookup.Template{Attributes: []lookup.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "hello-1"}}}}, true},
		{lookup.Template{Attributes: []lookup.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "other"}}}}, false},
	} {
		if got := c.tmpl.Matches(&it); got != c.want {
			t.Errorf("%+v matches: %v", c.tmpl, got)
		}
	}
	back, err := s.itemTo(it)
	if err != nil {
		t.Fatal(err)
	}
	orig := v.(*javaio.Object)
	for _, f := range []string{"attributeSets", "service"} {
		a, _ := orig.Get(f)
		b, _ := back.Get(f)
		if javaio.Dump(a) != javaio.Dump(b) {
			t.Errorf("%s changed:\n%s\n----\n%s", f, javaio.Dump(a), javaio.Dump(b))
		}
	}
}

// The template of a captured lookup call by Name.
func TestTemplateFromJava(t *testing.T) {
	s := newService(t)
	for _, name := range []string{"03-lookup-matches-req.bin", "04-lookup-matches-req.bin", "05-lookup-req.bin", "06-lookup-matches-req.bin"} {
		d := readCall(t, name)
		v, err := d.ReadObject()
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := s.templateFrom(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %+v", name, tmpl)
	}
}

// An entry an HTTP client gave, of a well-known class, goes to Java with
// Reggie's class tree; one of another class does not go at all.
func TestHTTPEntriesToJava(t *testing.T) {
	s := newService(t)
	rep, ok := s.entryTo(lookup.Attribute{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "printer-1"}})
	if !ok {
		t.Fatal("Name not sent")
	}
	d := readCall(t, "02-register-req.bin")
	v, _ := d.ReadObject()
	sets, _ := v.(*javaio.Object).Get("attributeSets")
	javas := sets.(*javaio.Array).Elems[0].(*javaio.Object)
	wantClass, _ := javas.Get("eclass")
	gotClass, _ := rep.Get("eclass")
	if javaio.Dump(wantClass) != javaio.Dump(gotClass) {
		t.Errorf("eclass:\n%s\nJava's:\n%s", javaio.Dump(gotClass), javaio.Dump(wantClass))
	}
	if _, ok := s.entryTo(lookup.Attribute{Type: "com.acme.Colour", Fields: map[string]any{"x": 1.0}}); ok {
		t.Error("an entry of an unknown class went to Java")
	}
}

// FuzzConvert: whatever object graph a Java client sends as an argument,
// converting it fails or succeeds, never panics or loops.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"02-register-req.bin", "03-lookup-matches-req.bin", "07-notify-req.bin", "08-register-req.bin"} {
		raw, err := os.ReadFile(captures + "jeri/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw[18:])
	}
	s := newService(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := javaio.NewDecoder(b)
		if err != nil {
			return
		}
		d.ReadLong()
		for range 3 {
			v, err := d.ReadObject()
			if err != nil {
				return
			}
			if it, err := s.itemFrom(v); err == nil {
				it.ServiceID = "01234567-89ab-cdef-0123-456789abcdef"
				s.itemTo(it)
			}
			s.templateFrom(v)
			s.entryFrom(v, true)
			listenerEndpoint(v)
		}
	})
}

package javaio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func collect(v Value, seen map[any]bool, classes map[string]*Class) {
	addc := func(c *Class) {
		for ; c != nil; c = c.Super {
			if !c.Proxy {
				classes[c.Name] = c
			} else {
				classes["proxy:"+strings.Join(c.Interfaces, ",")] = c
			}
		}
	}
	switch x := v.(type) {
	case *Object:
		if seen[x] {
			return
		}
		seen[x] = true
		addc(x.Class)
		for _, d := range x.Data {
			for _, f := range d.Fields {
				collect(f, seen, classes)
			}
			for _, f := range d.Custom {
				collect(f, seen, classes)
			}
		}
		// nested marshalled objBytes
		if ob, ok := x.Get("objBytes"); ok {
			if a, ok := ob.(*Array); ok {
				if inner, err := Decode(a.Prim); err == nil {
					collect(inner, seen, classes)
				}
			}
		}
	case *Array:
		if seen[x] {
			return
		}
		seen[x] = true
		addc(x.Class)
		for _, e := range x.Elems {
			collect(e, seen, classes)
		}
	case *Enum:
		addc(x.Class)
	}
}

// capturedClasses returns every class descriptor in the captured streams,
// by name (proxy classes under "proxy:" and their interfaces).
func capturedClasses(t testing.TB) map[string]*Class {
	files, _ := filepath.Glob("testdata/jeri/*.bin")
	classes := map[string]*Class{}
	seen := map[any]bool{}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		skip := 2
		if strings.HasSuffix(f, "-req.bin") {
			skip = 18
		}
		vs, err := readAll(t, raw[skip:])
		if err != nil {
			t.Fatal(f, err)
		}
		for _, v := range vs {
			collect(v, seen, classes)
		}
	}
	v2, _ := os.ReadFile("testdata/reggie-unicast-v2.bin")
	mi, _ := Decode(v2[36:])
	collect(mi, seen, classes)
	v1, _ := os.ReadFile("testdata/reggie-unicast-v1.bin")
	mo, _ := Decode(v1)
	collect(mo, seen, classes)
	return classes
}

// Every platform class the captures hold is in the JDK catalogue exactly
// as Java wrote it: name, serialVersionUID, flags, fields, superclass.
func TestJDKCatalogueMatchesCaptures(t *testing.T) {
	jdk := JDK()
	n := 0
	for name, c := range capturedClasses(t) {
		cc := jdk.Lookup(name)
		if cc == nil {
			continue
		}
		n++
		if got, want := FormatClasses([]*Class{cc}), FormatClasses([]*Class{c}); got != want {
			t.Errorf("catalogue:\n%s\ncaptured:\n%s", got, want)
		}
	}
	if n < 10 {
		t.Fatalf("only %d captured classes are in the catalogue", n)
	}
}

func TestParseCatalogueErrors(t *testing.T) {
	for _, text := range []string{
		"class A 1",
		"class A x 0x02",
		"  I value",
		"class A 1 0x02 extends B",
		"class A 1 0x02\n  Q x",
		"class A 1 0x02\n  L x",
		"class A 1 0x02\nclass A 1 0x02",
		"bogus",
	} {
		if _, err := ParseCatalogue(text, nil); err == nil {
			t.Errorf("%q parsed", text)
		}
	}
}

package javaio

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Catalogue holds class descriptors by name, read from text so that the
// classes of a Java implementation are data, not code:
//
//	# a comment
//	class java.lang.Exception -3387516993124229948 0x02 extends java.lang.Throwable
//	class java.lang.Throwable -3042686055658047285 0x03
//	  L cause Ljava/lang/Throwable;
//	  L detailMessage Ljava/lang/String;
//	proxy example.Foo example.Bar extends java.lang.reflect.Proxy
//
// A field line is its type code, name and, for L and [, JVM type. A
// superclass may be in the catalogue's parent. Descriptors from a
// catalogue are shared and must not be changed.
type Catalogue struct {
	parent  *Catalogue
	classes map[string]*Class
}

// ParseCatalogue reads a catalogue whose superclasses may also be found
// in parent (nil for none).
func ParseCatalogue(text string, parent *Catalogue) (*Catalogue, error) {
	cat := &Catalogue{parent: parent, classes: make(map[string]*Class)}
	supers := make(map[*Class]string)
	var cur *Class
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		bad := func(why string) error { return fmt.Errorf("catalogue line %d: %s: %q", i+1, why, line) }
		var super string
		if n := len(words); n >= 2 && words[n-2] == "extends" {
			super, words = words[n-1], words[:n-2]
		}
		switch {
		case words[0] == "class":
			if len(words) != 4 {
				return nil, bad("want: class NAME SUID FLAGS [extends SUPER]")
			}
			suid, err := strconv.ParseInt(words[2], 10, 64)
			if err != nil {
				return nil, bad("serialVersionUID")
			}
			flags, err := strconv.ParseUint(words[3], 0, 8)
			if err != nil {
				return nil, bad("flags")
			}
			cur = &Class{Name: words[1], SUID: suid, Flags: byte(flags)}
			if _, dup := cat.classes[cur.Name]; dup {
				return nil, bad("class listed twice")
			}
			cat.classes[cur.Name] = cur
		case words[0] == "proxy":
			if len(words) < 3 {
				return nil, bad("want: proxy NAME INTERFACE... extends SUPER")
			}
			cur = &Class{Proxy: true, Flags: scSerializable, Interfaces: words[2:]}
			cat.classes[words[1]] = cur
		case line[0] == ' ' || line[0] == '\t':
			if cur == nil || cur.Proxy {
				return nil, bad("field outside a class")
			}
			if len(words[0]) != 1 {
				return nil, bad("type code")
			}
			f := Field{Code: words[0][0], Name: words[1]}
			switch f.Code {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
				if len(words) != 2 {
					return nil, bad("a primitive field has no type")
				}
			case 'L', '[':
				if len(words) != 3 {
					return nil, bad("an object field needs its type")
				}
				f.Type = words[2]
			default:
				return nil, bad("type code")
			}
			cur.Fields = append(cur.Fields, f)
			continue
		default:
			return nil, bad("unknown line")
		}
		if super != "" {
			supers[cur] = super
		}
	}
	for c, name := range supers {
		s := cat.Lookup(name)
		if s == nil {
			return nil, fmt.Errorf("catalogue: superclass %s of %s is not listed", name, c)
		}
		c.Super = s
	}
	return cat, nil
}

// Lookup returns the named class, from the catalogue or its parents, or
// nil.
func (cat *Catalogue) Lookup(name string) *Class {
	for k := cat; k != nil; k = k.parent {
		if c, ok := k.classes[name]; ok {
			return c
		}
	}
	return nil
}

// Class returns the named class and panics if there is none: classes are
// named by jinid's own code, so a missing one is a bug a test finds.
func (cat *Catalogue) Class(name string) *Class {
	c := cat.Lookup(name)
	if c == nil {
		panic("javaio: class " + name + " is not in the catalogue")
	}
	return c
}

// FormatClasses writes descriptors in catalogue form, sorted by name.
func FormatClasses(classes []*Class) string {
	sort.Slice(classes, func(i, j int) bool { return classes[i].Name < classes[j].Name })
	var b strings.Builder
	for _, c := range classes {
		if c.Proxy {
			fmt.Fprintf(&b, "proxy ? %s", strings.Join(c.Interfaces, " "))
		} else {
			fmt.Fprintf(&b, "class %s %d 0x%02x", c.Name, c.SUID, c.Flags)
		}
		if c.Super != nil {
			fmt.Fprintf(&b, " extends %s", c.Super.Name)
		}
		b.WriteByte('\n')
		for _, f := range c.Fields {
			fmt.Fprintf(&b, "  %c %s", f.Code, f.Name)
			if f.Type != "" {
				fmt.Fprintf(&b, " %s", f.Type)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

//go:embed jdk.classes
var jdkText string

// JDK returns the catalogue of the Java platform classes jinid writes
// (exceptions, boxed numbers, collections, arrays).
var JDK = sync.OnceValue(func() *Catalogue {
	cat, err := ParseCatalogue(jdkText, nil)
	if err != nil {
		panic(err) // embedded data, checked by a test
	}
	return cat
})

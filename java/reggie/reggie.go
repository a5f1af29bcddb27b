// Package reggie is Reggie's side of the registrar as data: its proxy
// classes (items, templates, entries, service types) read from and made
// into Java objects, the well-known entry classes, and a client of a
// registrar over Jini ERI (Remote). It links no store and no service:
// the tools use it to read Java lookup services (jinid browse), the
// daemon's join manager to register in them, and java/javalookup, the
// registrar jinid serves to Java, builds on it.
package reggie

import (
	"crypto/sha1"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/lineage"
)

// Codec converts between Reggie's classes, in one lineage, and data.
type Codec struct {
	l       *lineage.Lineage
	entries map[string]*entryClass
}

// NewCodec returns the codec of lineage l.
func NewCodec(l *lineage.Lineage) (*Codec, error) {
	entries, err := parseEntries(entriesText)
	if err != nil {
		return nil, err
	}
	return &Codec{l: l, entries: entries}, nil
}

// Lineage is the codec's.
func (c *Codec) Lineage() *lineage.Lineage { return c.l }

// Known reports whether an entry class is a well-known one, whose fields
// jinid knows (entries.txt).
func (c *Codec) Known(class string) bool { return c.entries[class] != nil }

// EntryHash is a well-known entry class's hash, 0 for another.
func (c *Codec) EntryHash(class string) int64 {
	if e := c.entries[class]; e != nil {
		return e.hash
	}
	return 0
}

// ErrBadArgument is wrapped by errors about objects that do not have
// the shape of Reggie's classes (arguments a Java client sent, answers a
// registrar gave).
var ErrBadArgument = errors.New("bad argument")

// MaxTypes bounds the types and entry classes one tree may name.
const MaxTypes = 256

// JavaObject is every class's ancestor, which type lists leave out.
const JavaObject = "java.lang.Object"

//go:embed entries.txt
var entriesText string

// entryClass is a well-known entry class: its superclass and the fields
// it declares, in Reggie's order.
type entryClass struct {
	name, super string
	fields      []entryField
	hash        int64
}

type entryField struct{ name, typ string }

// parseEntries reads entries.txt and computes each class's hash.
func parseEntries(text string) (map[string]*entryClass, error) {
	out := make(map[string]*entryClass)
	var order []*entryClass
	var cur *entryClass
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		w := strings.Fields(line)
		switch {
		case len(w) == 0:
		case w[0] == "entry" && (len(w) == 2 || len(w) == 4 && w[2] == "extends"):
			cur = &entryClass{name: w[1]}
			if len(w) == 4 {
				cur.super = w[3]
			}
			out[cur.name] = cur
			order = append(order, cur)
		case cur != nil && len(w) == 2 && (line[0] == ' ' || line[0] == '\t'):
			cur.fields = append(cur.fields, entryField{w[0], w[1]})
		default:
			return nil, fmt.Errorf("entries line %d: %q", i+1, line)
		}
	}
	for _, c := range order {
		var super int64
		if c.super != "" {
			s, ok := out[c.super]
			if !ok {
				return nil, fmt.Errorf("entries: superclass %s of %s is not listed before it", c.super, c.name)
			}
			super = s.hash
		}
		c.hash = entryHash(c.super != "", super, c.name, c.fields)
	}
	return out, nil
}

// entryHash is Reggie's EntryClass hash: SHA-1 over the superclass's
// hash, the class name and its own fields' names and types.
func entryHash(hasSuper bool, super int64, name string, fields []entryField) int64 {
	var b []byte
	if hasSuper {
		b = binary.BigEndian.AppendUint64(b, uint64(super))
	}
	utf := func(s string) {
		b = binary.BigEndian.AppendUint16(b, uint16(javaio.ModifiedUTF8Len(s)))
		b = javaio.AppendModifiedUTF8(b, s)
	}
	utf(name)
	for _, f := range fields {
		utf(f.name)
		utf(f.typ)
	}
	sum := sha1.Sum(b)
	return int64(binary.LittleEndian.Uint64(sum[:8]))
}

// TypeHash is Reggie's ServiceType hash: SHA-1 over the name alone.
func TypeHash(name string) int64 { return entryHash(false, 0, name, nil) }

// allFields returns the fields of a well-known entry class and its
// superclasses, in the order Java sends their values.
func (c *Codec) allFields(name string) []entryField {
	var chain []*entryClass
	for e := c.entries[name]; e != nil; e = c.entries[e.super] {
		chain = append(chain, e)
		if len(chain) > MaxTypes {
			return nil
		}
	}
	var out []entryField
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i].fields...)
	}
	return out
}

// Field is an object's field value, nil when it has none.
func Field(o *javaio.Object, name string) javaio.Value {
	v, _ := o.Get(name)
	return v
}

// Object is v as an object of class (or a subclass), or an error saying
// what it is instead.
func Object(v javaio.Value, class string) (*javaio.Object, error) {
	o, ok := v.(*javaio.Object)
	if !ok || !o.Class.IsA(class) {
		return nil, fmt.Errorf("%w: want a %s, got %s", ErrBadArgument, class, Describe(v))
	}
	return o, nil
}

// Describe names what v is, for errors.
func Describe(v javaio.Value) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case *javaio.Object:
		return v.Class.String()
	case *javaio.Array:
		return v.Class.String()
	}
	return fmt.Sprintf("%T", v)
}

// Elems returns the elements of an object array, or none for null.
func Elems(v javaio.Value) ([]javaio.Value, error) {
	if v == nil {
		return nil, nil
	}
	a, ok := v.(*javaio.Array)
	if !ok || a.Prim != nil {
		return nil, fmt.Errorf("%w: want an array of objects, got %s", ErrBadArgument, Describe(v))
	}
	return a.Elems, nil
}

// ServiceIDFrom reads a Java ServiceID (null is "").
func (c *Codec) ServiceIDFrom(v javaio.Value) (string, error) {
	if v == nil {
		return "", nil
	}
	o, err := Object(v, "net.jini.core.lookup.ServiceID")
	if err != nil {
		return "", err
	}
	most, _ := Field(o, "mostSig").(int64)
	least, _ := Field(o, "leastSig").(int64)
	var id discovery.ServiceID
	binary.BigEndian.PutUint64(id[:8], uint64(most))
	binary.BigEndian.PutUint64(id[8:], uint64(least))
	return id.String(), nil
}

// TypeNames flattens a ServiceType tree into its names, the type's own
// first, without java.lang.Object (every type's ancestor).
func (c *Codec) TypeNames(v javaio.Value, out []string, seen map[*javaio.Object]bool) ([]string, error) {
	if v == nil {
		return out, nil
	}
	o, err := Object(v, c.l.Package+".ServiceType")
	if err != nil {
		return nil, err
	}
	if seen[o] {
		return out, nil
	}
	if seen[o] = true; len(seen) > MaxTypes {
		return nil, fmt.Errorf("%w: more than %d types", ErrBadArgument, MaxTypes)
	}
	name, _ := Field(o, "name").(string)
	if name == "" {
		return nil, fmt.Errorf("%w: a service type without a name", ErrBadArgument)
	}
	if name != JavaObject && !slices.Contains(out, name) {
		out = append(out, name)
	}
	if out, err = c.TypeNames(Field(o, "superclass"), out, seen); err != nil {
		return nil, err
	}
	ifaces, err := Elems(Field(o, "interfaces"))
	if err != nil {
		return nil, err
	}
	for _, i := range ifaces {
		if out, err = c.TypeNames(i, out, seen); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FieldNames names n field values of an entry class: by the schema for
// well-known classes, by position ("0", "1", ...) otherwise.
func (c *Codec) FieldNames(class string, n int) []string {
	if fs := c.allFields(class); len(fs) == n && c.entries[class] != nil {
		out := make([]string, n)
		for i, f := range fs {
			out[i] = f.name
		}
		return out
	}
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// View is a Java field value as HTTP clients see it and templates match
// it: strings, numbers and booleans as themselves, anything else as its
// serialized bytes.
func (c *Codec) View(v javaio.Value) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return v
	case *javaio.Object:
		if boxed(v.Class.Name) {
			x, _ := v.Get("value")
			switch x := x.(type) {
			case bool:
				return x
			case int8:
				return float64(x)
			case int16:
				return float64(x)
			case int32:
				return float64(x)
			case int64:
				return float64(x)
			case float32:
				return float64(x)
			case float64:
				return x
			case uint16:
				return string(rune(x))
			}
		}
		if v.Class.IsA("org.apache.river.proxy.MarshalledWrapper") {
			if inst, ok := Field(v, "instance").(*javaio.Object); ok {
				if ob, ok := Field(inst, "objBytes").(*javaio.Array); ok {
					return map[string]any{"javaSerialized": base64.StdEncoding.EncodeToString(ob.Prim)}
				}
			}
		}
	}
	b, err := javaio.Encode(v, false)
	if err != nil {
		return nil
	}
	return map[string]any{"javaSerialized": base64.StdEncoding.EncodeToString(b)}
}

// viewSize is about the bytes a View holds.
func viewSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case map[string]any:
		s, _ := v["javaSerialized"].(string)
		return len(s)
	}
	return 8
}

// boxed reports whether a class is a boxed primitive's.
func boxed(class string) bool {
	switch class {
	case "java.lang.Boolean", "java.lang.Byte", "java.lang.Character", "java.lang.Short",
		"java.lang.Integer", "java.lang.Long", "java.lang.Float", "java.lang.Double":
		return true
	}
	return false
}

// JavaValue is a JSON value as a Java field value: strings as String,
// whole numbers as Long, other numbers as Double, booleans as Boolean;
// anything else as its JSON text.
func (c *Codec) JavaValue(v any) javaio.Value {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return v
	case bool:
		return javaio.NewObject(c.l.Classes.Class("java.lang.Boolean")).Set("value", v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return javaio.NewObject(c.l.Classes.Class("java.lang.Long")).Set("value", int64(v))
		}
		return javaio.NewObject(c.l.Classes.Class("java.lang.Double")).Set("value", v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// EntryClassObject builds Reggie's EntryClass tree of a well-known entry
// class.
func (c *Codec) EntryClassObject(name string) *javaio.Object {
	e := c.entries[name]
	if e == nil {
		return nil
	}
	o := c.l.New("EntryClass").Set("name", e.name).Set("hash", e.hash).Set("numFields", int32(len(c.allFields(name))))
	if e.super != "" {
		o.Set("superclass", c.EntryClassObject(e.super))
	}
	return o
}

// Entry is an entry (an attribute of a service), as data: its class, its
// superclasses (java.lang.Object left out) and its fields by name
// (well-known classes) or position.
type Entry struct {
	Type       string
	Supertypes []string
	Fields     map[string]any
}

// ReadEntry reads an EntryRep. In a template, a null field is a
// wildcard and is left out of Fields. It returns the EntryRep object
// too, for callers that keep its Java form.
func (c *Codec) ReadEntry(v javaio.Value, template bool) (Entry, *javaio.Object, error) {
	return c.readEntry(v, template, nil)
}

// readEntry is ReadEntry spending b on what it makes of the fields.
func (c *Codec) readEntry(v javaio.Value, template bool, b *budget) (Entry, *javaio.Object, error) {
	rep, err := Object(v, c.l.Package+".EntryRep")
	if err != nil {
		return Entry{}, nil, err
	}
	ec, err := Object(Field(rep, "eclass"), c.l.Package+".EntryClass")
	if err != nil {
		return Entry{}, nil, err
	}
	var chain []string
	for k := ec; k != nil; {
		name, _ := Field(k, "name").(string)
		if name == "" || len(chain) > MaxTypes {
			return Entry{}, nil, fmt.Errorf("%w: entry class without a name, or too deep", ErrBadArgument)
		}
		chain = append(chain, name)
		sup := Field(k, "superclass")
		if sup == nil {
			break
		}
		if k, err = Object(sup, c.l.Package+".EntryClass"); err != nil {
			return Entry{}, nil, err
		}
	}
	e := Entry{Type: chain[0], Fields: map[string]any{}}
	for _, n := range chain[1:] {
		if n != JavaObject {
			e.Supertypes = append(e.Supertypes, n)
		}
	}
	values, err := Elems(Field(rep, "fields"))
	if err != nil {
		return Entry{}, nil, err
	}
	// An entry, its map and its chain of types.
	if err := b.take(256); err != nil {
		return Entry{}, nil, err
	}
	names := c.FieldNames(e.Type, len(values))
	for i, fv := range values {
		if fv == nil && template {
			continue
		}
		view := c.View(fv)
		if err := b.take(64 + viewSize(view)); err != nil {
			return Entry{}, nil, err
		}
		e.Fields[names[i]] = view
	}
	return e, rep, nil
}

// EntryRep is an entry of a well-known class as Reggie's EntryRep, its
// fields from e.Fields (one left out is null: a wildcard in a template);
// false for a class jinid does not know the fields of.
func (c *Codec) EntryRep(e Entry) (*javaio.Object, bool) {
	if c.entries[e.Type] == nil {
		return nil, false
	}
	fs := c.allFields(e.Type)
	arr := &javaio.Array{Class: c.l.Classes.Class("[Ljava.lang.Object;"), Elems: make([]javaio.Value, len(fs))}
	for i, f := range fs {
		if v, ok := e.Fields[f.name]; ok && v != nil {
			arr.Elems[i] = c.JavaValue(v)
		}
	}
	return c.l.New("EntryRep").Set("eclass", c.EntryClassObject(e.Type)).Set("fields", arr), true
}

// WrapString is a MarshalledWrapper holding a String: the service object
// Java gets for a service that is not a Java object (jinid gives its
// endpoint, or its JSON).
func (c *Codec) WrapString(v string) (*javaio.Object, error) {
	obj, err := javaio.Encode(v, false)
	if err != nil {
		return nil, err
	}
	return c.Wrap(obj), nil
}

// Wrap is Reggie's MarshalledWrapper around the object stream obj (no
// codebase annotations), as items carry their service objects.
func (c *Codec) Wrap(obj []byte) *javaio.Object {
	inst := javaio.NewObject(c.l.Classes.Class("org.apache.river.api.io.AtomicMarshalledInstance")).
		Set("hash", objHash(obj)).
		Set("objBytes", &javaio.Array{Class: c.l.Classes.Class("[B"), Prim: obj})
	return javaio.NewObject(c.l.Classes.Class("org.apache.river.proxy.MarshalledWrapper")).Set("instance", inst)
}

// MarshalledInstance is a net.jini.io.MarshalledInstance of lineage l
// holding the object stream obj (no codebase annotations).
func MarshalledInstance(l *lineage.Lineage, obj []byte) *javaio.Object {
	return javaio.NewObject(l.Classes.Class("net.jini.io.MarshalledInstance")).
		Set("hash", objHash(obj)).Set("objBytes", &javaio.Array{Class: l.Classes.Class("[B"), Prim: obj})
}

// objHash is MarshalledInstance's hash of its bytes.
func objHash(b []byte) int32 {
	var h int32
	for _, c := range b {
		h = 31*h + int32(int8(c))
	}
	return h
}

// ServiceIDObject is a ServiceID as Java's object.
func (c *Codec) ServiceIDObject(id discovery.ServiceID) *javaio.Object {
	return ServiceIDObject(c.l, id)
}

// ServiceIDObject is a ServiceID as Java's object, in lineage l.
func ServiceIDObject(l *lineage.Lineage, id discovery.ServiceID) *javaio.Object {
	return javaio.NewObject(l.Classes.Class("net.jini.core.lookup.ServiceID")).
		Set("mostSig", int64(binary.BigEndian.Uint64(id[:8]))).
		Set("leastSig", int64(binary.BigEndian.Uint64(id[8:])))
}

// ServiceObject reads the service object a MarshalledWrapper holds, or
// nil when it cannot.
func ServiceObject(v javaio.Value) javaio.Value {
	w, ok := v.(*javaio.Object)
	if !ok {
		return nil
	}
	inst, ok := Field(w, "instance").(*javaio.Object)
	if !ok {
		return nil
	}
	ob, ok := Field(inst, "objBytes").(*javaio.Array)
	if !ok || ob.Prim == nil {
		return nil
	}
	d, err := javaio.NewDecoder(ob.Prim)
	if err != nil {
		return nil
	}
	svc, err := d.ReadObject()
	if err != nil {
		return nil
	}
	return svc
}

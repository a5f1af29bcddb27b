package javalookup

import (
	"crypto/sha1"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/services/lookup"
)

// errArg is wrapped by errors about arguments a Java client sent that do
// not have the shape of Reggie's classes.
var errArg = errors.New("bad argument")

// maxTypes bounds the types and entry classes one tree may name.
const maxTypes = 256

const javaObject = "java.lang.Object"

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

// codec converts between Reggie's classes and jinid's lookup types, in
// one lineage: what the registrar served to Java and the client of a
// Java registrar (Remote) share.
type codec struct {
	l       *Lineage
	entries map[string]*entryClass
}

func newCodec(l *Lineage) (*codec, error) {
	entries, err := parseEntries(entriesText)
	if err != nil {
		return nil, err
	}
	return &codec{l: l, entries: entries}, nil
}

// typeHash is Reggie's ServiceType hash: SHA-1 over the name alone.
func typeHash(name string) int64 { return entryHash(false, 0, name, nil) }

// allFields returns the fields of a well-known entry class and its
// superclasses, in the order Java sends their values.
func (s *codec) allFields(name string) []entryField {
	var chain []*entryClass
	for c := s.entries[name]; c != nil; c = s.entries[c.super] {
		chain = append(chain, c)
		if len(chain) > maxTypes {
			return nil
		}
	}
	var out []entryField
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i].fields...)
	}
	return out
}

func field(o *javaio.Object, name string) javaio.Value {
	v, _ := o.Get(name)
	return v
}

func object(v javaio.Value, class string) (*javaio.Object, error) {
	o, ok := v.(*javaio.Object)
	if !ok || !o.Class.IsA(class) {
		return nil, fmt.Errorf("%w: want a %s, got %s", errArg, class, describe(v))
	}
	return o, nil
}

func describe(v javaio.Value) string {
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

// elems returns the elements of an object array, or none for null.
func elems(v javaio.Value) ([]javaio.Value, error) {
	if v == nil {
		return nil, nil
	}
	a, ok := v.(*javaio.Array)
	if !ok || a.Prim != nil {
		return nil, fmt.Errorf("%w: want an array of objects, got %s", errArg, describe(v))
	}
	return a.Elems, nil
}

func (s *codec) serviceIDFrom(v javaio.Value) (string, error) {
	if v == nil {
		return "", nil
	}
	o, err := object(v, "net.jini.core.lookup.ServiceID")
	if err != nil {
		return "", err
	}
	most, _ := field(o, "mostSig").(int64)
	least, _ := field(o, "leastSig").(int64)
	var id discovery.ServiceID
	binary.BigEndian.PutUint64(id[:8], uint64(most))
	binary.BigEndian.PutUint64(id[8:], uint64(least))
	return id.String(), nil
}

// typeNames flattens a ServiceType tree into its names, the type's own
// first, without java.lang.Object (every type's ancestor).
func (s *codec) typeNames(v javaio.Value, out []string, seen map[*javaio.Object]bool) ([]string, error) {
	if v == nil {
		return out, nil
	}
	o, err := object(v, s.l.Package+".ServiceType")
	if err != nil {
		return nil, err
	}
	if seen[o] {
		return out, nil
	}
	if seen[o] = true; len(seen) > maxTypes {
		return nil, fmt.Errorf("%w: more than %d types", errArg, maxTypes)
	}
	name, _ := field(o, "name").(string)
	if name == "" {
		return nil, fmt.Errorf("%w: a service type without a name", errArg)
	}
	if name != javaObject && !contains(out, name) {
		out = append(out, name)
	}
	if out, err = s.typeNames(field(o, "superclass"), out, seen); err != nil {
		return nil, err
	}
	ifaces, err := elems(field(o, "interfaces"))
	if err != nil {
		return nil, err
	}
	for _, i := range ifaces {
		if out, err = s.typeNames(i, out, seen); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// entryFrom converts an EntryRep. In a template, a null field is a
// wildcard and is left out of Fields.
func (s *codec) entryFrom(v javaio.Value, template bool) (lookup.Attribute, error) {
	rep, err := object(v, s.l.Package+".EntryRep")
	if err != nil {
		return lookup.Attribute{}, err
	}
	ec, err := object(field(rep, "eclass"), s.l.Package+".EntryClass")
	if err != nil {
		return lookup.Attribute{}, err
	}
	var chain []string
	for k := ec; k != nil; {
		name, _ := field(k, "name").(string)
		if name == "" || len(chain) > maxTypes {
			return lookup.Attribute{}, fmt.Errorf("%w: entry class without a name, or too deep", errArg)
		}
		chain = append(chain, name)
		sup := field(k, "superclass")
		if sup == nil {
			break
		}
		if k, err = object(sup, s.l.Package+".EntryClass"); err != nil {
			return lookup.Attribute{}, err
		}
	}
	a := lookup.Attribute{Type: chain[0], Fields: map[string]any{}}
	for _, n := range chain[1:] {
		if n != javaObject {
			a.Supertypes = append(a.Supertypes, n)
		}
	}
	values, err := elems(field(rep, "fields"))
	if err != nil {
		return lookup.Attribute{}, err
	}
	names := s.fieldNames(a.Type, len(values))
	for i, fv := range values {
		if fv == nil && template {
			continue
		}
		a.Fields[names[i]] = s.view(fv)
	}
	// What Java needs back: the class tree and the values with their
	// Java types.
	je := &lookup.JavaEntry{}
	if je.Class, err = javaio.Encode(ec, false); err != nil {
		return lookup.Attribute{}, err
	}
	if je.Values, err = javaio.Encode(field(rep, "fields"), false); err != nil {
		return lookup.Attribute{}, err
	}
	if cb, ok := field(rep, "codebase").(string); ok {
		je.Codebase = &cb
	}
	a.Java = je
	return a, nil
}

// fieldNames names n field values of an entry class: by the schema for
// well-known classes, by position ("0", "1", ...) otherwise.
func (s *codec) fieldNames(class string, n int) []string {
	if fs := s.allFields(class); len(fs) == n && s.entries[class] != nil {
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

// view is a Java field value as HTTP clients see it and templates match
// it: strings, numbers and booleans as themselves, anything else as its
// serialized bytes.
func (s *codec) view(v javaio.Value) any {
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
			if inst, ok := field(v, "instance").(*javaio.Object); ok {
				if ob, ok := field(inst, "objBytes").(*javaio.Array); ok {
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

// boxed reports whether a class is a boxed primitive's.
func boxed(class string) bool {
	switch class {
	case "java.lang.Boolean", "java.lang.Byte", "java.lang.Character", "java.lang.Short",
		"java.lang.Integer", "java.lang.Long", "java.lang.Float", "java.lang.Double":
		return true
	}
	return false
}

// itemFrom converts a Reggie Item a Java client registers.
func (s *codec) itemFrom(v javaio.Value) (lookup.Item, error) {
	o, err := object(v, s.l.Package+".Item")
	if err != nil {
		return lookup.Item{}, err
	}
	var it lookup.Item
	if it.ServiceID, err = s.serviceIDFrom(field(o, "serviceID")); err != nil {
		return lookup.Item{}, err
	}
	if it.Types, err = s.typeNames(field(o, "serviceType"), nil, map[*javaio.Object]bool{}); err != nil {
		return lookup.Item{}, err
	}
	sets, err := elems(field(o, "attributeSets"))
	if err != nil {
		return lookup.Item{}, err
	}
	for _, e := range sets {
		a, err := s.entryFrom(e, false)
		if err != nil {
			return lookup.Item{}, err
		}
		it.Attributes = append(it.Attributes, a)
	}
	svc := field(o, "service")
	ji := &lookup.JavaItem{}
	if ji.Service, err = javaio.Encode(svc, false); err != nil {
		return lookup.Item{}, err
	}
	if st := field(o, "serviceType"); st != nil {
		if ji.Type, err = javaio.Encode(st, false); err != nil {
			return lookup.Item{}, err
		}
	}
	if bp := field(o, "bootstrapProxy"); bp != nil {
		if ji.BootstrapProxy, err = javaio.Encode(bp, false); err != nil {
			return lookup.Item{}, err
		}
	}
	if cb, ok := field(o, "codebase").(string); ok {
		ji.Codebase = &cb
	}
	it.Java = ji
	if str, ok := serviceObject(svc).(string); ok {
		// A string for a service object is what jinid registers for an
		// item with an endpoint (itemTo): read back the same way.
		if u, err := url.Parse(str); err == nil && u.Scheme != "" && u.Host != "" {
			it.Endpoint = str
		}
		it.Service, err = json.Marshal(str)
		return it, err
	}
	if it.Service, err = json.Marshal(s.view(svc)); err != nil {
		return lookup.Item{}, err
	}
	return it, nil
}

// templateFrom converts a Reggie Template.
func (s *codec) templateFrom(v javaio.Value) (lookup.Template, error) {
	o, err := object(v, s.l.Package+".Template")
	if err != nil {
		return lookup.Template{}, err
	}
	var t lookup.Template
	if t.ServiceID, err = s.serviceIDFrom(field(o, "serviceID")); err != nil {
		return lookup.Template{}, err
	}
	types, err := elems(field(o, "serviceTypes"))
	if err != nil {
		return lookup.Template{}, err
	}
	for _, ty := range types {
		st, err := object(ty, s.l.Package+".ServiceType")
		if err != nil {
			return lookup.Template{}, err
		}
		// A template type matches items of it and of its subtypes: its
		// own name is enough, since items list their supertypes.
		if name, _ := field(st, "name").(string); name != javaObject && name != "" {
			t.Types = append(t.Types, name)
		}
	}
	attrs, err := elems(field(o, "attributeSetTemplates"))
	if err != nil {
		return lookup.Template{}, err
	}
	for _, e := range attrs {
		if e == nil {
			continue
		}
		a, err := s.entryFrom(e, true)
		if err != nil {
			return lookup.Template{}, err
		}
		a.Java = nil
		t.Attributes = append(t.Attributes, a)
	}
	return t, nil
}

// entryTo is an entry as Java reads it: its Java form when a Java client
// sent it (with values HTTP changed since taken from Fields), the
// schema's form for a well-known entry an HTTP client sent, and nothing
// (false) for other entries, whose classes Java could not load.
func (s *codec) entryTo(a lookup.Attribute) (*javaio.Object, bool) {
	rep := s.l.New("EntryRep")
	if a.Java != nil {
		ec, err := javaio.Decode(a.Java.Class)
		if err != nil {
			return nil, false
		}
		vals, err := javaio.Decode(a.Java.Values)
		if err != nil {
			return nil, false
		}
		arr, ok := vals.(*javaio.Array)
		if !ok {
			return nil, false
		}
		names := s.fieldNames(a.Type, len(arr.Elems))
		for i, v := range arr.Elems {
			want, ok := a.Fields[names[i]]
			if !ok {
				arr.Elems[i] = nil
			} else if !sameView(s.view(v), want) {
				arr.Elems[i] = s.javaValue(want)
			}
		}
		rep.Set("eclass", ec).Set("fields", arr)
		if a.Java.Codebase != nil {
			rep.Set("codebase", *a.Java.Codebase)
		}
		return rep, true
	}
	if s.entries[a.Type] == nil {
		return nil, false
	}
	fs := s.allFields(a.Type)
	arr := &javaio.Array{Class: s.l.Classes.Class("[Ljava.lang.Object;"), Elems: make([]javaio.Value, len(fs))}
	for i, f := range fs {
		if v, ok := a.Fields[f.name]; ok && v != nil {
			arr.Elems[i] = s.javaValue(v)
		}
	}
	return rep.Set("eclass", s.entryClassObject(a.Type)).Set("fields", arr), true
}

// sameView compares two views of a field value; strings, the common
// case, without encoding them.
func sameView(a, b any) bool {
	if x, ok := a.(string); ok {
		y, ok := b.(string)
		return ok && x == y
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// javaValue is a JSON value as a Java field value: strings as String,
// whole numbers as Long, other numbers as Double, booleans as Boolean;
// anything else as its JSON text.
func (s *codec) javaValue(v any) javaio.Value {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return v
	case bool:
		return javaio.NewObject(s.l.Classes.Class("java.lang.Boolean")).Set("value", v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return javaio.NewObject(s.l.Classes.Class("java.lang.Long")).Set("value", int64(v))
		}
		return javaio.NewObject(s.l.Classes.Class("java.lang.Double")).Set("value", v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// entryClassObject builds Reggie's EntryClass tree of a well-known entry
// class.
func (s *codec) entryClassObject(name string) *javaio.Object {
	c := s.entries[name]
	if c == nil {
		return nil
	}
	o := s.l.New("EntryClass").Set("name", c.name).Set("hash", c.hash).Set("numFields", int32(len(s.allFields(name))))
	if c.super != "" {
		o.Set("superclass", s.entryClassObject(c.super))
	}
	return o
}

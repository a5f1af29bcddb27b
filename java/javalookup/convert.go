package javalookup

import (
	_ "embed"
	"encoding/json"
	"net/url"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/lookup"
)

// codec converts between Reggie's classes and jinid's lookup types,
// keeping what Java sent (its entries' and items' own Java form) for
// Java clients; the conversions of data are reggie's.
type codec struct {
	*reggie.Codec
	l *Lineage
}

func newCodec(l *Lineage) (*codec, error) {
	c, err := reggie.NewCodec(l.Lineage)
	if err != nil {
		return nil, err
	}
	return &codec{Codec: c, l: l}, nil
}

// entryFrom converts an EntryRep. In a template, a null field is a
// wildcard and is left out of Fields.
func (s *codec) entryFrom(v javaio.Value, template bool) (lookup.Attribute, error) {
	e, rep, err := s.ReadEntry(v, template)
	if err != nil {
		return lookup.Attribute{}, err
	}
	a := lookup.Attribute{Type: e.Type, Supertypes: e.Supertypes, Fields: e.Fields}
	// What Java needs back: the class tree and the values with their
	// Java types.
	je := &lookup.JavaEntry{}
	if je.Class, err = javaio.Encode(reggie.Field(rep, "eclass"), false); err != nil {
		return lookup.Attribute{}, err
	}
	if je.Values, err = javaio.Encode(reggie.Field(rep, "fields"), false); err != nil {
		return lookup.Attribute{}, err
	}
	if cb, ok := reggie.Field(rep, "codebase").(string); ok {
		je.Codebase = &cb
	}
	a.Java = je
	return a, nil
}

// itemFrom converts a Reggie Item a Java client registers.
func (s *codec) itemFrom(v javaio.Value) (lookup.Item, error) {
	o, err := reggie.Object(v, s.l.Package+".Item")
	if err != nil {
		return lookup.Item{}, err
	}
	var it lookup.Item
	if it.ServiceID, err = s.ServiceIDFrom(reggie.Field(o, "serviceID")); err != nil {
		return lookup.Item{}, err
	}
	if it.Types, err = s.TypeNames(reggie.Field(o, "serviceType"), nil, map[*javaio.Object]bool{}); err != nil {
		return lookup.Item{}, err
	}
	sets, err := reggie.Elems(reggie.Field(o, "attributeSets"))
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
	svc := reggie.Field(o, "service")
	ji := &lookup.JavaItem{}
	if ji.Service, err = javaio.Encode(svc, false); err != nil {
		return lookup.Item{}, err
	}
	if st := reggie.Field(o, "serviceType"); st != nil {
		if ji.Type, err = javaio.Encode(st, false); err != nil {
			return lookup.Item{}, err
		}
	}
	if bp := reggie.Field(o, "bootstrapProxy"); bp != nil {
		if ji.BootstrapProxy, err = javaio.Encode(bp, false); err != nil {
			return lookup.Item{}, err
		}
	}
	if cb, ok := reggie.Field(o, "codebase").(string); ok {
		ji.Codebase = &cb
	}
	it.Java = ji
	if str, ok := reggie.ServiceObject(svc).(string); ok {
		// A string for a service object is what jinid registers for an
		// item with an endpoint (itemTo): read back the same way.
		if u, err := url.Parse(str); err == nil && u.Scheme != "" && u.Host != "" {
			it.Endpoint = str
		}
		it.Service, err = json.Marshal(str)
		return it, err
	}
	if it.Service, err = json.Marshal(s.View(svc)); err != nil {
		return lookup.Item{}, err
	}
	return it, nil
}

// templateFrom converts a Reggie Template.
func (s *codec) templateFrom(v javaio.Value) (lookup.Template, error) {
	o, err := reggie.Object(v, s.l.Package+".Template")
	if err != nil {
		return lookup.Template{}, err
	}
	var t lookup.Template
	if t.ServiceID, err = s.ServiceIDFrom(reggie.Field(o, "serviceID")); err != nil {
		return lookup.Template{}, err
	}
	types, err := reggie.Elems(reggie.Field(o, "serviceTypes"))
	if err != nil {
		return lookup.Template{}, err
	}
	for _, ty := range types {
		st, err := reggie.Object(ty, s.l.Package+".ServiceType")
		if err != nil {
			return lookup.Template{}, err
		}
		// A template type matches items of it and of its subtypes: its
		// own name is enough, since items list their supertypes.
		if name, _ := reggie.Field(st, "name").(string); name != reggie.JavaObject && name != "" {
			t.Types = append(t.Types, name)
		}
	}
	attrs, err := reggie.Elems(reggie.Field(o, "attributeSetTemplates"))
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
		names := s.FieldNames(a.Type, len(arr.Elems))
		for i, v := range arr.Elems {
			want, ok := a.Fields[names[i]]
			if !ok {
				arr.Elems[i] = nil
			} else if !sameView(s.View(v), want) {
				arr.Elems[i] = s.JavaValue(want)
			}
		}
		rep.Set("eclass", ec).Set("fields", arr)
		if a.Java.Codebase != nil {
			rep.Set("codebase", *a.Java.Codebase)
		}
		return rep, true
	}
	return s.EntryRep(reggie.Entry{Type: a.Type, Fields: a.Fields})
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

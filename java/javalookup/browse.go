package javalookup

import (
	"slices"
	"strings"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/lookup"
)

// The browsing calls (ServiceRegistrar.getServiceTypes, getEntryClasses
// and getFieldValues), as Reggie answers them: over every item matching
// the template, the most specific types (entry classes) that are not a
// template's type (class) or a supertype of one, and the distinct values
// of one field.

// maxBrowse bounds the items one browsing call looks at.
const maxBrowse = 10_000

// matching returns every item matching t, up to maxBrowse.
func (k *call) matching(t lookup.Template) ([]lookup.Item, error) {
	var out []lookup.Item
	after := ""
	for len(out) < maxBrowse {
		items, _, next, err := k.s.cfg.Registrar.Page(t, after, maxBrowse-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			break
		}
		after = next
	}
	return out, nil
}

// typeTree is a node of a service type or entry class hierarchy, as
// Reggie's ServiceType or EntryClass object.
type typeTree struct {
	obj     *javaio.Object
	name    string
	parents []*typeTree
}

// tree reads a ServiceType or EntryClass object graph.
func (s *codec) tree(v javaio.Value, seen map[*javaio.Object]*typeTree) *typeTree {
	o, ok := v.(*javaio.Object)
	if !ok || len(seen) > reggie.MaxTypes {
		return nil
	}
	if t, ok := seen[o]; ok {
		return t
	}
	name, _ := reggie.Field(o, "name").(string)
	t := &typeTree{obj: o, name: name}
	seen[o] = t
	if p := s.tree(reggie.Field(o, "superclass"), seen); p != nil {
		t.parents = append(t.parents, p)
	}
	ifaces, _ := reggie.Elems(reggie.Field(o, "interfaces"))
	for _, i := range ifaces {
		if p := s.tree(i, seen); p != nil {
			t.parents = append(t.parents, p)
		}
	}
	return t
}

// closure returns the names of t and all its ancestors.
func closure(t *typeTree, out map[string]bool) {
	if t == nil || out[t.name] || len(out) > reggie.MaxTypes {
		return
	}
	out[t.name] = true
	for _, p := range t.parents {
		closure(p, out)
	}
}

// mostSpecific adds to found the most specific types of t that have the
// prefix and are not among excluded, as Reggie's addTypes does.
func mostSpecific(t *typeTree, prefix string, excluded map[string]bool, found map[string]*typeTree, order *[]string, visited map[*typeTree]bool) {
	if t == nil || visited[t] || len(visited) > reggie.MaxTypes {
		return
	}
	visited[t] = true
	if strings.HasPrefix(t.name, prefix) && !excluded[t.name] {
		if _, ok := found[t.name]; !ok {
			found[t.name] = t
			*order = append(*order, t.name)
		}
		return
	}
	for _, p := range t.parents {
		mostSpecific(p, prefix, excluded, found, order, visited)
	}
}

// itemTypes is an item's type tree: the Java one kept, or for an HTTP
// item each of its types as a type of its own.
func (s *codec) itemTypes(it lookup.Item) []*typeTree {
	if it.Java != nil && it.Java.Type != nil {
		if v, err := javaio.Decode(it.Java.Type); err == nil {
			if t := s.tree(v, map[*javaio.Object]*typeTree{}); t != nil {
				return []*typeTree{t}
			}
		}
	}
	var out []*typeTree
	for _, name := range it.Types {
		out = append(out, &typeTree{name: name, obj: s.l.New("ServiceType").Set("name", name).Set("hash", reggie.TypeHash(name))})
	}
	return out
}

func (k *call) getServiceTypes() jeri.Reply {
	v, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	pv, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	prefix, _ := pv.(string)
	t, err := k.s.templateFrom(v)
	if err != nil {
		return argError(err)
	}
	// Types a template names, and their supertypes, are not news.
	excluded := map[string]bool{}
	if tmplObj, ok := v.(*javaio.Object); ok {
		types, _ := reggie.Elems(reggie.Field(tmplObj, "serviceTypes"))
		for _, ty := range types {
			closure(k.s.tree(ty, map[*javaio.Object]*typeTree{}), excluded)
		}
	}
	items, err := k.matching(t)
	if err != nil {
		return k.faultReply(err)
	}
	found := map[string]*typeTree{}
	codebase := map[string]string{}
	var order []string
	for _, it := range items {
		for _, tt := range k.s.itemTypes(it) {
			mostSpecific(tt, prefix, excluded, found, &order, map[*typeTree]bool{})
		}
		if it.Java != nil && it.Java.Codebase != nil {
			for _, n := range order {
				if _, ok := codebase[n]; !ok {
					codebase[n] = *it.Java.Codebase
				}
			}
		}
	}
	if len(items) == 0 {
		return returnObject(nil)
	}
	return returnObject(k.bases("ServiceTypeBase", "type", order, found, codebase))
}

// bases is Reggie's array of ServiceTypeBase or EntryClassBase: each type
// found, in order, with the codebase it came with.
func (k *call) bases(class, field string, order []string, found map[string]*typeTree, codebase map[string]string) *javaio.Array {
	out := &javaio.Array{Class: k.s.l.Classes.Class("[L" + k.s.l.Package + "." + class + ";")}
	for _, n := range order {
		b := k.s.l.New(class).Set(field, found[n].obj)
		if cb, ok := codebase[n]; ok {
			b.Set("codebase", cb)
		}
		out.Elems = append(out.Elems, b)
	}
	return out
}

// entryTree is an attribute's class hierarchy as Reggie's EntryClass
// objects.
func (s *codec) entryTree(a lookup.Attribute) *typeTree {
	var v javaio.Value
	if a.Java != nil {
		v, _ = javaio.Decode(a.Java.Class)
	} else if s.Known(a.Type) {
		v = s.EntryClassObject(a.Type)
	}
	if v == nil {
		return nil
	}
	return s.tree(v, map[*javaio.Object]*typeTree{})
}

func (k *call) getEntryClasses() jeri.Reply {
	t, err := k.template()
	if err != nil {
		return argError(err)
	}
	excluded := map[string]bool{reggie.JavaObject: true}
	for _, a := range t.Attributes {
		excluded[a.Type] = true
		for _, sup := range a.Supertypes {
			excluded[sup] = true
		}
	}
	items, err := k.matching(t)
	if err != nil {
		return k.faultReply(err)
	}
	found := map[string]*typeTree{}
	codebase := map[string]string{}
	var order []string
	for _, it := range items {
		for _, a := range it.Attributes {
			mostSpecific(k.s.entryTree(a), "", excluded, found, &order, map[*typeTree]bool{})
			if a.Java != nil && a.Java.Codebase != nil {
				if _, ok := codebase[a.Type]; !ok {
					codebase[a.Type] = *a.Java.Codebase
				}
			}
		}
	}
	if len(items) == 0 {
		return returnObject(nil)
	}
	return returnObject(k.bases("EntryClassBase", "eclass", order, found, codebase))
}

func (k *call) getFieldValues() jeri.Reply {
	v, err := k.readObject()
	if err != nil {
		return argError(err)
	}
	setIndex, err := k.c.Args.ReadInt()
	if err != nil {
		return argError(err)
	}
	fieldIndex, err := k.c.Args.ReadInt()
	if err != nil {
		return argError(err)
	}
	t, err := k.s.templateFrom(v)
	if err != nil {
		return argError(err)
	}
	if setIndex < 0 || int(setIndex) >= len(t.Attributes) {
		return jeri.Throw(jeri.NewException("java.lang.IllegalArgumentException", "attribute set index out of range"))
	}
	want := t.Attributes[setIndex]
	items, err := k.matching(t)
	if err != nil {
		return k.faultReply(err)
	}
	var values []javaio.Value
	var seen []any
	for _, it := range items {
		for _, a := range it.Attributes {
			if a.Type != want.Type && !slices.Contains(a.Supertypes, want.Type) {
				continue
			}
			rep, ok := k.s.entryTo(a)
			if !ok {
				continue
			}
			fs, _ := reggie.Elems(reggie.Field(rep, "fields"))
			if fieldIndex < 0 || int(fieldIndex) >= len(fs) || fs[fieldIndex] == nil {
				continue
			}
			view := k.s.View(fs[fieldIndex])
			dup := false
			for _, s := range seen {
				if sameView(s, view) {
					dup = true
					break
				}
			}
			if !dup {
				seen = append(seen, view)
				values = append(values, fs[fieldIndex])
			}
		}
	}
	if len(items) == 0 {
		return returnObject(nil)
	}
	out := &javaio.Array{Class: k.s.l.Classes.Class("[Ljava.lang.Object;"), Elems: values}
	return returnObject(out)
}

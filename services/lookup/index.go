package lookup

import (
	"encoding/json"
	"strconv"
)

// index finds the items a template may match without walking them all:
// by type (every type an item names), by entry class (an entry's type
// and each of its supertypes) and by an entry's scalar field value. A
// query takes the smallest of the sets its template names and applies
// the matching rules to those alone, so that its cost follows what it
// matches, not the registry's size (a scan took 106 ms among 100,000
// items, where a lookup by type and name now takes about a microsecond).
// The rules are unchanged: the index only narrows what they are applied
// to. Guarded by the Registrar's mu.
//
// It is one map, of one key type, and sets that are slices while small:
// the router build's size counts (docs/performance.md).
type index map[string]*itemSet

// The keys: a type an item names, an entry class an item has, a field
// value of entries of a class. (One string: a struct of strings as a map
// key costs the router build its own hash and equality code.)
func typeKey(ty string) string               { return "t\x00" + ty }
func entryKey(class string) string           { return "e\x00" + class }
func fieldKey(class, field, v string) string { return "f\x00" + class + "\x00" + field + "\x00" + v }

// itemSet is a set of items: one alone (most field values are one
// item's: a map each cost 300 bytes an item more), or a map.
type itemSet struct {
	one  *storedItem
	many map[*storedItem]struct{}
}

func (s *itemSet) len() int {
	switch {
	case s == nil:
		return 0
	case s.one != nil:
		return 1
	}
	return len(s.many)
}

func (s *itemSet) add(si *storedItem) {
	switch {
	case s.many != nil:
		s.many[si] = struct{}{}
	case s.one == nil:
		s.one = si
	case s.one != si:
		s.many = map[*storedItem]struct{}{s.one: {}, si: {}}
		s.one = nil
	}
}

func (s *itemSet) remove(si *storedItem) {
	if s.one == si {
		s.one = nil
	}
	delete(s.many, si)
}

// everywhere says whether nearly every item has a class (every entry
// extends AbstractEntry, Java proxies are Serializable): it is not
// indexed, which would cost a set of every item and narrow nothing. A
// template naming one is narrowed by its other parts, or scans.
func everywhere(class string) bool {
	return class == "net.jini.entry.AbstractEntry" || class == "java.io.Serializable"
}

// keys calls f with each key si is filed under.
func keys(si *storedItem, f func(string)) {
	for _, ty := range si.Item.Types {
		if !everywhere(ty) {
			f(typeKey(ty))
		}
	}
	for _, a := range si.Item.Attributes {
		for i := -1; i < len(a.Supertypes); i++ {
			class := a.Type
			if i >= 0 {
				class = a.Supertypes[i]
			}
			if everywhere(class) {
				continue
			}
			f(entryKey(class))
			for name, v := range a.Fields {
				if k, ok := scalarKey(v); ok {
					f(fieldKey(class, name, k))
				}
			}
		}
	}
}

// add files si under every key it has; remove takes it out of them.
func (x index) add(si *storedItem)    { x.file(si, true) }
func (x index) remove(si *storedItem) { x.file(si, false) }

func (x index) file(si *storedItem, add bool) {
	keys(si, func(k string) {
		s := x[k]
		switch {
		case add && s == nil:
			s = &itemSet{}
			x[k] = s
			fallthrough
		case add:
			s.add(si)
		case s != nil:
			if s.remove(si); s.len() == 0 {
				delete(x, k)
			}
		}
	})
}

// scalarKey is a field value as an index key, for the values the
// matching rules compare as scalars (valueEqual): strings, booleans and
// numbers (whatever decoded them). Others are not indexed.
func scalarKey(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return "s" + x, true
	case bool:
		if x {
			return "btrue", true
		}
		return "bfalse", true
	case float64, json.Number, int, int64:
		return "n" + strconv.FormatFloat(normalize(x).(float64), 'g', -1, 64), true
	}
	return "", false
}

// candidates returns the smallest set of items the template's parts
// name, which every match is in (nil: none can match); all says the
// template names none (every item is a candidate).
func (x index) candidates(t *Template) (set *itemSet, all bool) {
	all = true
	pick := func(s *itemSet) {
		if all || s.len() < set.len() {
			set, all = s, false
		}
	}
	for _, ty := range t.Types {
		if !everywhere(ty) {
			pick(x[typeKey(ty)])
		}
	}
	for _, a := range t.Attributes {
		if everywhere(a.Type) {
			continue
		}
		best := x[entryKey(a.Type)]
		for name, v := range a.Fields {
			if k, ok := scalarKey(v); ok {
				if s := x[fieldKey(a.Type, name, k)]; s.len() < best.len() {
					best = s
				}
			}
		}
		pick(best)
	}
	return set, all
}

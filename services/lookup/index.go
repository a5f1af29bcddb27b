package lookup

import (
	"encoding/json"
	"slices"
	"strconv"
)

// index finds the items a template may match without walking them all:
// by type (every type an item names), by entry class (an entry's type
// and each of its supertypes) and by an entry's scalar field value. A
// query takes the smallest of the sets its template names and applies
// the matching rules to those alone, so that its cost follows what it
// matches, not the registry's size (a scan got 5-8 times slower from 1,000
// to 100,000 items). The rules are unchanged: the index only narrows
// what they are applied to. Guarded by the Registrar's mu.
type index struct {
	byType  map[string]*itemSet
	byEntry map[string]*itemSet
	byField map[fieldKey]*itemSet
}

// itemSet is a set of items: a slice while small (most field values are
// one item's: a map each cost 300 bytes an item more), a map beyond.
type itemSet struct {
	few  []*storedItem
	many map[*storedItem]struct{}
}

const fewItems = 8

func (s *itemSet) len() int {
	if s == nil {
		return 0
	}
	return len(s.few) + len(s.many)
}

func (s *itemSet) add(si *storedItem) {
	switch {
	case s.many != nil:
		s.many[si] = struct{}{}
	case len(s.few) < fewItems:
		if !slices.Contains(s.few, si) {
			s.few = append(s.few, si)
		}
	default:
		s.many = make(map[*storedItem]struct{}, 2*fewItems)
		for _, o := range s.few {
			s.many[o] = struct{}{}
		}
		s.many[si] = struct{}{}
		s.few = nil
	}
}

func (s *itemSet) remove(si *storedItem) {
	if s.many != nil {
		delete(s.many, si)
		return
	}
	if i := slices.Index(s.few, si); i >= 0 {
		s.few = slices.Delete(s.few, i, i+1)
	}
}

// all yields the set's items.
func (s *itemSet) all(yield func(*storedItem) bool) {
	for _, si := range s.few {
		if !yield(si) {
			return
		}
	}
	for si := range s.many {
		if !yield(si) {
			return
		}
	}
}

// everywhere are classes nearly every item has (every entry extends
// AbstractEntry; Java proxies are Serializable, most are Remote and
// RemoteMethodControl): they are not indexed, which would cost a set
// holding every item and narrow nothing. A template naming one is
// narrowed by its other parts, or scans.
var everywhere = map[string]bool{
	"java.lang.Object": true, "java.io.Serializable": true, "java.rmi.Remote": true,
	"net.jini.entry.AbstractEntry": true, "net.jini.core.entry.Entry": true,
	"net.jini.core.constraint.RemoteMethodControl": true, "net.jini.security.proxytrust.TrustEquivalence": true,
}

// fieldKey is one field value of entries of one class (a type or a
// supertype of theirs).
type fieldKey struct{ class, field, value string }

func newIndex() index {
	return index{byType: map[string]*itemSet{}, byEntry: map[string]*itemSet{}, byField: map[fieldKey]*itemSet{}}
}

// add files si under every key it has; remove takes it out of them.
func (x *index) add(si *storedItem)    { x.each(si, func(s *itemSet) { s.add(si) }, true) }
func (x *index) remove(si *storedItem) { x.each(si, func(s *itemSet) { s.remove(si) }, false) }

// each calls f on the set of every key of si (made when create is set),
// and drops the sets left empty.
func (x *index) each(si *storedItem, f func(*itemSet), create bool) {
	visit := func(get func() *itemSet, drop func()) {
		s := get()
		if s == nil {
			return
		}
		f(s)
		if s.len() == 0 {
			drop()
		}
	}
	it := &si.Item
	for _, ty := range it.Types {
		if everywhere[ty] {
			continue
		}
		visit(func() *itemSet { return setOf(x.byType, ty, create) }, func() { delete(x.byType, ty) })
	}
	for _, a := range it.Attributes {
		for _, class := range append([]string{a.Type}, a.Supertypes...) {
			if everywhere[class] {
				continue
			}
			visit(func() *itemSet { return setOf(x.byEntry, class, create) }, func() { delete(x.byEntry, class) })
			for name, v := range a.Fields {
				k, ok := scalarKey(v)
				if !ok {
					continue
				}
				fk := fieldKey{class, name, k}
				visit(func() *itemSet { return setOf(x.byField, fk, create) }, func() { delete(x.byField, fk) })
			}
		}
	}
}

func setOf[K comparable](m map[K]*itemSet, k K, create bool) *itemSet {
	s := m[k]
	if s == nil && create {
		s = &itemSet{}
		m[k] = s
	}
	return s
}

// scalarKey is a field value as an index key, for the values the
// matching rules compare as scalars (valueEqual): strings, booleans and
// numbers (whatever decoded them). Others are not indexed.
func scalarKey(v any) (string, bool) {
	switch v.(type) {
	case string, bool, float64, json.Number, int, int64:
	default:
		return "", false
	}
	switch x := normalize(v).(type) {
	case string:
		return "s" + x, true
	case bool:
		return "b" + strconv.FormatBool(x), true
	case float64:
		return "n" + strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// candidates returns the smallest set of items the template's parts
// name, which every match is in; all says the template names none (every
// item is a candidate).
func (x *index) candidates(t *Template) (set *itemSet, all bool) {
	none := &itemSet{}
	pick := func(s *itemSet) {
		if s == nil {
			s = none // no item has it: nothing matches
		}
		if all || s.len() < set.len() {
			set, all = s, false
		}
	}
	all = true
	for _, ty := range t.Types {
		if !everywhere[ty] {
			pick(x.byType[ty])
		}
	}
	for _, a := range t.Attributes {
		if everywhere[a.Type] {
			continue
		}
		best, named := x.byEntry[a.Type], false
		for name, v := range a.Fields {
			if v == nil {
				continue
			}
			if k, ok := scalarKey(v); ok {
				s := x.byField[fieldKey{a.Type, name, k}]
				if s == nil {
					s = none
				}
				if !named || s.len() < best.len() {
					best, named = s, true
				}
			}
		}
		pick(best)
	}
	return set, all
}

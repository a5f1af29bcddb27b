// Package lookup is jinid's lookup service registrar: leased service
// registrations with ServiceID assignment, template lookup by the Jini
// matching rules, attribute changes, and notify registrations that receive
// the three transition events, all kept in the store.
package lookup

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// Attribute is an entry: a type, the types it extends, and fields. A
// field that is null (or absent) in a template matches anything.
type Attribute struct {
	Type       string
	Supertypes []string
	Fields     map[string]any
	// Java is set on an entry a Java client sent: what Java needs of it
	// that Fields does not say. Only the Java side reads it.
	Java *JavaEntry
}

// JavaEntry is the Java form of an entry, as opaque object streams in
// the Java lineage's classes: the entry class and its superclasses
// (Reggie's EntryClass, with field names and types folded into its hash)
// and the field values in Java's order, with their Java types.
type JavaEntry struct {
	Class    []byte  `json:"class"`
	Values   []byte  `json:"values"`
	Codebase *string `json:"codebase,omitempty"`
}

// Item is a registered service. Service is the service object as the
// client gave it, opaque JSON.
type Item struct {
	ServiceID  string
	Types      []string
	Attributes []Attribute
	Endpoint   string
	Service    json.RawMessage
	// Java is set on an item a Java client registered: its service
	// object and bootstrap proxy as object streams, which only Java
	// reads. Service then holds the service object's bytes for HTTP
	// clients.
	Java *JavaItem
}

// JavaItem is what only Java reads of an item a Java client registered.
type JavaItem struct {
	// Service is the service object as Reggie's proxy sent it (a
	// MarshalledWrapper), as an object stream.
	Service []byte `json:"service"`
	// Type is the service's type tree (Reggie's ServiceType), for the
	// browsing calls.
	Type []byte `json:"type,omitempty"`
	// BootstrapProxy is an object stream, or nil.
	BootstrapProxy []byte  `json:"bootstrapProxy,omitempty"`
	Codebase       *string `json:"codebase,omitempty"`
}

// Template selects items: every non-empty part must match.
type Template struct {
	ServiceID  string
	Types      []string
	Attributes []Attribute
}

// Matches applies the Jini matching rules: the ServiceID, if given, is
// the item's; every template type is among the item's types; and each
// attribute template matches at least one of the item's attributes.
func (t *Template) Matches(it *Item) bool {
	if it == nil {
		return false
	}
	if t.ServiceID != "" && t.ServiceID != it.ServiceID {
		return false
	}
	for _, ty := range t.Types {
		if !slices.Contains(it.Types, ty) {
			return false
		}
	}
	for i := range t.Attributes {
		if !slices.ContainsFunc(it.Attributes, t.Attributes[i].matches) {
			return false
		}
	}
	return true
}

// matches reports whether entry a matches template tmpl: a is of tmpl's
// type or extends it, and every non-null template field equals a's.
func (tmpl Attribute) matches(a Attribute) bool {
	if a.Type != tmpl.Type && !slices.Contains(a.Supertypes, tmpl.Type) {
		return false
	}
	for name, want := range tmpl.Fields {
		if want == nil {
			continue
		}
		got, ok := a.Fields[name]
		if !ok || !valueEqual(got, want) {
			return false
		}
	}
	return true
}

// valueEqual compares two JSON values: scalars directly (the common case,
// and the hot path of every lookup), anything else structurally.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		if y, ok := b.(float64); ok {
			return x == y
		}
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// normalize makes JSON values comparable whatever decoded them: numbers
// as float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}

// equalAttr reports whether two entries are the same (for eliminating
// duplicates, as the Jini registrar does).
func equalAttr(a, b Attribute) bool {
	return a.Type == b.Type && slices.Equal(a.Supertypes, b.Supertypes) && reflect.DeepEqual(normalize(a.Fields), normalize(b.Fields))
}

// dedupe drops entries equal to an earlier one.
func dedupe(as []Attribute) []Attribute {
	var out []Attribute
	for _, a := range as {
		if !slices.ContainsFunc(out, func(b Attribute) bool { return equalAttr(a, b) }) {
			out = append(out, a)
		}
	}
	return out
}

func validateAttrs(what string, as []Attribute) error {
	for i, a := range as {
		if a.Type == "" {
			return fault.New(apitypes.NullArgument, "%s %d has no type", what, i)
		}
		if !apitypes.JavaName(a.Type) {
			return fault.New(apitypes.InvalidArgument, "%s %d: entry class %q is not a Java class name (such as net.jini.lookup.entry.Name)", what, i, fault.Short(a.Type))
		}
	}
	return nil
}

// validateTypes checks type names: Java class or interface names.
func validateTypes(what string, ts []string) error {
	for i, t := range ts {
		if t == "" {
			return fault.New(apitypes.NullArgument, "%s %d is empty", what, i)
		}
		if !apitypes.JavaName(t) {
			return fault.New(apitypes.InvalidArgument, "%s %d: %q is not a Java class or interface name (such as com.example.Printer)", what, i, fault.Short(t))
		}
	}
	return nil
}

// modify applies ServiceRegistration.modifyAttributes: every attribute of
// the item that matches templates[i] gets the non-null fields of
// changes[i], or is deleted where changes[i] is null.
func modify(attrs []Attribute, templates []Attribute, changes []*Attribute) ([]Attribute, error) {
	if len(templates) != len(changes) {
		return nil, fault.New(apitypes.InvalidArgument, "%d attribute templates but %d changes", len(templates), len(changes))
	}
	for i, c := range changes {
		if c != nil && c.Type != templates[i].Type {
			return nil, fault.New(apitypes.InvalidArgument, "change %d is of type %q, its template of %q", i, c.Type, templates[i].Type)
		}
	}
	out := make([]Attribute, 0, len(attrs))
	for _, a := range attrs {
		keep := true
		for i, tmpl := range templates {
			if !tmpl.matches(a) {
				continue
			}
			if changes[i] == nil {
				keep = false
				break
			}
			fields := make(map[string]any, len(a.Fields))
			for k, v := range a.Fields {
				fields[k] = v
			}
			for k, v := range changes[i].Fields {
				if v != nil {
					fields[k] = v
				}
			}
			a.Fields = fields
		}
		if keep {
			out = append(out, a)
		}
	}
	return dedupe(out), nil
}

package lookup

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// classes are the attribute classes the registered items have (each
// entry's type and supertypes), with the fields their entries have.
func (r *Registrar) classes() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, si := range r.items {
		for _, a := range si.Item.Attributes {
			for _, c := range append([]string{a.Type}, a.Supertypes...) {
				if out[c] == nil {
					out[c] = map[string]bool{}
				}
				if c == a.Type {
					for f := range a.Fields {
						out[c][f] = true
					}
				}
			}
		}
	}
	return out
}

// resolveShortNames gives a template attribute named by a short class
// name ("Name": no dot) the one class of the registered items whose
// last part it is ("net.jini.lookup.entry.Name"); several such are
// refused, naming them. A short name no registered class has is left as
// it is (it matches nothing: hint says why).
func (r *Registrar) resolveShortNames(t *Template) error {
	if !slices.ContainsFunc(t.Attributes, func(a Attribute) bool { return !strings.Contains(a.Type, ".") }) {
		return nil
	}
	known := r.classes()
	for i, a := range t.Attributes {
		if strings.Contains(a.Type, ".") {
			continue
		}
		var cands []string
		for c := range known {
			if strings.HasSuffix(c, "."+a.Type) || strings.HasSuffix(c, "$"+a.Type) {
				cands = append(cands, c)
			}
		}
		slices.Sort(cands)
		switch len(cands) {
		case 0:
		case 1:
			t.Attributes[i].Type = cands[0]
		default:
			return fault.New(apitypes.InvalidArgument, "attribute class %q is short for several registered ones: %s; give the whole name",
				fault.Short(a.Type), strings.Join(cands[:min(len(cands), 8)], ", "))
		}
	}
	return nil
}

// hint says why a template matched nothing, where the registry can
// tell: an attribute class no registered item has, or a field no
// registered entry of its class has (a typo: "nmae"). "" when it cannot
// tell.
func (r *Registrar) hint(t Template) string {
	if len(t.Attributes) == 0 {
		return ""
	}
	known := r.classes()
	for _, a := range t.Attributes {
		fields, ok := known[a.Type]
		if !ok {
			return fmt.Sprintf("no registered service has an attribute of class %s", fault.Short(a.Type))
		}
		for f := range a.Fields {
			if a.Type != "" && len(fields) > 0 && !fields[f] {
				return fmt.Sprintf("no registered %s has a field %q (its fields: %s)", fault.Short(a.Type), fault.Short(f),
					strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
			}
		}
	}
	return ""
}

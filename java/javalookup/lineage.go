// Package javalookup is jinid's lookup service as Java sees it: the
// registrar proxy it serves in unicast discovery responses, and the
// registrar's remote methods over Jini ERI, on the same registry HTTP
// clients use. What the Java side's classes look like is java/lineage's.
package javalookup

import "github.com/jinid/jinid/java/lineage"

// Lineage is the lineage served, with the objects jinid makes of its
// classes (the registrar proxy, leases, events).
type Lineage struct{ *lineage.Lineage }

// JGDMS returns the lineage of JGDMS, the one jinid serves.
func JGDMS() (*Lineage, error) {
	l, err := lineage.JGDMS()
	if err != nil {
		return nil, err
	}
	return &Lineage{l}, nil
}

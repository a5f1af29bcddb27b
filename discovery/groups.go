package discovery

import "slices"

// SameGroups reports whether two lists name the same groups, in any order
// (a lookup service's member groups are a set).
func SameGroups(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, g := range a {
		if !slices.Contains(b, g) {
			return false
		}
	}
	for _, g := range b {
		if !slices.Contains(a, g) {
			return false
		}
	}
	return true
}

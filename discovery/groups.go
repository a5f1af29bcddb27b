package discovery

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jinid/jinid/java/javaio"
)

// MaxGroupLen is the longest group name jinid takes, in bytes as either
// protocol version encodes it (UTF-8, or Java's modified UTF-8 in version
// 1): so short that any group fits every discovery packet, a request or
// an announcement of either version, beside the longest host name.
// (Packets are 512 bytes; the protocols set no limit of their own, but a
// longer name may fit no packet at all.)
const MaxGroupLen = 255

// ErrGroupName is the error of a group name jinid does not take.
var ErrGroupName = errors.New("bad group name")

// CheckGroup reports whether g can be a group name: valid UTF-8, at most
// MaxGroupLen bytes encoded.
func CheckGroup(g string) error {
	if !utf8.ValidString(g) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrGroupName, g)
	}
	if n := max(len(g), javaio.ModifiedUTF8Len(g)); n > MaxGroupLen {
		return fmt.Errorf("%w: %q… is %d bytes long; a group name has at most %d, so that it fits a discovery packet",
			ErrGroupName, truncate(g, 24), n, MaxGroupLen)
	}
	return nil
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

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

// GroupsText shows groups for people: the public group "" as
// "(public)", the names joined by sep, and an empty list as "(none)".
func GroupsText(groups []string, sep string) string {
	if len(groups) == 0 {
		return "(none)"
	}
	shown := make([]string, len(groups))
	for i, g := range groups {
		shown[i] = cmp.Or(g, "(public)")
	}
	return strings.Join(shown, sep)
}

// UnionGroups is a's groups and those of b not among them, in order: a
// set of groups grown by others. Never nil: an empty union is
// NO_GROUPS, not ALL_GROUPS.
func UnionGroups(a, b []string) []string {
	out := slices.Clone(a)
	for _, g := range b {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

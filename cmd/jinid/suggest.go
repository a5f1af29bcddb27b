package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// didYouMean names the one of names closest to word, when one is close
// (an edit or two, as git and cobra suggest): " (did you mean "list"?)",
// else "".
func didYouMean(word string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(word), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b (short words:
// commands and flags).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// flagSuggestion adds to a flag error what flag was meant, when the
// error names an unknown one ("unknown flag: --sever") close to one of
// fs's.
func flagSuggestion(err error, fs *pflag.FlagSet) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := didYouMean(name, names); s != "" {
		return fmt.Errorf("%w%s", err, strings.Replace(s, `"`, `"--`, 1))
	}
	return err
}

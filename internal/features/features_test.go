package features

import (
	"slices"
	"strings"
	"testing"
)

// In finds a tag by substring: no feature's tag may be part of another's.
func TestTagsApart(t *testing.T) {
	for _, a := range All() {
		for _, b := range All() {
			if a.Tag != b.Tag && strings.Contains(a.Tag, b.Tag) {
				t.Errorf("tag %s contains %s", a.Tag, b.Tag)
			}
		}
	}
}

func TestIn(t *testing.T) {
	for _, c := range []struct {
		tags    string
		in, out []string
	}{
		{"", []string{"daemon", "tools", "java", "tls", "dnssd"}, nil},
		// go version -m writes the tags comma-separated; go build takes both.
		{"jinid_omit_tools,jinid_omit_java,nethttpomithttp2", []string{"daemon", "tls", "dnssd"}, []string{"tools", "java"}},
		{"jinid_omit_daemon nethttpomithttp2", []string{"tools", "java", "tls", "dnssd"}, []string{"daemon"}},
	} {
		in, out := In(c.tags)
		if !slices.Equal(in, c.in) || !slices.Equal(out, c.out) {
			t.Errorf("In(%q) = %v, %v; want %v, %v", c.tags, in, out, c.in, c.out)
		}
	}
}

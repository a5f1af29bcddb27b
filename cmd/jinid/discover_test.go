//go:build !jinid_omit_tools

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/manager"
	"github.com/jinid/jinid/services/apitypes"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenResults are what a router with a LAN bridge and a second LAN
// might find: a jinid lookup service over both families of br-lan (IPv6
// link-local only), a Java one on two interfaces, one reached by locator
// only, and one unreachable.
var goldenResults = []finder.Result{
	{ServiceID: "01000000-0000-0000-0000-000000000000", Address: "192.168.1.2:4160", Host: "192.168.1.2", Port: 4160, Family: 4, Interface: "br-lan",
		Groups: []string{"", "lab"}, How: []string{finder.ViaAnnouncement, finder.ViaRequest}, Versions: []int{1, 2}, Kind: "jinid", APIURL: "http://192.168.1.2:4162"},
	{ServiceID: "01000000-0000-0000-0000-000000000000", Address: "[fe80::2%br-lan]:4160", Host: "fe80::2%br-lan", Port: 4160, Family: 6, Interface: "br-lan",
		Groups: []string{"", "lab"}, How: []string{finder.ViaAnnouncement, finder.ViaRequest}, Versions: []int{1, 2}, Kind: "jinid", APIURL: "http://[fe80::2%25br-lan]:4162"},
	{ServiceID: "02000000-0000-0000-0000-000000000000", Address: "[fe80::3%br-lan]:?", Host: "fe80::3%br-lan", Family: 6, Interface: "br-lan",
		Groups: []string{"ops;east"}, How: []string{finder.ViaRequest}, Versions: []int{1}, Kind: "java", ProxySize: 377},
	{ServiceID: "02000000-0000-0000-0000-000000000000", Address: "[fe80::3%lan2]:4160", Host: "fe80::3%lan2", Port: 4160, Family: 6, Interface: "lan2",
		Groups: []string{"ops;east"}, How: []string{finder.ViaAnnouncement, finder.ViaRequest}, Versions: []int{1, 2}, Kind: "java", ProxySize: 412},
	{Address: "lookup.example.org:4160", Host: "lookup.example.org", Port: 4160, Groups: []string{}, How: []string{finder.ViaLocator},
		Versions: []int{2}, Kind: "java", ProxySize: 412},
	{Address: "[2001:db8::9]:4160", Host: "2001:db8::9", Port: 4160, Family: 6, Groups: []string{}, How: []string{finder.ViaLocator},
		Error: "dial tcp [2001:db8::9]:4160: connect: connection refused"},
}

// The merged view of the same lookup services.
var goldenMerged = []finder.Result{
	{ServiceID: "01000000-0000-0000-0000-000000000000", Address: "192.168.1.2:4160", Host: "192.168.1.2", Port: 4160, Family: 4, Interface: "br-lan",
		Addresses: []string{"[fe80::2%br-lan]:4160"}, Groups: []string{"", "lab"}, How: []string{finder.ViaAnnouncement, finder.ViaRequest},
		Versions: []int{1, 2}, Kind: "jinid", APIURL: "http://192.168.1.2:4162"},
	{ServiceID: "02000000-0000-0000-0000-000000000000", Address: "[fe80::3%br-lan]:4160", Host: "fe80::3%br-lan", Port: 4160, Family: 6,
		Interfaces: []string{"br-lan", "lan2"}, Addresses: []string{"[fe80::3%lan2]:4160"}, Groups: []string{"ops;east"},
		How: []string{finder.ViaAnnouncement, finder.ViaRequest}, Versions: []int{1, 2}, Kind: "java", ProxySize: 412},
}

func TestDiscoverOutputGolden(t *testing.T) {
	for _, c := range []struct {
		file  string
		write func(*bytes.Buffer)
	}{
		{"discover-table.golden", func(b *bytes.Buffer) { writeResults(b, goldenResults, false) }},
		{"discover-merged.golden", func(b *bytes.Buffer) { writeResults(b, goldenMerged, true) }},
		{"discover-parsable.golden", func(b *bytes.Buffer) { writeParsable(b, goldenResults) }},
		{"discover-merged-parsable.golden", func(b *bytes.Buffer) { writeParsable(b, goldenMerged) }},
		{"discover-json.golden", func(b *bytes.Buffer) {
			enc := json.NewEncoder(b)
			for _, r := range append(goldenResults, goldenMerged...) {
				enc.Encode(r)
			}
		}},
	} {
		var b bytes.Buffer
		c.write(&b)
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", c.file, b.Bytes(), want)
		}
	}
}

func TestEscapeField(t *testing.T) {
	for in, want := range map[string]string{
		"lab":        "lab",
		"a;b,c":      `a\059b\044c`,
		`back\slash`: `back\092slash`,
		"(public)":   `\040public)`,
		"x(y)":       "x(y)",
		"tab\there":  `tab\009here`,
	} {
		if got := escapeField(in); got != want {
			t.Errorf("escapeField(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiscoverExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"discover", "--timeout", "-1s"}, exitUsage},
		{[]string{"discover", "--settle", "0s"}, exitUsage},
		{[]string{"discover", "--no-such-flag"}, exitUsage},
		{[]string{"discover", "extra-argument"}, exitUsage},
		{[]string{"discover", "--json", "-p"}, exitUsage},
		{[]string{"discover", "--watch", "--merge"}, exitUsage},
		// The only locator refuses: nothing found.
		{[]string{"discover", "--no-multicast", "--locator", "jini://127.0.0.1:1", "--settle", "10ms"}, exitFailure},
	} {
		out, _, err := run(t, nil, c.args...)
		if err == nil {
			t.Errorf("%q: no error, want exit status %d", c.args, c.want)
			continue
		}
		if got := exitCode(err); got != c.want {
			t.Errorf("%q: exit status %d (%v), want %d", c.args, got, err, c.want)
		}
		if c.want == exitFailure && !bytes.Contains([]byte(out), []byte("connection refused")) {
			t.Errorf("%q: printed %q, want the unreachable locator listed", c.args, out)
		}
	}
}

// browse names why a locator gave nothing, as discover does (it said
// only "no lookup services found").
func TestBrowseSaysWhyNothing(t *testing.T) {
	_, _, err := run(t, nil, "browse", "--no-multicast", "--locator", "jini://127.0.0.1:1", "--timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("browse of a locator nothing answers: %v", err)
	}
}

// A service two lookup services hold, each in its own form of the
// attributes (Reggie's with the entry's supertypes, jinid's without),
// is shown in one form whatever order the reads came back in: a watch
// compares what it shows, and printed an "=" line every second for it.
func TestMergeViewsOneForm(t *testing.T) {
	it := func(supers []string) apitypes.Item {
		return apitypes.Item{ServiceID: "5a7e1c00-0000-4000-8000-000000000001", Types: []string{"a.B"},
			Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Supertypes: supers, Fields: map[string]any{"name": "x"}}}}
	}
	reggie := sourceView{src: &source{id: "r", addr: "10.0.0.2:4160", kind: "java"}, items: []apitypes.Item{it([]string{"net.jini.entry.AbstractEntry"})}}
	jinid := sourceView{src: &source{id: "j", addr: "10.0.0.9:4160", kind: "jinid"}, items: []apitypes.Item{it(nil)}}
	a := mergeViews([]sourceView{reggie, jinid})
	b := mergeViews([]sourceView{jinid, reggie})
	if !reflect.DeepEqual(a[0].item, b[0].item) {
		t.Errorf("by the order of the reads: %+v, then %+v", a[0].item, b[0].item)
	}
}

// browse --watch showed a Java lookup service as "host:?" for as long as
// it ran when its first word was a version 1 answer (no port); discovery
// learns the port from the next announcement, and the watch takes it.
func TestWatchLearnsPorts(t *testing.T) {
	reggie, jinid := discovery.ServiceID{1}, discovery.ServiceID{2}
	srcs := map[discovery.ServiceID]*source{
		reggie: {id: reggie.String(), addr: "10.0.0.2:?", kind: "java"},
		jinid:  {id: jinid.String(), addr: "10.0.0.9:4160", kind: "jinid"},
	}
	learnPorts(srcs, []manager.Discovered{
		{LookupService: discovery.LookupService{ID: reggie, Host: "10.0.0.2", Port: 4160}},
		{LookupService: discovery.LookupService{ID: jinid, Host: "10.0.1.9", Port: 4160}},
	})
	if got := srcs[reggie].addr; got != "10.0.0.2:4160" {
		t.Errorf("a lookup service whose port was learnt: %s", got)
	}
	if got := srcs[jinid].addr; got != "10.0.0.9:4160" {
		t.Errorf("a known address changed to another link's: %s", got)
	}
}

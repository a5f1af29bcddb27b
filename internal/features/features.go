// Package features lists jinid's optional features: the parts a build
// can leave out, each with the build tag that omits it. A profile
// (scripts/profile: full, router, tools) is a list of these tags; a
// feature's files carry its tag; deps_test.go checks, feature by
// feature, that omitting it removes what it links; jinid version says
// which a binary has.
package features

import "strings"

// A Feature is one optional part of jinid.
type Feature struct {
	// Name is how jinid version lists it.
	Name string
	// Tag is the build tag that leaves it out.
	Tag string
	// About says what it is, and why a build would leave it out.
	About string
	// Links are packages, and Symbols functions, that a build with the
	// feature links and one without it does not, both built Beside the
	// other tags listed (those that omit other features linking the
	// same packages: the tools decode Java calls too).
	Links   []string
	Symbols []string
	Beside  []string
}

const module = "github.com/jinid/jinid"

// All lists the features, the daemon and the tools first.
func All() []Feature { return all[:] }

// all is read only: a table rather than a literal in All, so that the
// binaries (which only read Name and Tag) carry data, not code to build it.
var all = [...]Feature{
	{
		Name:  "daemon",
		Tag:   "jinid_omit_daemon",
		About: "the daemon: lookup service, helper services, API, announcer (the router's tools binary leaves it to jinid-daemon)",
		Links: []string{module + "/cmd/jinid/internal/app", module + "/services/api", module + "/announce"},
	},
	{
		Name: "tools",
		Tag:  "jinid_omit_tools",
		About: "packet inspection, discovery and the API client commands, with cobra " +
			"(gopacket fills megabytes of tables at start: the router's daemon leaves them to jinid-tools)",
		Links: []string{"github.com/google/gopacket", "github.com/spf13/cobra",
			module + "/cmd/jinid/internal/inspect", module + "/cmd/jinid/internal/finder"},
	},
	{
		Name:   "java",
		Tag:    "jinid_omit_java",
		About:  "serving Java clients: the registrar's Java proxy and Jini ERI (0.26 MB of a mips daemon)",
		Links:  []string{module + "/java/jeri", module + "/java/javalookup"},
		Beside: []string{"jinid_omit_tools"},
	},
	{
		Name:    "tls",
		Tag:     "jinid_omit_tls",
		About:   "the API over HTTPS and requests out over HTTPS (both handshakes: 1 MB of a mips binary)",
		Symbols: []string{"crypto/tls.(*Conn).serverHandshake", "crypto/tls.(*Conn).clientHandshake"},
		// net/http's HTTP/2 links both handshakes whatever jinid does.
		Beside: []string{"jinid_omit_tools", "nethttpomithttp2"},
	},
	{
		Name:   "dnssd",
		Tag:    "jinid_omit_dnssd",
		About:  "its own DNS-SD advertiser over mDNS (a router's mDNS responder announces _jini._tcp instead)",
		Links:  []string{"github.com/miekg/dns", module + "/announce/dnssd"},
		Beside: []string{"jinid_omit_tools"},
	},
}

// In splits the features into those a build with tags (as go build's
// -tags takes them, space- or comma-separated) has and those it leaves
// out, by name. No feature's tag is part of another's, so finding it in
// tags is enough.
func In(tags string) (in, out []string) {
	for _, f := range all {
		if strings.Contains(tags, f.Tag) {
			out = append(out, f.Name)
		} else {
			in = append(in, f.Name)
		}
	}
	return in, out
}

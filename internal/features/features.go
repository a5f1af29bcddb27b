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
}

// All lists the features, the daemon and the tools first. Every binary
// carries this table: what each feature is, and what it links, are said
// here and in deps_test.go rather than in it.
func All() []Feature { return all[:] }

// all is read only: a table rather than a literal in All, so that the
// binaries carry data, not code to build it.
var all = [...]Feature{
	// The daemon: lookup service, helper services, API, announcer. The
	// router's tools binary leaves it to jinid-daemon.
	{Name: "daemon", Tag: "jinid_omit_daemon"},
	// Packet inspection, discovery and the API client commands, with
	// cobra. gopacket fills megabytes of tables at start: the router's
	// daemon leaves them to jinid-tools.
	{Name: "tools", Tag: "jinid_omit_tools"},
	// Serving Java clients: the registrar's Java proxy and Jini ERI
	// (0.26 MB of a mips daemon).
	{Name: "java", Tag: "jinid_omit_java"},
	// The API over HTTPS, and requests out over HTTPS: both TLS
	// handshakes, 1 MB of a mips binary.
	{Name: "tls", Tag: "jinid_omit_tls"},
	// Its own DNS-SD advertiser over mDNS (miekg/dns); a router's mDNS
	// responder announces _jini._tcp instead.
	{Name: "dnssd", Tag: "jinid_omit_dnssd"},
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

// Package features lists jinid's optional features: the parts a build
// can leave out, each with the build tag that omits it. A profile
// (scripts/profile: full, router, tools) is a list of these tags; a
// feature's files carry its tag; deps_test.go checks, feature by
// feature, that omitting it removes what it links; jinid version prints
// a binary's tags.
package features

// A Feature is one optional part of jinid.
type Feature struct {
	// Name is the feature's short name.
	Name string
	// Tag is the build tag that leaves it out.
	Tag string
}

// All lists the features, the daemon and the tools first; what each
// links is deps_test.go's to say.
func All() []Feature {
	return []Feature{
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
		// The store kept in an etcd cluster (the etcd client, gRPC: many
		// MB); a router keeps the embedded store.
		{Name: "etcd", Tag: "jinid_omit_etcd"},
	}
}

// Package conformance holds the specification conformance suites run
// against the real binary: each case names the rule of the Jini
// specification it checks (the lookup discovery service's, LD.*), on a
// virtual LAN of jinid lookup services.
package conformance

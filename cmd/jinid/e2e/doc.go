// Package e2e holds jinid's end-to-end tests: the real binary, run as
// daemons and one-shot commands on loopback and on virtual LANs of network
// namespaces (internal/rig/netlab), talking to each other, to the Java
// implementation and to the tools a LAN has (avahi, dnsmasq). It has no
// code of its own; its tests are the suite.
package e2e

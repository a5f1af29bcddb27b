//go:build !jinid_omit_tools && !jinid_omit_daemon

package main

// commands are the subcommands of this build: the daemon's and the
// tools'. A router splits them in two binaries, each within its budget
// (docs/performance.md): the router profile leaves out the tools
// (jinid_omit_tools: packet inspection, discovery and the client
// commands, which link gopacket, cobra and code the daemon does not
// need), the tools profile the daemon (jinid_omit_daemon). A build
// leaving out both has no commands.
func commands(g *globalFlags) []*spec {
	return append(daemonCommands(g), toolCommands(g)...)
}

//go:build jinid_omit_daemon

package main

// hasDaemon: a build without the daemon (jinid_omit_daemon, the tools
// profile: a router's second binary) has inspection, discovery and the
// API clients; the daemon's commands say where it is.
const hasDaemon = false

func commands(g *globalFlags) []*spec {
	return append([]*spec{versionSpec()}, toolCommands(g)...)
}

//go:build jinid_omit_daemon

package main

import "github.com/spf13/cobra"

// commands of a build without the daemon (jinid_omit_daemon, the tools
// profile: a router's second binary): inspection, discovery and the API
// clients; the daemon's commands say where it is.
func commands(g *globalFlags) []*cobra.Command {
	return append(append([]*cobra.Command{versionSpec().command()}, toolCommands(g)...),
		elsewhere("the daemon binary (jinid-daemon)", "daemon", "config", "snapshot")...)
}

// startWith is the root help's list of first commands.
const startWith = `  jinid discover                     find the lookup services on the LAN
  jinid lookup register|query|list   use the lookup service of a running jinid
  jinid inspect --pcap capture.pcap  decode the discovery packets of a capture
  jinid version                      show what build this is

This is the router's tools binary; the daemon is in jinid-daemon.`

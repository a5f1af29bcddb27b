//go:build jinid_tools

package main

import "github.com/spf13/cobra"

// commands of the router's tools binary: inspection, discovery and the
// API clients, without the daemon, whose commands say where it is.
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

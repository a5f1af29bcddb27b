//go:build !jinid_router && !jinid_tools

package main

import "github.com/spf13/cobra"

// commands are the subcommands of this build: all of them. The router
// builds split them in two binaries, each within its budget (see
// docs/performance.md): the daemon alone (-tags jinid_router), and the
// tools (-tags jinid_tools: packet inspection and the client commands,
// which link gopacket and the CLI's code the daemon does not need).
func commands(g *globalFlags) []*cobra.Command {
	return append(commandsOf(daemonCommands(g)), toolCommands(g)...)
}

// startWith is the root help's list of first commands.
const startWith = `  jinid daemon                       run the appliance (API on :4162)
  jinid discover                     find the lookup services on the LAN
  jinid lookup register|query|list   use the lookup service of a running jinid
  jinid inspect --pcap capture.pcap  decode the discovery packets of a capture
  jinid config check|print           validate the config file / show the effective settings
  jinid version                      show what build this is`

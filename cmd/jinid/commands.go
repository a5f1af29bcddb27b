//go:build !jinid_router && !jinid_tools

package main

import "github.com/spf13/cobra"

// commands are the subcommands of this build: all of them. The router
// builds split them in two binaries, each within its budget (see
// docs/performance.md): the daemon alone (-tags jinid_router), and the
// tools (-tags jinid_tools: packet inspection and the client commands,
// which link gopacket and the CLI's code the daemon does not need).
func commands(g *globalFlags) []*cobra.Command {
	return append(daemonCommands(g), toolCommands(g)...)
}

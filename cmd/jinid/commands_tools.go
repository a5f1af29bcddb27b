//go:build jinid_tools

package main

import "github.com/spf13/cobra"

// commands of the router's tools binary: inspection, discovery and the
// API clients, without the daemon.
func commands(g *globalFlags) []*cobra.Command {
	return append([]*cobra.Command{newVersionCmd()}, toolCommands(g)...)
}

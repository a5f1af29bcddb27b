//go:build !jinid_tools

package main

import "github.com/spf13/cobra"

// daemonCommands run and operate the daemon.
func daemonCommands(g *globalFlags) []*cobra.Command {
	return []*cobra.Command{newVersionCmd(), newDaemonCmd(g), newConfigCmd(), newSnapshotCmd()}
}

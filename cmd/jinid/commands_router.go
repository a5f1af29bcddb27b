//go:build jinid_router

package main

import "github.com/spf13/cobra"

// commands of the router's daemon binary: the daemon and what operates
// it on the router itself; the tools' names say where the tools are.
func commands(g *globalFlags) []*cobra.Command {
	return append(daemonCommands(g), elsewhere("the tools binary (jinid-tools; /usr/bin/jinid in the OpenWrt package)",
		"inspect", "discover", "lookup", "lease", "lds", "listen", "renewal", "mailbox", "token")...)
}

// startWith is the root help's list of first commands.
const startWith = `  jinid daemon                       run the appliance (API on :4162)
  jinid config check|print           validate the config file / show the effective settings
  jinid snapshot                     write a snapshot of the store now (with --snapshot-dir)
  jinid version                      show what build this is

This is the router's daemon binary; discovery, inspection and the API
clients are in the tools binary (jinid-tools).`

//go:build jinid_router

package main

import "github.com/spf13/cobra"

// commands of the router's daemon binary: the daemon and what operates
// it on the router itself.
func commands(g *globalFlags) []*cobra.Command { return daemonCommands(g) }

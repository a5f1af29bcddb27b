//go:build jinid_omit_daemon

package main

import "github.com/spf13/cobra"

// hasDaemon: a build without the daemon (jinid_omit_daemon, the tools
// profile: a router's second binary) has inspection, discovery and the
// API clients; the daemon's commands say where it is.
const hasDaemon = false

func commands(g *globalFlags) []*cobra.Command {
	return append(append([]*cobra.Command{versionSpec().command()}, toolCommands(g)...), hiddenElsewhere()...)
}

// hiddenElsewhere makes hidden commands that say which binary of a
// router's build has them, rather than "unknown command".
func hiddenElsewhere() []*cobra.Command {
	var out []*cobra.Command
	for name, where := range elsewhere() {
		out = append(out, &cobra.Command{
			Use:                name,
			Hidden:             true,
			DisableFlagParsing: true,
			RunE:               func(*cobra.Command, []string) error { return notHere(name, where) },
		})
	}
	return out
}

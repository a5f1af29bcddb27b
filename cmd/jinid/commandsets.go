//go:build !jinid_omit_daemon

package main

// daemonCommands run and operate the daemon.
func daemonCommands(g *globalFlags) []*spec {
	return []*spec{versionSpec(), daemonSpec(g), configSpec(), snapshotSpec()}
}

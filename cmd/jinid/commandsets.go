//go:build !jinid_omit_daemon

package main

// hasDaemon: this build has the daemon feature.
const hasDaemon = true

// daemonCommands run and operate the daemon.
func daemonCommands(g *globalFlags) []*spec {
	return []*spec{versionSpec(), daemonSpec(g), configSpec(), snapshotSpec(), storeSpec(), clusterSpec()}
}

//go:build !jinid_omit_daemon

package main

// hasDaemon: this build has the daemon feature.
const hasDaemon = true

// specRoot is jinid's root as a spec, with the daemon's commands: the
// whole of a build without cobra.
func specRoot(g *globalFlags) *spec {
	return &spec{use: "jinid", short: rootShort, long: rootLong(), subs: daemonCommands(g)}
}

// daemonCommands run and operate the daemon.
func daemonCommands(g *globalFlags) []*spec {
	return []*spec{versionSpec(), daemonSpec(g), configSpec(), snapshotSpec()}
}

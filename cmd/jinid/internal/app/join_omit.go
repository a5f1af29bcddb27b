//go:build jinid_omit_java

package app

// buildJoin has nothing to build: joining other lookup services takes
// Jini ERI, which this build leaves out.
func (d *Daemon) buildJoin() error { return nil }

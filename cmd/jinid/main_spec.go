//go:build jinid_omit_tools

package main

import (
	"context"
	"errors"
	"io"
)

// hasTools: a build without the tools (jinid_omit_tools, the router
// profile's daemon binary) has the daemon and what operates it on the
// router itself, dispatched without cobra (spec.go says why).
const hasTools = false

// execute runs the command args name; the tools' names say where the
// tools are.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var g globalFlags
	err := dispatch(ctx, rootSpec(&g), &g, args, stdin, stdout, stderr, elsewhere())
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// commands are the daemon's.
func commands(g *globalFlags) []*spec { return daemonCommands(g) }

//go:build jinid_omit_tools

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// A build without the tools (jinid_omit_tools, the router profile's
// daemon binary): the daemon and what operates it on the router itself,
// dispatched without cobra (spec.go says why). The tools' names say
// where the tools are.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	var g globalFlags
	root := &spec{use: "jinid", short: "A Jini discovery appliance", long: rootLong, subs: daemonCommands(&g)}
	err := dispatch(ctx, root, &g, os.Args[1:], os.Stdout, os.Stderr, toolsElsewhere())
	stop()
	if err != nil && !errors.Is(err, errHelp) {
		fmt.Fprintln(os.Stderr, "jinid:", err)
		os.Exit(exitCode(err))
	}
}

// toolsElsewhere names the commands of the tools binary, and where it
// is.
func toolsElsewhere() map[string]string {
	out := map[string]string{}
	for _, name := range []string{"inspect", "discover", "lookup", "lease", "lds", "listen", "renewal", "mailbox", "token", "txn"} {
		out[name] = "the tools binary (jinid-tools; /usr/bin/jinid in the OpenWrt package)"
	}
	return out
}

// startWith is the root help's list of first commands.
const startWith = `  jinid daemon                       run the appliance (API on :4162)
  jinid config check|print           validate the config file / show the effective settings
  jinid snapshot                     write a snapshot of the store now (with --snapshot-dir)
  jinid version                      show what build this is

This is the router's daemon binary; discovery, inspection and the API
clients are in the tools binary (jinid-tools).`

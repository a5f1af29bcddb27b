//go:build !jinid_omit_tools

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRootCmd(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jinid:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:   "jinid",
		Short: "A Jini discovery appliance",
		Long:  rootLong,
		// cobra prints "jinid version " and this; a version template of
		// our own would link text/template, whose reflection costs
		// megabytes (docs/performance.md).
		Version:       strings.TrimPrefix(versionLine(), "jinid "),
		SilenceUsage:  true, // a failing command is not a usage mistake
		SilenceErrors: true, // main prints the error once
	}
	// A flag that does not parse is a usage error, in every command.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(stdout)
	root.SetErr(stderr)
	bindGlobal(root.PersistentFlags(), &g)
	root.AddCommand(commands(&g)...)
	return root
}

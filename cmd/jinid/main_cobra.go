//go:build !jinid_omit_tools

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// hasTools: this build has the tools feature, and cobra with them.
const hasTools = true

// execute runs the command args name.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(append([]string{}, args...)) // nil would be os.Args
	root.SetIn(stdin)
	// With --help, cobra prints the help of the deepest command it
	// found, even when a word after it names no subcommand ("jinid
	// lookup lsit --help"): that is a typo, and says so, as without
	// --help.
	var typo error
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if words := c.Flags().Args(); c.HasSubCommands() && len(words) > 0 {
			typo = usageError{err: fmt.Errorf("unknown command %q for %q", words[0], c.CommandPath()), cmd: c.CommandPath()}
			return
		}
		help(c, args)
	})
	if err := root.ExecuteContext(ctx); err != nil {
		return err
	}
	return typo
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := rootSpec(&g).command()
	// --version prints what "jinid version" does, one format. Not
	// cobra's Version: its own line differs, and a version template
	// would link text/template, whose reflection costs megabytes
	// (docs/performance.md).
	showVersion := root.Flags().Bool("version", false, "version for jinid")
	help := root.RunE
	root.RunE = func(c *cobra.Command, args []string) error {
		if *showVersion {
			_, err := io.WriteString(stdout, versionText())
			return err
		}
		return help(c, args)
	}
	root.SilenceUsage = true  // a failing command is not a usage mistake
	root.SilenceErrors = true // main prints the error once
	// A flag that does not parse is a usage error, in every command.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err: flagSuggestion(err, c.Flags()), cmd: c.CommandPath()}
	})
	root.SetOut(stdout)
	root.SetErr(stderr)
	bindGlobal(root.PersistentFlags(), &g)
	if !hasDaemon {
		// The daemon's commands say where they are, as dispatch says
		// where the tools are.
		for name, where := range elsewhere() {
			root.AddCommand(&cobra.Command{
				Use:                name,
				Hidden:             true,
				DisableFlagParsing: true,
				RunE:               func(*cobra.Command, []string) error { return notHere(name, where) },
			})
		}
	}
	return root
}

//go:build !jinid_omit_tools

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// command is s as a cobra command (the global flags are the root's).
func (s *spec) command() *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Example: s.example, Hidden: s.hidden}
	if s.run != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error { return s.checkArgs(cmd.CommandPath(), args) }
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			err := s.run(&invocation{ctx: cmd.Context(), flags: cmd.Flags(),
				stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}, args)
			return atCommand(cmd.CommandPath(), err)
		}
	}
	if s.run == nil && len(s.subs) > 0 {
		// A group: with no word it shows its help; a word that names no
		// subcommand is a usage error (exit 2), as dispatch says it, not
		// cobra's help and exit 0.
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				var names []string
				for _, c := range cmd.Commands() {
					if !c.Hidden {
						names = append(names, c.Name())
					}
				}
				return usageError{err: fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), didYouMean(args[0], names)), cmd: cmd.CommandPath()}
			}
			return nil
		}
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	if s.flags != nil {
		cmd.Flags().AddFlagSet(s.flags)
	}
	if s.persistent != nil {
		cmd.PersistentFlags().AddFlagSet(s.persistent)
	}
	for _, sub := range s.subs {
		cmd.AddCommand(sub.command())
	}
	return cmd
}

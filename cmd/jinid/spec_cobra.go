//go:build !jinid_omit_tools

package main

import "github.com/spf13/cobra"

// command is s as a cobra command (the global flags are the root's).
func (s *spec) command() *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Example: s.example}
	if s.run != nil {
		cmd.Args = func(_ *cobra.Command, args []string) error {
			if err := s.checkArgs(args); err != nil {
				return usageError{err}
			}
			return nil
		}
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return s.run(&invocation{ctx: cmd.Context(), flags: cmd.Flags(), args: args,
				stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()})
		}
	}
	if s.flags != nil {
		s.flags(cmd.Flags())
	}
	for _, sub := range s.subs {
		cmd.AddCommand(sub.command())
	}
	return cmd
}

// commandsOf makes cobra commands of specs.
func commandsOf(specs []*spec) []*cobra.Command {
	out := make([]*cobra.Command, len(specs))
	for i, s := range specs {
		out[i] = s.command()
	}
	return out
}

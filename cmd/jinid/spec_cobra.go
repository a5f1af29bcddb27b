//go:build !jinid_omit_tools

package main

import "github.com/spf13/cobra"

// command is s as a cobra command (the global flags are the root's).
func (s *spec) command() *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Example: s.example, Hidden: s.hidden}
	if s.run != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error { return s.checkArgs(cmd.CommandPath(), args) }
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return s.run(&invocation{ctx: cmd.Context(), flags: cmd.Flags(),
				stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}, args)
		}
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

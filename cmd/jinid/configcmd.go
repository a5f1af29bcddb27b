//go:build !jinid_tools

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check the daemon's config file, or show the configuration it would run with",
		Long: `Every setting of the daemon is a key of its JSON config file, a flag of
"jinid daemon" and an environment variable (JINID_ and the flag's name in
upper case, dashes as underscores: --data-dir is JINID_DATA_DIR). One rule
of precedence holds for all: the command line wins over the environment,
which wins over the config file, which wins over the built-in default.

The config file is --config, or ` + DefaultConfigFile + ` when it exists.
A running daemon re-reads it on SIGHUP (see docs/operations.md).`,
	}
	cmd.AddCommand(newConfigCheckCmd(), newConfigPrintCmd())
	return cmd
}

func newConfigCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a config file, printing every error with its line, column and key",
		Long: `Validate a config file (default ` + DefaultConfigFile + `) as "jinid daemon"
would read it, with the environment's settings under it, and print every
error found as FILE:LINE:COLUMN: KEY: what is wrong. It exits 0 when the
file is good, 1 when it is not.`,
		Example: `  jinid config check /etc/jinid/jinid.json
  kill -HUP $(pidof jinid)    # after a good check: reload`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := DefaultConfigFile
			if len(args) == 1 {
				path = args[0]
			}
			var g globalFlags
			o := &daemonOptions{configPath: path}
			fs := daemonFlags(o, &g)
			c, errs := readConfig(path)
			if c != nil {
				_, rerrs := resolve(fs, c, os.LookupEnv)
				errs = append(errs, rerrs...)
			}
			if len(errs) == 0 {
				if _, err := parseLevel(g.logLevel); err != nil {
					errs = append(errs, fmt.Errorf("%s: logLevel: %w", path, err))
				}
				if _, err := o.config(fs); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", path, err))
				}
			}
			if len(errs) > 0 {
				for _, err := range errs {
					fmt.Fprintln(cmd.OutOrStdout(), err)
				}
				return fmt.Errorf("%s: %d error(s)", path, len(errs))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
			return nil
		},
	}
}

func newConfigPrintCmd() *cobra.Command {
	o := &daemonOptions{}
	cmd := &cobra.Command{
		Use:   "print [daemon flags]",
		Short: "Show the effective configuration, with where each value came from",
		Long: `Show the configuration "jinid daemon" would run with, given the same
flags, environment and config file: each setting's key, value, and where
the value came from (flag, env JINID_..., FILE:LINE:COLUMN, or default).`,
		Example: `  jinid config print
  JINID_GROUPS=lab jinid config print --config /etc/jinid/jinid.json --log-level debug`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := cmd.Flags()
			_, src, err := o.resolve(fs, os.LookupEnv)
			if err != nil {
				return err
			}
			if _, err := o.config(fs); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tFROM\tFLAG\tENVIRONMENT")
			values := settingValues(fs)
			for _, s := range slices.SortedFunc(slices.Values(settings), func(a, b setting) int { return strings.Compare(a.key, b.key) }) {
				v := values[s.key]
				if s.invert {
					v = fmt.Sprint(v == "false")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t--%s\t%s\n", s.key, v, src[s.key], s.flag, envName(s.flag))
			}
			return errors.Join(tw.Flush())
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

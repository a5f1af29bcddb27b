//go:build !jinid_omit_daemon

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"text/tabwriter"
)

func configSpec() *spec {
	return &spec{
		use:   "config",
		short: "Check the daemon's config file, or show the configuration it would run with",
		long: `Every setting of the daemon is a key of its JSON config file, a flag of
"jinid daemon" and an environment variable (JINID_ and the flag's name in
upper case, dashes as underscores: --data-dir is JINID_DATA_DIR). One rule
of precedence holds for all: the command line wins over the environment,
which wins over the config file, which wins over the built-in default.

The config file is --config, or ` + DefaultConfigFile + ` when it exists.
A running daemon re-reads it on SIGHUP (see docs/operations.md).`,
		subs: []*spec{configCheckSpec(), configPrintSpec()},
	}
}

func configCheckSpec() *spec {
	return &spec{
		use:   "check [FILE]",
		short: "Validate a config file, printing every error with its line, column and key",
		long: `Validate a config file (default ` + DefaultConfigFile + `) as "jinid daemon"
would read it, with the environment's settings under it, and print every
error found as FILE:LINE:COLUMN: KEY: what is wrong. It exits 0 when the
file is good, 1 when it is not.`,
		example: `  jinid config check /etc/jinid/jinid.json
  kill -HUP $(pidof jinid)    # after a good check: reload`,
		args: maxArgs(1),
		run: func(inv *invocation, args []string) error {
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
			// What the file and the environment set is checked as a
			// whole too, every error of it, whatever else was wrong.
			if _, err := parseLevel(g.logLevel); err != nil {
				errs = append(errs, fmt.Errorf("%s: logLevel: %w", path, err))
			}
			if _, err := o.config(fs); err != nil {
				for _, e := range leaves(err) {
					errs = append(errs, fmt.Errorf("%s: %w", path, e))
				}
			}
			if len(errs) > 0 {
				for _, err := range errs {
					fmt.Fprintln(inv.stdout, err)
				}
				return fmt.Errorf("%s: %d error(s)", path, len(errs))
			}
			fmt.Fprintf(inv.stdout, "%s: ok\n", path)
			return nil
		},
	}
}

// leaves are the errors err joins (errors.Join), each on its own.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	if u, ok := err.(usageError); ok {
		return leaves(u.err)
	}
	return []error{err}
}

func configPrintSpec() *spec {
	o := &daemonOptions{}
	s := &spec{
		use:   "print [daemon flags]",
		short: "Show the effective configuration, with where each value came from",
		long: `Show the configuration "jinid daemon" would run with, given the same
flags, environment and config file: each setting's key, value, and where
the value came from (flag, env JINID_..., FILE:LINE:COLUMN, or default).`,
		example: `  jinid config print
  JINID_GROUPS=lab jinid config print --config /etc/jinid/jinid.json --log-level debug`,
		run: func(inv *invocation, args []string) error {
			fs := inv.flags
			_, src, err := o.resolve(fs, os.LookupEnv)
			if err != nil {
				return err
			}
			if _, err := o.config(fs); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(inv.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tFROM\tFLAG\tENVIRONMENT")
			values := settingValues(fs)
			sorted := slices.Clone(settings)
			// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].key < sorted[j].key })
			for _, s := range sorted {
				v := values[s.key]
				if s.invert {
					v = fmt.Sprint(v == "false")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t--%s\t%s\n", s.key, v, src[s.key], s.flag, envName(s.flag))
			}
			return errors.Join(tw.Flush())
		},
	}
	o.bind(s.Flags())
	return s
}

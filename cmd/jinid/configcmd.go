//go:build !jinid_omit_daemon

package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
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
		example: `  jinid config check /etc/jinid/jinid.json      # then reload: systemctl reload jinid (SIGHUP)`,
		args:    maxArgs(1),
		run: func(inv *invocation, args []string) error {
			path := DefaultConfigFile
			if len(args) == 1 {
				path = args[0]
			}
			var g globalFlags
			o := &daemonOptions{}
			fs := daemonFlags(o, &g)
			o.configPath = path // after the flags' defaults
			// What the file and the environment set is checked as a
			// whole too, every error of it, whatever else was wrong: as
			// the daemon does before it starts.
			_, cfg, errs := o.settle(fs, &g, os.LookupEnv, path)
			// The services directory too: a file there that gives no
			// service is named now, not at the next start.
			errs = append(errs, app.CheckServicesDir(cfg.ServicesDir)...)
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
	s := withOutput(&spec{
		use:   "print [daemon flags]",
		short: "Show the effective configuration, with where each value came from",
		long: `Show the configuration "jinid daemon" would run with, given the same
flags, environment and config file: each setting's key, its effective
value (a default the daemon fills in, such as a limit's, shown as it is),
and where the value came from: flag, env JINID_..., the config file's
line:column, or default. Each key is also a flag of "jinid daemon" and
an environment variable (dataDir: --data-dir, JINID_DATA_DIR; a limit:
--limit NAME=N, JINID_LIMIT): -o json, yaml and parsable give them too,
after the table's columns (key, value, from, flag, env).`,
		example: `  jinid config print
  JINID_GROUPS=lab jinid config print --config /etc/jinid/jinid.json --log-level debug`,
	}, func(inv *invocation, p *printer, args []string) error {
		fs := inv.flags
		file, src, err := o.resolve(fs, os.LookupEnv)
		if err != nil {
			return err
		}
		cfg, err := o.config(fs)
		if err != nil {
			return err
		}
		rs := configRecords(fs, src, file, cfg, o.limits)
		if p.format != formatTable {
			return p.list("settings", rs, nil)
		}
		if file != "" {
			fmt.Fprintf(inv.stdout, "# config file %s\n", file)
		} else {
			fmt.Fprintln(inv.stdout, "# no config file")
		}
		// The table fits a terminal: the flag and the variable of a key
		// follow from it, and the other formats give them.
		fmt.Fprintln(inv.stdout, "# each key is a flag and a variable too (dataDir: --data-dir, JINID_DATA_DIR; -o json)")
		table := make([]record, len(rs))
		for i, r := range rs {
			table[i] = r[:3]
		}
		return p.list("settings", wrapValues(table, 40), record{{"key", nil}, {"value", nil}, {"from", nil}})
	})
	o.bind(s.Flags())
	return s
}

// configRecords are the settings, one record each (key, value, from,
// and the daemon's flag and environment variable for it),
// sorted by key; the limits are one each, limits.NAME, with their
// effective values.
func configRecords(fs *pflag.FlagSet, src sources, file string, cfg app.Config, given map[string]int64) []record {
	from := func(key string) string {
		f := src[key]
		// The file is named once, above; a place in it is LINE:COLUMN.
		if file != "" && strings.HasPrefix(f, file+":") {
			return "file " + strings.TrimPrefix(f, file+":")
		}
		return f
	}
	values := settingValues(fs)
	var rs []record
	sorted := slices.Clone(settings)
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].key < sorted[j].key })
	for _, s := range sorted {
		if s.key == "limits" {
			continue
		}
		v := values[s.key]
		if s.invert {
			v = fmt.Sprint(v == "false")
		}
		rs = append(rs, record{{"key", s.key}, {"value", v}, {"from", from(s.key)}, {"flag", "--" + s.flag}, {"env", envName(s.flag)}})
	}
	eff := cfg.Limits.Effective()
	lv, lt := reflect.ValueOf(eff), reflect.TypeOf(eff)
	var limits []record
	for i := range lv.NumField() {
		name, _, _ := strings.Cut(lt.Field(i).Tag.Get("json"), ",")
		f := "default"
		if _, ok := given[name]; ok {
			f = from("limits")
		}
		limits = append(limits, record{{"key", "limits." + name}, {"value", fmt.Sprint(lv.Field(i).Interface())}, {"from", f},
			{"flag", "--limit " + name + "=N"}, {"env", envName("limit")}})
	}
	sort.Slice(limits, func(i, j int) bool { return limits[i][0].value.(string) < limits[j][0].value.(string) })
	return append(rs, limits...)
}

// wrapValues splits values wider than width at their commas onto lines
// of their own, under the first, so that a table fits a terminal.
func wrapValues(rs []record, width int) []record {
	var out []record
	for _, r := range rs {
		v := r[1].value.(string)
		if len(v) <= width {
			out = append(out, r)
			continue
		}
		var lines []string
		line := ""
		for _, part := range strings.SplitAfter(v, ",") {
			if line != "" && len(line)+len(part) > width {
				lines = append(lines, line)
				line = ""
			}
			line += part
		}
		lines = append(lines, line)
		for i, l := range lines {
			if i == 0 {
				out = append(out, record{r[0], {"value", l}, r[2]})
			} else {
				out = append(out, record{{"key", blank{}}, {"value", l}, {"from", blank{}}})
			}
		}
	}
	return out
}

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// A spec is a command defined once for both of jinid's command layers:
// cobra, in the full and tools builds, and dispatch, in the router's
// daemon binary. Cobra's package initialisation compiles regular
// expressions and it brings text/template: 0.45 MB of the mips daemon
// (docs/performance.md, "Router builds"), for the daemon's four commands.
// So the commands the daemon binary has (daemon, config, snapshot,
// version) are specs; the tools' commands are cobra's own.
type spec struct {
	use, short, long, example string
	// maxArgs is the most arguments the command takes; -1 is any.
	maxArgs int
	// flags defines the command's own flags (the global ones are
	// added).
	flags func(*pflag.FlagSet)
	// run runs the command; nil for a group of subcommands.
	run  func(*invocation) error
	subs []*spec
}

// invocation is what a command's run gets, whichever layer called it.
type invocation struct {
	ctx            context.Context
	flags          *pflag.FlagSet // the command's and the global flags, parsed
	args           []string
	stdout, stderr io.Writer
}

func (s *spec) name() string { return strings.Fields(s.use)[0] }

// checkArgs says whether args are as many as s takes, cobra's way.
func (s *spec) checkArgs(args []string) error {
	switch {
	case s.maxArgs < 0 || len(args) <= s.maxArgs:
		return nil
	case s.maxArgs == 0:
		return fmt.Errorf("unknown command %q for %q", args[0], "jinid "+s.name())
	}
	return fmt.Errorf("accepts at most %d arg(s), received %d", s.maxArgs, len(args))
}

// bindGlobal puts the global flags on fs.
func bindGlobal(fs *pflag.FlagSet, g *globalFlags) {
	fs.StringVar(&g.logLevel, "log-level", "info", "log detail: debug, info, warn or error")
	fs.StringVar(&g.logFormat, "log-format", "text", "log format: text (for people) or json (for collectors)")
}

// errHelp is dispatch's answer when help was printed.
var errHelp = errors.New("help printed")

// dispatch runs the command of args among root's subcommands, as cobra
// would: the global flags anywhere, a command's flags after its name,
// -h/--help at every level, --version at the top, usage errors
// (usageError) for what does not parse. elsewhere names commands of
// another binary, and where they are.
func dispatch(ctx context.Context, root *spec, g *globalFlags, args []string, stdout, stderr io.Writer, elsewhere map[string]string) error {
	// The global flags are one set at every level, so that a value (and
	// its being given) survives from the level it is parsed at.
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	bindGlobal(global, g)
	path := []*spec{root}
	for {
		cur := path[len(path)-1]
		leaf := cur.run != nil
		fs := pflag.NewFlagSet(commandPath(path), pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		// Above the leaf, parsing stops at the first word: the name of
		// a subcommand.
		fs.SetInterspersed(leaf)
		if cur.flags != nil {
			cur.flags(fs)
		}
		fs.AddFlagSet(global)
		help := fs.BoolP("help", "h", false, "help for "+cur.name())
		var version *bool
		if len(path) == 1 {
			version = fs.Bool("version", false, "version for jinid")
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, pflag.ErrHelp) {
				*help = true
			} else {
				return usageError{err}
			}
		}
		switch {
		case *help:
			writeHelp(stdout, path, fs)
			return errHelp
		case version != nil && *version:
			_, err := fmt.Fprintln(stdout, "jinid version "+strings.TrimPrefix(versionLine(), "jinid "))
			return err
		}
		rest := fs.Args()
		if !leaf {
			if len(rest) == 0 {
				writeHelp(stdout, path, fs)
				return errHelp
			}
			if rest[0] == "help" {
				// cobra's "help [command]": the help of the command named.
				for _, name := range rest[1:] {
					i := slices.IndexFunc(path[len(path)-1].subs, func(s *spec) bool { return s.name() == name })
					if i < 0 {
						return usagef("unknown help topic %q", strings.Join(rest[1:], " "))
					}
					path = append(path, path[len(path)-1].subs[i])
				}
				hfs := pflag.NewFlagSet(commandPath(path), pflag.ContinueOnError)
				if f := path[len(path)-1].flags; f != nil {
					f(hfs)
				}
				hfs.AddFlagSet(global)
				writeHelp(stdout, path, hfs)
				return errHelp
			}
			i := slices.IndexFunc(cur.subs, func(s *spec) bool { return s.name() == rest[0] })
			if i < 0 {
				if where, ok := elsewhere[rest[0]]; ok && len(path) == 1 {
					return notHere(rest[0], where)
				}
				return usagef("unknown command %q for %q", rest[0], commandPath(path))
			}
			path = append(path, cur.subs[i])
			args = rest[1:]
			continue
		}
		if err := cur.checkArgs(rest); err != nil {
			return usageError{err}
		}
		return cur.run(&invocation{ctx: ctx, flags: fs, args: rest, stdout: stdout, stderr: stderr})
	}
}

func commandPath(path []*spec) string {
	names := make([]string, len(path))
	for i, s := range path {
		names[i] = s.name()
	}
	return strings.Join(names, " ")
}

// writeHelp prints a command's help as cobra lays it out.
func writeHelp(w io.Writer, path []*spec, fs *pflag.FlagSet) {
	s := path[len(path)-1]
	var b strings.Builder
	b.WriteString(strings.TrimSpace(cmp.Or(s.long, s.short)) + "\n\nUsage:\n")
	full := commandPath(path[:len(path)-1])
	if full != "" {
		full += " "
	}
	full += s.use
	if s.run != nil {
		b.WriteString("  " + full + " [flags]\n")
	}
	if len(s.subs) > 0 {
		b.WriteString("  " + commandPath(path) + " [command]\n")
	}
	if s.example != "" {
		b.WriteString("\nExamples:\n" + s.example + "\n")
	}
	if len(s.subs) > 0 {
		b.WriteString("\nAvailable Commands:\n")
		width := 0
		for _, sub := range s.subs {
			width = max(width, len(sub.name()))
		}
		for _, sub := range s.subs {
			fmt.Fprintf(&b, "  %-*s %s\n", width+2, sub.name(), sub.short)
		}
	}
	b.WriteString("\nFlags:\n" + fs.FlagUsages())
	if len(s.subs) > 0 {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", commandPath(path))
	}
	io.WriteString(w, b.String())
}

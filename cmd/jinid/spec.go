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

// A spec is a command, declared once for both of jinid's command
// layers: cobra, where it is linked (the full and tools builds), and
// dispatch, in the router's daemon binary. Cobra's package
// initialisation compiles regular expressions and it brings
// text/template: 0.45 MB of the mips daemon (docs/performance.md,
// "Router builds"), for the daemon's four commands. Its methods are
// named as cobra's are, so a command reads the same either way.
type spec struct {
	use, short, long, example string
	// args is how many arguments it takes (exactArgs, minArgs,
	// maxArgs); the zero rule, none.
	args argsRule
	// run runs the command; nil for a group of subcommands.
	run  func(inv *invocation, args []string) error
	subs []*spec
	// hidden commands work but are not listed.
	hidden bool
	// flags and persistent (which the subcommands have too) are made on
	// first use.
	flags, persistent *pflag.FlagSet
}

// invocation is what a command's run gets, whichever layer called it.
type invocation struct {
	ctx            context.Context
	flags          *pflag.FlagSet // the command's, the inherited and the global flags, parsed
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (s *spec) name() string { return strings.Fields(s.use)[0] }

// Flags are the command's own flags.
func (s *spec) Flags() *pflag.FlagSet {
	if s.flags == nil {
		s.flags = pflag.NewFlagSet(s.name(), pflag.ContinueOnError)
	}
	return s.flags
}

// PersistentFlags are the command's flags that its subcommands have too.
func (s *spec) PersistentFlags() *pflag.FlagSet {
	if s.persistent == nil {
		s.persistent = pflag.NewFlagSet(s.name(), pflag.ContinueOnError)
	}
	return s.persistent
}

// AddCommand adds subcommands.
func (s *spec) AddCommand(subs ...*spec) { s.subs = append(s.subs, subs...) }

// An argsRule is how many arguments a command takes: exactly n, at least
// n or at most n (a rule of both bounds, no command needs). The zero rule
// takes none.
type argsRule struct{ min, max int }

func exactArgs(n int) argsRule { return argsRule{n, n} }
func minArgs(n int) argsRule   { return argsRule{n, -1} }
func maxArgs(n int) argsRule   { return argsRule{0, n} }

// check says what is wrong with args for the command at path, as
// cobra's own checks do.
func (r argsRule) check(path string, args []string) error {
	n := len(args)
	switch {
	case r.max == 0 && n > 0:
		return fmt.Errorf("unknown command %q for %q", args[0], path)
	case n >= r.min && (r.max < 0 || n <= r.max):
		return nil
	case r.min == r.max:
		return fmt.Errorf("accepts %d arg(s), received %d", r.min, n)
	case r.max < 0:
		return fmt.Errorf("requires at least %d arg(s), only received %d", r.min, n)
	}
	return fmt.Errorf("accepts at most %d arg(s), received %d", r.max, n)
}

// checkArgs checks args against s's rule, as a usage error.
func (s *spec) checkArgs(path string, args []string) error {
	if err := s.args.check(path, args); err != nil {
		return usageError{err: err, cmd: path}
	}
	return nil
}

// bindGlobal puts the global flags on fs.
func bindGlobal(fs *pflag.FlagSet, g *globalFlags) {
	fs.StringVar(&g.logLevel, "log-level", "info", "log detail: debug, info, warn or error (discover and browse: warn unless given)")
	fs.StringVar(&g.logFormat, "log-format", "text", "log format: text (for people) or json (for collectors)")
	fs.BoolVarP(&g.quiet, "quiet", "q", false, "print nothing when a command that changes something succeeds")
}

// done says what a command that changed something did, in one line on
// stdout, unless --quiet.
func done(inv *invocation, format string, args ...any) error {
	if q, _ := inv.flags.GetBool("quiet"); q {
		return nil
	}
	_, err := fmt.Fprintf(inv.stdout, format+"\n", args...)
	return err
}

// errHelp is dispatch's answer when help was printed.
var errHelp = errors.New("help printed")

// dispatch runs the command of args among root's subcommands, as cobra
// would: the global flags anywhere, a command's flags after its name,
// -h/--help at every level, --version at the top, usage errors
// (usageError) for what does not parse. elsewhere names commands of
// another binary, and where they are.
func dispatch(ctx context.Context, root *spec, g *globalFlags, args []string, stdin io.Reader, stdout, stderr io.Writer, elsewhere map[string]string) error {
	// The global flags are one set at every level, so that a value (and
	// its being given) survives from the level it is parsed at.
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	bindGlobal(global, g)
	path := []*spec{root}
	for {
		cur := path[len(path)-1]
		leaf := cur.run != nil
		fs := flagsAt(path, global)
		// Above the leaf, parsing stops at the first word: the name of
		// a subcommand.
		fs.SetInterspersed(leaf)
		help := fs.BoolP("help", "h", false, "help for "+cur.name())
		var version *bool
		if len(path) == 1 {
			version = fs.Bool("version", false, "version for jinid")
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, pflag.ErrHelp) {
				*help = true
			} else {
				return usageError{err: flagSuggestion(err, fs), cmd: commandPath(path)}
			}
		}
		switch {
		case *help:
			writeHelp(stdout, path, fs)
			return errHelp
		case version != nil && *version:
			_, err := io.WriteString(stdout, versionText())
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
				writeHelp(stdout, path, flagsAt(path, global))
				return errHelp
			}
			i := slices.IndexFunc(cur.subs, func(s *spec) bool { return s.name() == rest[0] })
			if i < 0 {
				if where, ok := elsewhere[rest[0]]; ok && len(path) == 1 {
					return notHere(rest[0], where)
				}
				var names []string
				for _, sub := range cur.subs {
					if !sub.hidden {
						names = append(names, sub.name())
					}
				}
				return usageError{err: fmt.Errorf("unknown command %q for %q%s", rest[0], commandPath(path), didYouMean(rest[0], names)), cmd: commandPath(path)}
			}
			path = append(path, cur.subs[i])
			args = rest[1:]
			continue
		}
		if err := cur.checkArgs(commandPath(path), rest); err != nil {
			return err
		}
		err := cur.run(&invocation{ctx: ctx, flags: fs, stdin: stdin, stdout: stdout, stderr: stderr}, rest)
		return atCommand(commandPath(path), err)
	}
}

// flagsAt is the flag set of the last command of path: its own flags,
// the persistent ones of it and the commands above it, and the global
// ones. The flags are shared with the specs, so a value given at one
// level is there at the next.
func flagsAt(path []*spec, global *pflag.FlagSet) *pflag.FlagSet {
	fs := pflag.NewFlagSet(commandPath(path), pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cur := path[len(path)-1]; cur.flags != nil {
		fs.AddFlagSet(cur.flags)
	}
	for _, s := range path {
		if s.persistent != nil {
			fs.AddFlagSet(s.persistent)
		}
	}
	fs.AddFlagSet(global)
	return fs
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
	// A group runs too (it shows this help, or refuses an unknown word),
	// so both lines, as cobra writes them.
	b.WriteString("  " + full + " [flags]\n")
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
			if sub.hidden {
				continue
			}
			fmt.Fprintf(&b, "  %-*s %s\n", width+2, sub.name(), sub.short)
		}
	}
	b.WriteString("\nFlags:\n" + fs.FlagUsages())
	if len(s.subs) > 0 {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", commandPath(path))
	}
	io.WriteString(w, b.String())
}

// Command jinid is a Jini discovery appliance: it speaks the Jini discovery
// protocols on the LAN, runs a lookup service, and serves the Jini helper
// services to clients in any language over HTTP/JSON.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// Exit statuses: 1 when a command failed (or, for discover, found
// nothing), 2 when it was called wrongly.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake in how a command was called: a flag, an
// argument, a combination that makes no sense.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func exitCode(err error) int {
	if errors.As(err, new(usageError)) {
		return exitUsage
	}
	return exitFailure
}

// globalFlags are shared by every command.
type globalFlags struct {
	logLevel  string
	logFormat string
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:   "jinid",
		Short: "A Jini discovery appliance",
		Long: `jinid brings the Jini discovery world to LAN gateways, boards and servers.

It speaks the Jini discovery protocols (versions 1 and 2) with Java (Apache
River) lookup services and clients, and lets you look at discovery traffic
packet by packet.

Start with:
` + startWith,
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
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "info", "log detail: debug, info, warn or error")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text (for people) or json (for collectors)")
	root.AddCommand(commands(&g)...)
	return root
}

// logger builds the process's logger from the global flags; logs go to
// stderr so that command output on stdout stays clean. The level can be
// changed while it runs (a reload).
func (g *globalFlags) logger(w io.Writer) (*slog.Logger, *slog.LevelVar, error) {
	level, err := parseLevel(g.logLevel)
	if err != nil {
		return nil, nil, err
	}
	lv := new(slog.LevelVar)
	lv.Set(level)
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(g.logFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), lv, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), lv, nil
	}
	return nil, nil, fmt.Errorf("--log-format %q: want text or json", g.logFormat)
}

func parseLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return level, nil
}

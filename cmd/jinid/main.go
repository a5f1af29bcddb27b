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
)

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
	// cobra says "unknown command" with a plain error.
	if errors.As(err, new(usageError)) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailure
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jinid:", err)
		os.Exit(exitCode(err))
	}
}

// globalFlags are shared by every command.
type globalFlags struct {
	logLevel  string
	logFormat string
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

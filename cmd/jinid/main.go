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
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// Exit statuses: 0 when a command did what it was asked, 1 when it
// failed (an unknown ID included; for discover, when it found nothing), 2
// when it was called wrongly: an unknown command or flag, a missing or
// extra argument, a bad value. docs/operations.md lists them.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake in how a command was called: a flag, an
// argument, a combination that makes no sense. cmd is the command's path
// ("jinid lookup register"), for the hint; the layer that runs the
// command fills it in (atCommand).
type usageError struct {
	err error
	cmd string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// configErrors are everything wrong with the daemon's configuration:
// each is printed, and the daemon exits 2 (docs/operations.md, "Exit
// statuses").
type configErrors []error

func (e configErrors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func usagef(format string, args ...any) error { return usageError{err: fmt.Errorf(format, args...)} }

// atCommand names the command of a usage error that does not say it yet.
func atCommand(path string, err error) error {
	var ue usageError
	if errors.As(err, &ue) && ue.cmd == "" {
		return usageError{err: err, cmd: path}
	}
	return err
}

func exitCode(err error) int {
	// cobra says "unknown command" with a plain error.
	if errors.As(err, new(usageError)) || errors.As(err, new(configErrors)) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitFailure
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(report(os.Stderr, err))
	}
}

// report says what went wrong, and what to do about it, and returns the
// exit status (docs/operations.md, "Exit statuses").
func report(w io.Writer, err error) int {
	var (
		ue    usageError
		ce    configErrors
		unr   *client.UnreachableError
		coded *client.Error
	)
	switch {
	case errors.As(err, &ce):
		for _, e := range ce {
			fmt.Fprintln(w, "jinid:", e)
		}
		fmt.Fprintf(w, "jinid: %d error(s) in the configuration: nothing started (jinid config check FILE checks a file without starting)\n", len(ce))
		return exitUsage
	case errors.As(err, &unr):
		also := ""
		if unr.Server == defaultServer && os.Getenv("JINID_SERVER") == "" {
			// Defaulted: the sockets were looked for first.
			also = " (and no socket at " + strings.Join(sockets(), " nor ") + ")"
		}
		fmt.Fprintf(w, "jinid: %v%s: is jinid running? Name its API with --server or $JINID_SERVER, or its socket with $JINID_API_SOCKET\n", unr, also)
	case errors.As(err, &coded) && coded.Status == http.StatusUnauthorized:
		fmt.Fprintf(w, "jinid: %v\n%s\n", err, tokenHint)
	case errors.As(err, &coded) && coded.Err.Code == apitypes.Stopping:
		// A wait (a watch's, a pull's) the daemon's stop ended.
		fmt.Fprintln(w, "jinid: the daemon stopped; run this again once it is back")
	default:
		fmt.Fprintln(w, "jinid:", err)
	}
	code := exitCode(err)
	if code == exitUsage {
		cmd := "jinid"
		if errors.As(err, &ue) && ue.cmd != "" {
			cmd = ue.cmd
		}
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", cmd)
	}
	return code
}

// tokenHint says how to get a token, after a 401.
const tokenHint = `The network API needs a token. On the jinid host, its administrator makes one:
  jinid token create --name NAME --scope client > NAME.token
Give its secret in $JINID_TOKEN, or the file holding it with --token-file.`

// globalFlags are shared by every command.
type globalFlags struct {
	logLevel  string
	logFormat string
	quiet     bool
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
	return nil, nil, usagef("--log-format %q: want text or json", g.logFormat)
}

// commandLogger is a one-shot command's logger (discover, browse):
// warnings and errors, unless --log-level says otherwise. What the
// daemon logs at info (the interfaces it serves) is noise on the
// standard error of a command that ends in a second.
func (g *globalFlags) commandLogger(inv *invocation) (*slog.Logger, error) {
	c := *g
	if !inv.flags.Changed("log-level") {
		c.logLevel = "warn"
	}
	log, _, err := c.logger(inv.stderr)
	return log, err
}

func parseLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return level, nil
}

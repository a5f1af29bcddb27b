//go:build !jinid_omit_daemon

package main

import (
	"bytes"
	"strings"
	"testing"
)

// dispatched runs args through the router binary's dispatcher.
func dispatched(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var g globalFlags
	var out, errb bytes.Buffer
	root := &spec{use: "jinid", short: rootShort, long: rootLong(), subs: daemonCommands(&g)}
	err = dispatch(t.Context(), root, &g, args, nil, &out, &errb, map[string]string{"lookup": toolsBinary})
	return out.String(), err
}

// TestDispatchHelp: help at every level, --version at the top, and the
// tools' commands say where they are.
func TestDispatchHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"jinid brings the Jini discovery world", "Available Commands:", "  daemon", "  config", "--log-level"}},
		{[]string{"--help"}, []string{"Usage:\n  jinid [flags]\n  jinid [command]"}},
		{[]string{"daemon", "-h"}, []string{"Usage:\n  jinid daemon [flags]", "Examples:\n  jinid daemon", "--no-multicast", "--log-format"}},
		{[]string{"config"}, []string{"Usage:\n  jinid config [flags]\n  jinid config [command]", "  check", "  print"}},
		{[]string{"config", "check", "--help"}, []string{"jinid config check [FILE] [flags]", "FILE:LINE:COLUMN"}},
		{[]string{"help", "daemon"}, []string{"Usage:\n  jinid daemon [flags]", "--api-listen"}},
	} {
		out, err := dispatched(t, c.args...)
		if err != errHelp {
			t.Errorf("%q: %v, want help", c.args, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: help does not say %q:\n%s", c.args, w, out)
			}
		}
	}
	if out, err := dispatched(t, "--version"); err != nil || out != versionText() {
		t.Errorf("--version: %q %v", out, err)
	}
	// A word that names no subcommand is a usage error (cobra alike).
	if _, err := dispatched(t, "config", "frobnicate"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("config frobnicate: %v, want a usage error", err)
	}
	if _, err := dispatched(t, "lookup", "list"); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "the tools binary") {
		t.Errorf("lookup: %v, want a usage error saying where it is", err)
	}
}

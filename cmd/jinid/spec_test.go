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
	root := &spec{use: "jinid", short: "A Jini discovery appliance", long: rootLong, subs: daemonCommands(&g)}
	var out, errb bytes.Buffer
	err = dispatch(t.Context(), root, &g, args, &out, &errb, map[string]string{"lookup": "the tools binary"})
	return out.String(), err
}

// TestDispatchMatchesCobra: the router binary's commands answer as the
// full build's do: the same output, the same failures, the same exit
// statuses.
func TestDispatchMatchesCobra(t *testing.T) {
	bad := writeConfig(t, `{"schemaVersion":1,"colour":"red"}`)
	good := writeConfig(t, `{"schemaVersion":1,"groups":["lab"]}`)
	for _, args := range [][]string{
		{"version"},
		{"version", "extra"},
		{"config", "check", good},
		{"config", "check", bad},
		{"config", "check", good, "extra"},
		{"config", "print", "--config", good, "--no-multicast"},
		{"--log-level", "debug", "config", "print", "--config", good},
		{"config", "print", "--config", good, "--log-format", "json"},
		{"config", "print", "--bogus"},
		{"daemon", "--log-level", "loud"},
		{"daemon", "--api-listen", "4162"},
		{"daemon", "--no-such-flag"},
		{"daemon", "extra"},
		{"snapshot", "--server", "ftp://x"},
		{"frobnicate"},
	} {
		var out, errb bytes.Buffer
		root := newRootCmd(&out, &errb)
		root.SetArgs(args)
		cerr := root.ExecuteContext(t.Context())
		dout, derr := dispatched(t, args...)
		switch {
		case (cerr == nil) != (derr == nil):
			t.Errorf("%q: cobra %v, dispatch %v", args, cerr, derr)
		case cerr != nil && exitCode(cerr) != exitCode(derr):
			t.Errorf("%q: exit %d (cobra: %v), dispatch %d (%v)", args, exitCode(cerr), cerr, exitCode(derr), derr)
		case out.String() != dout:
			t.Errorf("%q: cobra printed\n%s\ndispatch printed\n%s", args, out.String(), dout)
		}
	}
}

// TestDispatchHelp: help at every level, --version at the top, and the
// tools' commands say where they are.
func TestDispatchHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"jinid brings the Jini discovery world", "Available Commands:", "  daemon", "  config", "--log-level"}},
		{[]string{"--help"}, []string{"Usage:\n  jinid [command]"}},
		{[]string{"daemon", "-h"}, []string{"Usage:\n  jinid daemon [flags]", "Examples:\n  jinid daemon", "--no-multicast", "--log-format"}},
		{[]string{"config"}, []string{"Usage:\n  jinid config [command]", "  check", "  print"}},
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
	if out, err := dispatched(t, "--version"); err != nil || !strings.HasPrefix(out, "jinid version ") {
		t.Errorf("--version: %q %v", out, err)
	}
	// Stricter than cobra, which shows the group's help.
	if _, err := dispatched(t, "config", "frobnicate"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("config frobnicate: %v, want a usage error", err)
	}
	if _, err := dispatched(t, "lookup", "list"); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "the tools binary") {
		t.Errorf("lookup: %v, want a usage error saying where it is", err)
	}
}

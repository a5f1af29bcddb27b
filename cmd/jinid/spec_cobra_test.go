//go:build !jinid_omit_tools && !jinid_omit_daemon

package main

import (
	"bytes"
	"slices"
	"testing"
)

// TestDispatchMatchesCobra: every command, declared once as a spec,
// answers the same through dispatch (the router's daemon binary) as
// through cobra: the same output, the same failures, the same exit
// statuses; the tools' commands too, inherited flags and argument
// counts included, though only the full build has both layers.
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
		{"token", "revoke"},
		{"token", "create", "extra"},
		{"token", "list", "--server", "ftp://x"},
		{"lookup", "--server", "ftp://x", "list"},
		{"txn", "commit"},
		{"txn", "commit", "a", "b"},
		{"txn", "state", "x", "--wait-for", "soon"},
		{"lds", "registrars", "--server", "http://127.0.0.1:1", "--token-file", "/nonexistent/t", "x"},
		{"discover", "extra"},
		{"discover", "--timeout", "-1s"},
		{"inspect", "--pcap", "/nonexistent/x.pcap"},
		{"renewal", "--bogus"},
		{"lookup", "lsit"},
		{"config", "frobnicate"},
		{"lds", "frobnicate", "x"},
	} {
		var out, errb bytes.Buffer
		root := newRootCmd(&out, &errb)
		root.SetArgs(args)
		cerr := root.ExecuteContext(t.Context())
		var g globalFlags
		var dbuf bytes.Buffer
		derr := dispatch(t.Context(), rootSpec(&g), &g, args, nil, &dbuf, &bytes.Buffer{}, nil)
		dout := dbuf.String()
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

// The two halves' lists of command names (which say where a command
// of the other binary is) are the commands the full build has.
func TestCommandNames(t *testing.T) {
	var got []string
	for _, c := range newRootCmd(nil, nil).Commands() {
		if n := c.Name(); n != "help" && n != "completion" {
			got = append(got, n)
		}
	}
	want := append(append([]string{"version"}, daemonNames()...), toolNames()...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("commands %v; the lists say %v", got, want)
	}
}

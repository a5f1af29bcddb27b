package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"go.uber.org/goleak"
)

// run executes the CLI in-process.
func run(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newRootCmd(&out, &errb)
	cmd.SetArgs(args)
	if stdin != nil {
		cmd.SetIn(stdin)
	}
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, nil, "version")
	if err != nil || !regexp.MustCompile(`^jinid \S+ .*go1\.\d+.* linux/`).MatchString(out) {
		t.Fatalf("version: %q %v", out, err)
	}
}

// inspect --pcap prints exactly what the inspect package's golden files
// hold for the same capture.
func TestInspectPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"inspect", "--pcap", path}, "capture.txt"},
		{[]string{"inspect", "--pcap", path, "--json"}, "capture.jsonl"},
	} {
		out, _, err := run(t, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("internal", "inspect", "testdata", tc.golden))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%v printed:\n%s\nwant:\n%s", tc.args, out, want)
		}
	}
	// Standard input works the same.
	out, _, err := run(t, bytes.NewReader(pcaptest.Scenario(t)), "inspect", "--pcap", "-")
	if err != nil || !strings.Contains(out, "multicast-announcement v2 seq=42") {
		t.Fatalf("stdin: %v\n%s", err, out)
	}
}

func TestCommandErrors(t *testing.T) {
	notPcap := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notPcap, []byte("hello, this is not a capture"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect"}, "give --pcap FILE (use - for standard input) or --iface NAME"},
		{[]string{"inspect", "--pcap", "x", "--iface", "eth0"}, "cannot be combined"},
		{[]string{"inspect", "--pcap", "x", "--write", "y"}, "it needs --iface"},
		{[]string{"inspect", "--iface", "no-such-if0", "--duration", "1s"}, `interface "no-such-if0"`},
		{[]string{"discover", "--all-groups", "--groups", "a"}, "--all-groups cannot be combined"},
		{[]string{"discover", "--locator", "http://x"}, "--locator: locator \"http://x\""},
		{[]string{"discover", "--no-multicast"}, "nothing to do without --locator"},
		{[]string{"discover", "--timeout", "-1s"}, "must be positive"},
		{[]string{"inspect", "--pcap", "/nonexistent/x.pcap"}, "opening capture: open /nonexistent/x.pcap"},
		{[]string{"inspect", "--pcap", notPcap}, "not a pcap or pcapng capture"},
		{[]string{"daemon", "--log-level", "loud"}, `--log-level "loud": want debug, info, warn or error`},
		{[]string{"daemon", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"daemon", "--api-listen", "4162"}, "want host:port"},
		{[]string{"daemon", "--anonymous", "everyone"}, `--anonymous: anonymous access "everyone": want none, read, client or admin`},
		{[]string{"daemon", "--allow-outbound", "loopback"}, `--allow-outbound: "loopback": want a prefix`},
		{[]string{"daemon", "--advertise", "http://gw:4162"}, `host name "http://gw:4162": want an address or a DNS name`},
		{[]string{"daemon", "--api-host", "a b"}, `host name "a b"`},
		{[]string{"daemon", "--api-tls-cert", "c.pem"}, "give both a certificate and its key"},
		{[]string{"token", "create"}, "--name is required"},
		{[]string{"lookup", "list", "--server", "ftp://x"}, "want http://host:port, https://host:port or unix:///path/to/jinid.sock"},
		{[]string{"lookup", "list", "--server", "http://127.0.0.1:1", "--token-file", "/nonexistent/t"}, "--token-file: open /nonexistent/t"},
		{[]string{"version", "extra"}, "unknown command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		_, _, err := run(t, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// No test of the commands may leave a goroutine (a daemon, a watch, a
// server) running behind it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

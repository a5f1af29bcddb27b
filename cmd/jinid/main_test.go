package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// run executes the CLI in-process.
func run(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = execute(t.Context(), args, stdin, &out, &errb)
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, nil, "version")
	if err != nil || !regexp.MustCompile(`^jinid \S+ .*go1\.\d+.* linux/`).MatchString(out) {
		t.Fatalf("version: %q %v", out, err)
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
		{[]string{"lookup", "register"}, "give --type or --attr"},
		{[]string{"lookup", "register", "--type", "not a java name!!"}, "not a Java class or interface name"},
		{[]string{"lookup", "register", "--attr", "a.B:floor:int=two"}, `field floor: "two" is not a whole number`},
		{[]string{"lookup", "query", "--attr", "9lives"}, "is not a Java class name"},
		{[]string{"lds", "register", "--listener", "http://10.0.0.5:9000/"}, "--all-groups (every lookup service in range) or --no-groups"},
		{[]string{"lds", "register", "--listener", "http://10.0.0.5:9000/", "--all-groups", "--no-groups"}, "give one"},
		{[]string{"discover", "--locator", "jini://[fe80::1]"}, "a link-local address needs its interface as a zone"},
		{[]string{"inspect", "--iface", "any", "--iface", "eth0"}, "--iface any captures on every interface: give it alone"},
		{[]string{"lookup", "list", "-o", "xml"}, `-o "xml": want table, json, yaml or parsable`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		want := tc.want
		if where, ok := elsewhere()[tc.args[0]]; ok {
			want = where // a router's other binary has the command
		}
		_, _, err := run(t, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, want)
		}
	}
}

// The root help lists the first commands this build has, and says where
// the others are; each of those says where it is, as a usage error.
func TestRootHelp(t *testing.T) {
	out, _, err := run(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for steps, has := range map[string]bool{daemonSteps: hasDaemon, toolSteps: hasTools, versionStep: true} {
		for line := range strings.Lines(steps) {
			name := strings.Fields(line)[1]
			_, away := elsewhere()[name]
			if strings.Contains(out, strings.TrimSuffix(line, "\n")) != has || has == away {
				t.Errorf("root help lists %q: %v; the build has it: %v, says it is elsewhere: %v:\n%s", line, !has, has, away, out)
			}
		}
	}
	if !strings.Contains(out, "Usage:\n  jinid [flags]\n  jinid [command]") {
		t.Errorf("root help:\n%s", out)
	}
	for name, where := range elsewhere() {
		_, _, err := run(t, nil, name, "--help")
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), where) {
			t.Errorf("%s: %v, want a usage error saying it is in %s", name, err, where)
		}
	}
}

// No test of the commands may leave a goroutine (a daemon, a watch, a
// server) running behind it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

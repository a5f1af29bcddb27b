//go:build !jinid_omit_tools

package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// leafCommands are the commands that run (not groups), by path.
func leafCommands(s *spec, path []string, out map[string]*spec) {
	path = append(path, s.name())
	if s.run != nil {
		out[strings.Join(path[1:], " ")] = s
	}
	for _, sub := range s.subs {
		leafCommands(sub, path, out)
	}
}

// Every command: an unknown flag, and a wrong number of arguments, exit 2
// with the command's usage hint; a client command whose server is not
// there exits 1 saying what to do (docs/operations.md, "Exit statuses").
func TestExitStatuses(t *testing.T) {
	var g globalFlags
	all := map[string]*spec{}
	leafCommands(rootSpec(&g), nil, all)
	if len(all) < 30 {
		t.Fatalf("only %d commands found", len(all))
	}
	for path, s := range all {
		args := strings.Fields(path)
		check := func(what string, argv []string, want int, say string) {
			t.Helper()
			_, _, err := run(t, nil, argv...)
			var b bytes.Buffer
			code := 0
			if err != nil {
				code = report(&b, err)
			}
			if code != want || !strings.Contains(b.String(), say) {
				t.Errorf("jinid %s (%s): exit %d, said %q; want exit %d saying %q", strings.Join(argv, " "), what, code, b.String(), want, say)
			}
		}
		check("unknown flag", append(append([]string{}, args...), "--frobnicate"), exitUsage, "Run 'jinid "+path+" --help' for usage.")
		// Too many arguments (every command takes a bounded number,
		// or none), or too few.
		switch {
		case s.args.max >= 0:
			extra := append(append([]string{}, args...), strings.Split(strings.Repeat("x ", s.args.max+1), " ")[:s.args.max+1]...)
			check("extra argument", extra, exitUsage, "Run 'jinid "+path+" --help' for usage.")
		case s.args.min > 0:
			check("missing argument", args, exitUsage, "Run 'jinid "+path+" --help' for usage.")
		}
	}
	for _, argv := range [][]string{
		{"lookup", "list"}, {"lookup", "query", "--type", "a.B"}, {"lds", "show", "x"}, {"renewal", "list", "x"},
		{"mailbox", "listener", "x"}, {"token", "list"}, {"txn", "state", "1"}, {"lease", "cancel", "x"}, {"snapshot"},
	} {
		if _, away := elsewhere()[argv[0]]; away {
			continue // in the other binary of a router build
		}
		_, _, err := run(t, nil, append(argv, "--server", "http://127.0.0.1:1")...)
		var b bytes.Buffer
		if code := report(&b, err); code != exitFailure || b.String() != "jinid: cannot reach jinid at http://127.0.0.1:1: connection refused: is jinid running? Name its API with --server or $JINID_SERVER, or its socket with $JINID_API_SOCKET\n" {
			t.Errorf("%v against no server: exit %d, said %q", argv, code, b.String())
		}
	}
}

// A client finds the daemon's socket the way the daemon was told
// ($JINID_API_SOCKET), and, finding none and no daemon at the default
// address, names every place it looked.
func TestFindsTheDaemonAsTold(t *testing.T) {
	t.Setenv("JINID_SERVER", "")
	sock := filepath.Join(t.TempDir(), "api.sock")
	t.Setenv("JINID_API_SOCKET", sock)
	var f apiFlags
	if got := f.target(); got != defaultServer {
		t.Fatalf("no socket there: %s, want %s", got, defaultServer)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := f.target(); got != "unix://"+sock {
		t.Fatalf("target %s, want the socket $JINID_API_SOCKET names", got)
	}
	ln.Close()
	var b bytes.Buffer
	report(&b, &client.UnreachableError{Server: defaultServer, Why: "connection refused"})
	if !strings.Contains(b.String(), "no socket at "+sock+" nor ") || !strings.Contains(b.String(), "$JINID_API_SOCKET") {
		t.Errorf("said %q: want every place looked at named", b.String())
	}
}

// A 401 says how to get a token; an unknown subcommand, with or
// without --help, is a usage error.
func TestReportHints(t *testing.T) {
	var b bytes.Buffer
	err := error(&client.Error{Status: 401, Err: apitypes.Error{Code: apitypes.Unauthenticated, Message: "a token is needed"}, Coded: true})
	if code := report(&b, err); code != exitFailure || !strings.Contains(b.String(), "jinid token create --name NAME") ||
		!strings.Contains(b.String(), "$JINID_TOKEN") {
		t.Errorf("401: exit %d, said %q", code, b.String())
	}
	for _, argv := range [][]string{{"lookup", "lsit"}, {"lookup", "lsit", "--help"}, {"frob", "--help"}, {"lds", "frob", "x"}} {
		_, _, err := run(t, nil, argv...)
		var ue usageError
		if !errors.As(err, &ue) || exitCode(err) != exitUsage {
			t.Errorf("%v: %v, want a usage error", argv, err)
		}
	}
}

// A mistyped command or flag says what was meant, when one is close.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lookup", "lsit"}, `unknown command "lsit" for "jinid lookup" (did you mean "list"?)`},
		{[]string{"lookup", "list", "--sever", "x"}, `unknown flag: --sever (did you mean "--server"?)`},
	} {
		_, _, err := run(t, nil, c.args...)
		if err == nil || err.Error() != c.want || exitCode(err) != exitUsage {
			t.Errorf("%v: %v, want %q (exit 2)", c.args, err, c.want)
		}
	}
	if s := didYouMean("frobnicate", []string{"list", "query"}); s != "" {
		t.Errorf("a word close to none: %q", s)
	}
}

// -q prints nothing when a change succeeds, a registration too.
func TestQuietRegister(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"serviceID":"5a7e1c00-0000-4000-8000-000000000001","lease":{"id":"l1","expiration":1}}`))
	}))
	defer srv.Close()
	out, _, err := run(t, nil, "lookup", "register", "--type", "a.B", "-q", "--server", srv.URL)
	if err != nil || out != "" {
		t.Errorf("lookup register -q: %v, printed %q", err, out)
	}
}

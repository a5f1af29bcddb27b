package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// The real binary starts, serves /healthz, and exits 0 on SIGTERM and on
// SIGINT.
func TestDaemonStopsOnSignal(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "daemon", "--api-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-multicast", "--discovery-port", "0", "--log-format", "text")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			api := ""
			var logs []string
			for api == "" && sc.Scan() {
				logs = append(logs, sc.Text())
				if m := regexp.MustCompile(`api=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
					api = m[1]
				}
			}
			if api == "" {
				t.Fatalf("daemon never said where it listens; logs:\n%s", strings.Join(logs, "\n"))
			}
			resp, err := http.Get(api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz %d", resp.StatusCode)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				logs = append(logs, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit after %v: %v; logs:\n%s", sig, err, strings.Join(logs, "\n"))
			}
			if !strings.Contains(strings.Join(logs, "\n"), "jinid stopped") {
				t.Fatalf("no clean stop logged:\n%s", strings.Join(logs, "\n"))
			}
		})
	}
}

// A daemon with clients waiting on it stops at once, exit 0: a
// `lookup watch` and a `mailbox pull --wait` in their long polls are
// ended by the stop (answered Stopping), and each says the daemon
// stopped, exit 1; a `browse --watch` reading it goes on (the daemon is
// one lookup service of those it follows) and says it cannot read it.
// Before, the long polls held the stop for the whole
// 10 s of its deadline, and the daemon exited 1 (the API and the join
// manager not stopped in time).
func TestDaemonStopsUnderWaitingClients(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	run := func(args ...string) string { t.Helper(); return d.CLI(t, bin, args...) }
	run("lookup", "register", "--type", "com.example.Thing", "--duration", "10m", "-q")
	unicast := regexp.MustCompile(`unicast=\S*:(\d+)`).FindStringSubmatch(d.Log())
	if unicast == nil {
		t.Fatalf("no unicast discovery port in the daemon's log:\n%s", d.Log())
	}
	var box struct{ Registration string }
	json.Unmarshal([]byte(run("mailbox", "register", "--pull", "-o", "json")), &box)
	if box.Registration == "" {
		t.Fatal("no mailbox registration")
	}
	type client struct {
		name string
		cmd  *exec.Cmd
		out  *bytes.Buffer
	}
	var clients []client
	for name, args := range map[string][]string{
		"lookup watch": {"lookup", "watch", "--type", "com.example.Nothing"},
		"mailbox pull": {"mailbox", "pull", box.Registration, "--wait", "25s"},
	} {
		c := client{name: name, cmd: exec.Command(bin, append(args, "--server", d.API)...), out: new(bytes.Buffer)}
		c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
		clients = append(clients, c)
	}
	browse := exec.Command(bin, "browse", "--watch", "--no-multicast", "--locator", "jini://127.0.0.1:"+unicast[1])
	browseOut, browseErr := new(testenv.Buffer), new(testenv.Buffer)
	browse.Stdout, browse.Stderr = browseOut, browseErr
	if err := browse.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { browse.Process.Kill(); browse.Wait() })
	testenv.Until(t, "browse --watch listing the service", func() bool { return strings.Contains(browseOut.String(), "com.example.Thing") })
	// Both in their long poll.
	const next = `jinid_api_requests_in_flight{route="GET /v1/mailbox/registrations/{id}/iterators/{it}/next"}`
	testenv.Until(t, "two long polls waiting", func() bool {
		resp, err := http.Get(d.API + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), next+" 2")
	})
	// Exit 0 says every part stopped within the daemon's deadline.
	began := time.Now()
	d.Stop(t)
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	for _, c := range clients {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(c.out.String(), "the daemon stopped") {
			t.Errorf("%s: %v, printed %q; want exit 1 saying the daemon stopped", c.name, err, c.out)
		}
	}
	testenv.Until(t, "browse --watch saying it cannot read the daemon", func() bool { return strings.Contains(browseErr.String(), "jinid browse: ") })
	browse.Process.Signal(syscall.SIGINT)
	if err := browse.Wait(); err != nil {
		t.Errorf("browse --watch, interrupted after the daemon stopped: %v\n%s", err, browseErr)
	}
}

// A daemon given a bad config file starts nothing and exits 2, printing
// every error `jinid config check` prints of the file (it exited 1 with
// the first error alone).
func TestDaemonBadConfig(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	path := filepath.Join(t.TempDir(), "jinid.json")
	os.WriteFile(path, []byte(`{"groups": ["ok", 5], "announceInterval": "x", "logLevel": "loud", "apiListen": "nope", "limits": {"items": -1}, "bogus": 1}`+"\n"), 0o644)
	check, _ := exec.Command(bin, "config", "check", path).Output()
	want := strings.Split(strings.TrimSpace(string(check)), "\n")
	if len(want) != 6 {
		t.Fatalf("config check listed %d errors, want 6:\n%s", len(want), check)
	}
	// (No --api-listen: it would set what the file sets wrong.)
	cmd := exec.Command(bin, "daemon", "--config", path, "--no-multicast", "--data-dir", t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("the daemon with a bad config: %v, want exit 2\n%s", err, out)
	}
	for _, line := range want {
		if !strings.Contains(string(out), "jinid: "+line+"\n") {
			t.Errorf("the daemon did not say %q:\n%s", line, out)
		}
	}
}

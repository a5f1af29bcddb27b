package e2e

import (
	"bufio"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/services/apitypes"
)

// TestLDSCommands is the two-terminal flow of `jinid lds --help`, on
// loopback: `jinid listen` in one, `jinid lds ...` in the other, with a
// second daemon as the lookup service found by locator.
func TestLDSCommands(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	ldsd := jinidtest.StartDaemon(t, bin, t.TempDir())
	defer ldsd.Stop(t)
	lus := jinidtest.StartDaemon(t, bin, t.TempDir())
	defer lus.Stop(t)
	m := regexp.MustCompile(`unicast=\S*:(\d+)`).FindStringSubmatch(lus.Log())
	if m == nil {
		t.Fatalf("no unicast port in the log:\n%s", lus.Log())
	}
	loc := "jini://127.0.0.1:" + m[1]
	lusInfo, err := jinidtest.Client(t, lus.API).Lookup(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	listen := exec.Command(bin, "listen", "--addr", "127.0.0.1:0")
	stdout, _ := listen.StdoutPipe()
	stderr, _ := listen.StderrPipe()
	if err := listen.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { listen.Process.Signal(syscall.SIGTERM); listen.Wait() }()
	first, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	lm := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(first)
	if lm == nil {
		t.Fatalf("listen printed %q", first)
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(words ...string) {
		t.Helper()
		select {
		case line := <-lines:
			for _, w := range words {
				if !strings.Contains(line, w) {
					t.Fatalf("listen printed %q; want %q in it", line, w)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("listen printed nothing; want %q", words)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--server", ldsd.API)...).CombinedOutput()
		if err != nil {
			t.Fatalf("jinid %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	out := run("lds", "register", "--no-groups", "--locator", loc, "--listener", lm[1]+"/events", "--handback", "mine", "--duration", "10m")
	rm := regexp.MustCompile(`registration\s+(\S+)`).FindStringSubmatch(out)
	if rm == nil {
		t.Fatalf("register printed %q", out)
	}
	id := rm[1]
	expect("RemoteDiscoveryEvent", "seqNum=1", "discovered=", lusInfo.ServiceID, `handback="mine"`)
	if s := run("lds", "show", id); !strings.Contains(s, loc) || !regexp.MustCompile(`(?m)^groups +\(none\)$`).MatchString(s) {
		t.Fatalf("show printed %q", s)
	}
	if s := run("lds", "registrars", id); !strings.Contains(s, lusInfo.ServiceID) || !regexp.MustCompile(`jinid +http://`).MatchString(s) {
		t.Fatalf("registrars printed %q", s)
	}
	if s := run("lds", "groups", id, "set", "--all"); !regexp.MustCompile(`(?m)^groups +all$`).MatchString(s) {
		t.Fatalf("groups set --all printed %q", s)
	}
	run("lds", "locators", id, "remove", loc)
	expect("seqNum=2", "discarded=", lusInfo.ServiceID)
	// Refused with the specification's error, and a non-zero exit.
	if out, err := exec.Command(bin, "lds", "groups", id, "add", "x", "--server", ldsd.API).CombinedOutput(); err == nil || !strings.Contains(string(out), "UnsupportedOperation") {
		t.Fatalf("adding to ALL_GROUPS: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "lds", "register", "--server", ldsd.API).CombinedOutput(); err == nil || !strings.Contains(string(out), "--listener is required") {
		t.Fatalf("register without a listener: %v %s", err, out)
	}
	// Not in the set: the specification's discard does nothing, and the
	// command says so, failing (exit 1).
	dout, err := exec.Command(bin, "lds", "discard", id, lusInfo.ServiceID, "--server", ldsd.API).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(dout), "is not among registration") {
		t.Fatalf("discarding a lookup service the registration does not hold: %v %s", err, dout)
	}
}

// ldsEvent is a remote discovery event as a listener receives it: the
// fields these tests read.
type ldsEvent struct {
	Discarded  bool                 `json:"discarded"`
	Registrars []apitypes.Registrar `json:"registrars"`
}

func (e ldsEvent) ids() []string {
	var out []string
	for _, r := range e.Registrars {
		out = append(out, r.ServiceID)
	}
	slices.Sort(out)
	return out
}

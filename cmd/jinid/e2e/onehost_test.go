package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// On one host, as the docs show it: the host's administrator, on the
// local socket, names listeners on loopback (jinid listen on this host)
// and they get their events, with no --allow-outbound; a network client,
// even with an admin token, may not name them. A listener that is this
// daemon's own mailbox listener is delivered inside the daemon, for any
// client.
func TestOneHostFlows(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	d := jinidtest.StartStrictDaemon(t, bin, dir)
	sink := jinidtest.NewSink(t, nil, "127.0.0.1")
	local := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--server", "unix://"+d.Socket)...).CombinedOutput()
		return string(out), err
	}
	network := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--server", d.API)...)
		cmd.Env = append(os.Environ(), "JINID_TOKEN="+jinidtest.AdminToken(t, dir))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The administrator's notify registration on loopback, and its
	// event.
	if out, err := local("lookup", "notify", "--listener", sink.URL+"/admin", "--type", "com.example.Printer"); err != nil {
		t.Fatalf("the administrator naming a loopback listener: %v\n%s", err, out)
	}
	if out, err := local("lookup", "register", "--type", "com.example.Printer"); err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}
	sink.Wait(t, "/admin", 1)
	// The same from the network, with an admin token: refused.
	if out, err := network("lookup", "notify", "--listener", sink.URL+"/net", "--type", "com.example.Printer"); err == nil ||
		!strings.Contains(out, "loopback address") {
		t.Fatalf("a network client naming a loopback listener: %v\n%s", err, out)
	}
	// The LDS too (the README's example), and a participant
	// (docs/transactions.md).
	if out, err := local("lds", "register", "--groups", "lab", "--listener", sink.URL+"/lds"); err != nil {
		t.Fatalf("lds register with a loopback listener: %v\n%s", err, out)
	}
	if out, err := network("lds", "register", "--groups", "lab", "--listener", sink.URL+"/lds"); err == nil {
		t.Fatalf("lds register from the network with a loopback listener: accepted\n%s", out)
	}

	// A network client's notify registration naming this daemon's own
	// mailbox listener: delivered inside, pulled back.
	out, err := network("mailbox", "register", "--pull")
	if err != nil {
		t.Fatalf("mailbox register: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`registration\s+(\S+)\nlistener\s+(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("mailbox register printed %q", out)
	}
	if out, err := network("lookup", "notify", "--listener", m[2], "--type", "com.example.Scanner"); err != nil {
		t.Fatalf("notify naming the daemon's own mailbox listener: %v\n%s", err, out)
	}
	if out, err := network("lookup", "register", "--type", "com.example.Scanner"); err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}
	out, err = network("mailbox", "pull", m[1], "--wait", "10s", "--max", "1", "-o", "json")
	if err != nil || !strings.Contains(out, `"transition":"NOMATCH_MATCH"`) {
		t.Fatalf("pulling what the mailbox got: %v\n%s", err, out)
	}
}

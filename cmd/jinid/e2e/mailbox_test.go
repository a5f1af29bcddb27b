package e2e

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// TestMailboxChain: a lookup-service notify registration whose listener
// is a mailbox; the events are drained later by pull, with the CLI.
func TestMailboxChain(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	defer d.Stop(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--server", d.API)...).Output()
		if err != nil {
			t.Fatalf("jinid %v: %v", args, err)
		}
		return string(out)
	}
	m := regexp.MustCompile(`registration\s+(\S+)\nlistener\s+(\S+)`).FindStringSubmatch(run("mailbox", "register", "--pull"))
	if m == nil {
		t.Fatal("mailbox register printed no listener")
	}
	reg, listener := m[1], m[2]
	if l := strings.TrimSpace(run("mailbox", "listener", reg)); l != listener {
		t.Fatalf("listener %q, registered as %q", l, listener)
	}
	run("lookup", "notify", "--type", "com.example.Printer", "--listener", listener, "--transitions", "NOMATCH_MATCH")
	var ids []string
	for range 3 {
		out := run("lookup", "register", "--type", "com.example.Printer", "--duration", "10m")
		ids = append(ids, regexp.MustCompile(`serviceID\s+(\S+)`).FindStringSubmatch(out)[1])
	}
	// The client comes back later and pulls.
	var lines []string
	deadline := time.Now().Add(10 * time.Second)
	for len(lines) < 3 && time.Now().Before(deadline) {
		out := strings.TrimSpace(run("mailbox", "pull", reg, "--wait", "1s", "--max", "3", "-o", "json"))
		if out != "" {
			lines = append(lines, strings.Split(out, "\n")...)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("pulled %d events: %q", len(lines), lines)
	}
	for i, l := range lines {
		var ev struct {
			Type       string `json:"type"`
			SeqNum     int64  `json:"seqNum"`
			ServiceID  string `json:"serviceID"`
			Transition string `json:"transition"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "ServiceEvent" || ev.SeqNum != int64(i+1) || ev.ServiceID != ids[i] || ev.Transition != "NOMATCH_MATCH" {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if out := strings.TrimSpace(run("mailbox", "pull", reg)); out != "" {
		t.Fatalf("pulled again: %q", out)
	}
	// A push target receives later ones.
	sink := jinidtest.NewSink(t, nil, "127.0.0.1")
	run("mailbox", "enable", reg, sink.URL+"/push")
	run("lookup", "register", "--type", "com.example.Printer", "--duration", "10m")
	testenv.Until(t, "the pushed event", func() bool { return len(sink.Events("/push")) == 1 })
	run("mailbox", "disable", reg)
}

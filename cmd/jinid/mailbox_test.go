package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMailboxChain: a lookup-service notify registration whose listener
// is a mailbox; the events are drained later by pull, with the CLI.
func TestMailboxChain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	d := startDaemon(t, bin, t.TempDir())
	defer d.stop(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--server", d.api)...).Output()
		if err != nil {
			t.Fatalf("jinid %v: %v", args, err)
		}
		return string(out)
	}
	m := regexp.MustCompile(`registration (\S+)\nlistener\s+(\S+)`).FindStringSubmatch(run("mailbox", "register", "--pull"))
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
		ids = append(ids, regexp.MustCompile(`serviceID (\S+)`).FindStringSubmatch(out)[1])
	}
	// The client comes back later and pulls.
	var lines []string
	deadline := time.Now().Add(10 * time.Second)
	for len(lines) < 3 && time.Now().Before(deadline) {
		out := strings.TrimSpace(run("mailbox", "pull", reg, "--wait", "1s", "--max", "3"))
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
	sink := newRawSink(t, nil, "127.0.0.1")
	run("mailbox", "enable", reg, sink.base+"/push")
	run("lookup", "register", "--type", "com.example.Printer", "--duration", "10m")
	waitUntil(t, func() bool { return len(sink.events("/push")) == 1 })
	run("mailbox", "disable", reg)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

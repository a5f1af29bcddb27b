package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/services/api/client"
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

// TestMailboxCrash posts events from several sources concurrently while
// the daemon is SIGKILLed at random moments (and restarted at once, on
// the same port): afterwards every event the mailbox acknowledged is
// pulled exactly once, none twice, and each source's in the order sent.
func TestMailboxCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := startDaemon(t, bin, dir, "--api-listen", addr)
	c, _ := client.New(d.api, nil)
	reg, err := c.MailboxRegister(t.Context(), 3_600_000, true)
	if err != nil {
		t.Fatal(err)
	}
	const sources = 4
	var mu sync.Mutex
	acked := map[string]map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 2 * time.Second}
	for s := range sources {
		src := fmt.Sprintf("s%d", s)
		acked[src] = map[int]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"source":{"service":"crash","id":%q},"eventID":1,"seqNum":%d,"type":"T","handback":null}`, src, seq)
				resp, err := hc.Post(reg.Listener.URL, "application/json", strings.NewReader(body))
				if err != nil {
					time.Sleep(20 * time.Millisecond) // down: the next one may or may not be stored
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == 204 {
					mu.Lock()
					acked[src][seq] = true
					mu.Unlock()
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const kills = 20
	for range kills {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		d.kill()
		d = startDaemon(t, bin, dir, "--api-listen", addr)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	defer d.stop(t)

	it, err := c.MailboxIterator(t.Context(), reg.ID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[int]bool{}
	last := map[string]int{}
	total := 0
	for {
		raw, err := c.MailboxNext(t.Context(), reg.ID, it, 500)
		if err != nil {
			t.Fatal(err)
		}
		if raw == nil {
			break
		}
		var ev struct {
			Source struct {
				ID string `json:"id"`
			} `json:"source"`
			SeqNum int `json:"seqNum"`
		}
		json.Unmarshal(raw, &ev)
		src := ev.Source.ID
		if seen[src] == nil {
			seen[src] = map[int]bool{}
		}
		if seen[src][ev.SeqNum] {
			t.Fatalf("%s seq %d pulled twice", src, ev.SeqNum)
		}
		if ev.SeqNum <= last[src] {
			t.Fatalf("%s seq %d after %d: out of order", src, ev.SeqNum, last[src])
		}
		seen[src][ev.SeqNum], last[src] = true, ev.SeqNum
		total++
	}
	nacked := 0
	for src, m := range acked {
		for seq := range m {
			nacked++
			if !seen[src][seq] {
				t.Errorf("%s seq %d was acknowledged but never pulled", src, seq)
			}
		}
	}
	t.Logf("%d kills; %d events acknowledged, %d pulled (the rest were in flight at a kill)", kills, nacked, total)
	if nacked < 100 {
		t.Fatalf("only %d events acknowledged: the test did not exercise much", nacked)
	}
}

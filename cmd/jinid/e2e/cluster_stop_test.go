package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// A long poll a door forwards to the node holding its shard ends at once
// when either stops:
//   - the door stopping ends it as a daemon's own long poll ends (the
//     client told "the daemon stopped"), and the door exits 0 at once
//     (it waited on the forwarded request);
//   - the holder stopping ends it with the shard's node unavailable,
//     to be asked again (the door goes on: the client was told the
//     daemon it reached had stopped).
func TestClusterStopsUnderForwardedLongPolls(t *testing.T) {
	t.Parallel()
	s := newClusterSite(t)
	a := s.node(t, "node-a")
	a.serving(t)
	b := s.node(t, "node-b")
	b.waiting(t)
	c := s.node(t, "node-c")
	c.waiting(t)
	s.allShardsHeldBy(t, 3)
	// A client whose shard node-a holds: its pulls through b and c are
	// forwarded to a.
	h, _ := s.clientOfShardAt(t, func(n *clusterNode) bool { return n == a }, a, b, c)
	box, err := jinidtest.LabClient(t, h, a.api).MailboxRegister(t.Context(), 600_000, true)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: jinidtest.DialFrom(h)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	// The node holding the shard counts each request forwarded to it:
	// the pull's iterator, then its long poll.
	forwardedToA := func() int {
		resp, err := hc.Get(a.api + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		for _, l := range strings.Split(string(b), "\n") {
			var v int
			if _, err := fmt.Sscanf(l, `jinid_cluster_forwarded_total{for="shard"} %d`, &v); err == nil {
				return v
			}
		}
		return 0
	}
	waiting := func(n *clusterNode, before int) {
		t.Helper()
		testenv.Until(t, "a long poll forwarded by "+n.name+" waiting at node-a", func() bool { return forwardedToA() >= before+2 })
	}
	pull := func(through *clusterNode) (*exec.Cmd, *bytes.Buffer) {
		cmd := h.Command(context.Background(), s.bin, "mailbox", "pull", box.ID, "--wait", "25s", "--server", through.api)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, out
	}
	ended := func(what string, cmd *exec.Cmd, out *bytes.Buffer, want string) {
		t.Helper()
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out.String(), want) {
			t.Errorf("%s: %v, printed %q; want exit 1 saying %q", what, err, out, want)
		}
	}

	// The door stops.
	before := forwardedToA()
	cmd, out := pull(b)
	waiting(b, before)
	began := time.Now()
	stop(t, b.LabProc)
	t.Logf("the door stopped in %v", time.Since(began).Round(time.Millisecond))
	// The stop ended the forwarded wait; before, the server's grace (5 s)
	// ran out with it, cancelled then and logged as a failure.
	if strings.Contains(b.Log(), `msg="forwarding to another node"`) {
		t.Errorf("the door's stop did not end the long poll it forwarded:\n%s", b.Log())
	}
	ended("a pull through the door, the door stopped", cmd, out, "the daemon stopped")

	// The holder stops.
	before = forwardedToA()
	cmd, out = pull(c)
	waiting(c, before)
	stop(t, a.LabProc)
	ended("a pull through the door, the shard's node stopped", cmd, out, "try again")
}

// stop stops a lab daemon as systemd does (SIGTERM) and fails the test
// unless it exits 0.
func stop(t *testing.T, p *jinidtest.LabProc) {
	t.Helper()
	p.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(); err != nil {
		t.Errorf("the daemon, stopped: %v\n%s", err, p.Log())
	}
}

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// jinid lookup watch lists what is there, then a line for each service
// that comes and goes, through a mailbox of the same jinid (no address
// the daemon must reach); Ctrl-C ends it cleanly, and its notify and
// mailbox registrations go with it.
func TestLookupWatch(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	run := func(args ...string) string { t.Helper(); return d.CLI(t, bin, args...) }
	before := regexp.MustCompile(`serviceID\s+(\S+)`).FindStringSubmatch(run("lookup", "register", "--type", "com.example.Printer"))[1]

	watch := exec.Command(bin, "lookup", "watch", "--type", "com.example.Printer", "-o", "json", "--server", d.API)
	stdout, _ := watch.StdoutPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill(); watch.Wait() })
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var v map[string]any
			json.Unmarshal(sc.Bytes(), &v)
			lines <- v
		}
		close(lines)
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case v := <-lines:
			return v
		case <-time.After(15 * time.Second):
			t.Fatalf("no line for %s", what)
		}
		return nil
	}
	if v := next("what was there"); v["change"] != "+" || v["serviceID"] != before {
		t.Fatalf("first line %v, want + %s", v, before)
	}
	out := run("lookup", "register", "--type", "com.example.Printer", "--endpoint", "ipp://10.0.0.9/q", "-o", "json")
	var reg struct{ ServiceID, Lease string }
	json.Unmarshal([]byte(out), &reg)
	if v := next("a registration"); v["change"] != "+" || v["serviceID"] != reg.ServiceID || v["endpoint"] != "ipp://10.0.0.9/q" {
		t.Fatalf("after a registration: %v", v)
	}
	run("lease", "cancel", reg.Lease)
	if v := next("a cancellation"); v["change"] != "-" || v["serviceID"] != reg.ServiceID {
		t.Fatalf("after a cancellation: %v", v)
	}
	watch.Process.Signal(syscall.SIGINT)
	for range lines {
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("the watch, interrupted: %v", err)
	}
	// Its registrations went with it.
	testenv.Until(t, "the watch's notify and mailbox registrations to be cancelled", func() bool {
		resp, err := http.Get(d.API + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := string(b)
		return strings.Contains(m, `jinid_registrations{service="lookup_notify"} 0`) && strings.Contains(m, `jinid_registrations{service="mailbox"} 0`)
	})
}

package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

func TestEndToEndLookup(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	// No Java: the lookup service holds only what the test registers
	// (with Java clients allowed in, it holds jinid's helper services too).
	d := jinidtest.StartDaemon(t, bin, t.TempDir(), "--no-java")
	defer d.Stop(t)
	c, err := client.New(d.API, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := jinidtest.NewSink(t, nil, "")
	name := func(n string) apitypes.Attribute {
		return apitypes.Attribute{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": n}}
	}
	n, err := c.Notify(ctx, client.NotifyRequest{
		Template:    apitypes.Template{Types: []string{"com.example.Printer"}, Attributes: []apitypes.Attribute{name("lobby")}},
		Transitions: []string{apitypes.MatchNoMatch, apitypes.NoMatchMatch, apitypes.MatchMatch},
		Listener:    l.URL + "/events", Handback: []byte("hb"), Duration: 60_000,
	})
	if err != nil {
		t.Fatal(err)
	}

	reg, err := c.Register(ctx, apitypes.Item{Types: []string{"com.example.Printer"}, Attributes: []apitypes.Attribute{name("lobby")}}, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Lease.Remaining <= 0 || reg.Lease.Remaining > 1500 || reg.Lease.Grantor != d.API {
		t.Fatalf("lease %+v", reg.Lease)
	}
	items, total, err := c.Query(ctx, apitypes.Template{Attributes: []apitypes.Attribute{name("lobby")}}, 10)
	if err != nil || total != 1 || items[0].ServiceID != reg.ServiceID {
		t.Fatalf("query: %+v %d %v", items, total, err)
	}
	if err := c.ChangeAttributes(ctx, reg.ServiceID, apitypes.AttributeChange{Add: []apitypes.Attribute{{Type: "com.example.Color", Fields: map[string]any{"color": "red"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, granted, err := c.Renew(ctx, reg.Lease.ID, 1500); err != nil || granted <= 0 {
		t.Fatalf("renew: %d %v", granted, err)
	}
	// Let the lease lapse: MATCH_NOMATCH.
	evs := l.Wait(t, "/events", 3)
	want := []string{apitypes.NoMatchMatch, apitypes.MatchMatch, apitypes.MatchNoMatch}
	for i, ev := range evs {
		if ev["transition"] != want[i] || int64(ev["seqNum"].(float64)) != int64(i+1) || int64(ev["eventID"].(float64)) != n.EventID ||
			ev["handback"] != "aGI=" || ev["serviceID"] != reg.ServiceID || ev["type"] != "ServiceEvent" {
			t.Errorf("event %d: %v; want %s with seqNum %d", i, ev, want[i], i+1)
		}
	}
	if _, total, _ := c.Query(ctx, apitypes.Template{}, 10); total != 0 {
		t.Errorf("%d items after the lease lapsed", total)
	}
	if _, _, err := c.Renew(ctx, reg.Lease.ID, 1000); !fault.Is(err, apitypes.UnknownLease) {
		t.Errorf("renewing a lapsed lease: %v", err)
	}
	if err := c.Cancel(ctx, n.Lease.ID); err != nil {
		t.Errorf("cancelling the notify registration: %v", err)
	}
	_ = context.Background
}

// The client commands against a running daemon.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir(), "--no-java") // only what the test registers
	defer d.Stop(t)
	run := func(args ...string) string { t.Helper(); return d.CLI(t, bin, args...) }
	out := run("lookup", "register", "--type", "com.example.Printer", "--attr", "net.jini.lookup.entry.Name:name=lobby,floor:int=2", "--duration", "10m")
	m := regexp.MustCompile(`serviceID\s+(\S+)\nlease\s+(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("register printed %q", out)
	}
	sid, leaseID := m[1], m[2]
	// Typed: the text "2" is not the number 2.
	if q := run("lookup", "query", "--attr", "net.jini.lookup.entry.Name:floor=2"); strings.Contains(q, sid) ||
		!strings.Contains(q, `floor=2 asks for the text "2": for a value of another type, say it (floor:int=2)`) {
		t.Fatalf("a query for the text \"2\" found the number 2, or did not say why not: %q", q)
	}
	if q := run("lookup", "query", "--attr", "net.jini.lookup.entry.Name:floor:int=2"); !strings.Contains(q, sid) {
		t.Fatalf("query printed %q", q)
	}
	if q := run("lookup", "query", "--attr", "net.jini.lookup.entry.Name:floor:int=3"); strings.Contains(q, sid) {
		t.Fatalf("query for another floor printed %q", q)
	}
	if l := run("lookup", "list", "--json"); !strings.Contains(l, `"totalMatches":1`) {
		t.Fatalf("list printed %q", l)
	}
	if r := run("lease", "renew", leaseID, "--duration", "1h"); !strings.Contains(r, "renewed") {
		t.Fatalf("renew printed %q", r)
	}
	if r := run("lease", "cancel", leaseID); !strings.Contains(r, "cancelled") {
		t.Fatalf("cancel printed %q", r)
	}
	out2, err := exec.Command(bin, "lease", "cancel", leaseID, "--server", d.API).CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "UnknownLease") {
		t.Fatalf("cancelling again: %v %s", err, out2)
	}
	out3, err := exec.Command(bin, "lookup", "register", "--duration", "0s", "--server", d.API).CombinedOutput()
	if err == nil || !strings.Contains(string(out3), "want a positive duration") {
		t.Fatalf("bad duration: %v %s", err, out3)
	}
}

// An empty answer explains itself where the registry can tell: a short
// entry class name is the one registered class it names (Name:
// net.jini.lookup.entry.Name), a field no registered entry of the class
// has (a typo) or a class none has is said on the standard error.
func TestQueryExplainsEmptyAnswers(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	query := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"lookup", "query"}, args...), "--server", d.API, "-o", "json")...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("jinid lookup query %v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	if out, err := exec.Command(bin, "lookup", "register", "--type", "com.example.Printer", "--attr", "net.jini.lookup.entry.Name:name=lobby",
		"--server", d.API).CombinedOutput(); err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}
	if out, _ := query("--attr", "Name:name=lobby"); !strings.Contains(out, "com.example.Printer") {
		t.Errorf("a short class name did not find the service:\n%s", out)
	}
	for _, c := range []struct{ attr, want string }{
		{"net.jini.lookup.entry.Name:nmae=lobby", `no match: no registered net.jini.lookup.entry.Name has a field "nmae" (its fields: name)`},
		{"com.example.Nothing:x=1", "no match: no registered service has an attribute of class com.example.Nothing"},
	} {
		if out, stderr := query("--attr", c.attr); !strings.Contains(stderr, c.want) || strings.Contains(out, "com.example.Printer") {
			t.Errorf("--attr %s: printed %q, said %q; want %q", c.attr, out, stderr, c.want)
		}
	}
}

package e2e

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/apitypes"
)

// TestRenewalAcrossDaemons: a jinid in one lab host keeps alive lookup
// registrations granted by a jinid in another, past their own leases and
// until the desired expiration; a grantor that refuses (LeaseDenied)
// produces exactly one renewal failure event.
func TestRenewalAcrossDaemons(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	rh, lh, ch := lab.Host("renewer"), lab.Host("lus"), lab.Host("client")
	rl, ll, cl := rh.Attach(lan), lh.Attach(lan), ch.Attach(lan)
	jinidtest.LabDaemon(t, bin, rh, "--renewal-margin", "1s", "--no-multicast")
	jinidtest.LabDaemon(t, bin, lh, "--no-multicast")
	faultLeaseDenied := apitypes.Error{Code: apitypes.LeaseDenied, Message: "this grantor renews nothing"}
	renewer := jinidtest.LabClient(t, ch, "http://"+rl.IPv4.String()+":4162")
	lus := jinidtest.LabClient(t, ch, "http://"+ll.IPv4.String()+":4162")
	sink := jinidtest.NewSink(t, ch, cl.IPv4.String())

	// A grantor that refuses every renewal.
	denier := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Leases []struct {
				ID string `json:"id"`
			} `json:"leases"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		var res []apitypes.BatchResult
		for _, l := range req.Leases {
			res = append(res, apitypes.BatchResult{ID: l.ID, Error: &faultLeaseDenied})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"results": res})
	})
	var dln net.Listener
	ch.Namespace().Do(func() error {
		var err error
		dln, err = net.Listen("tcp", net.JoinHostPort(cl.IPv4.String(), "0"))
		return err
	})
	jinidtest.Serve(t, dln, denier)

	set, err := renewer.RenewalCreate(t.Context(), 600_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewer.RenewalFailures(t.Context(), set.ID, sink.URL+"/failures", []byte("hb")); err != nil {
		t.Fatal(err)
	}

	// A registration at the other daemon, leased for 3 s, kept for 8 s.
	reg, err := lus.Register(t.Context(), apitypes.Item{Types: []string{"com.example.Kept"}}, 3000)
	if err != nil {
		t.Fatal(err)
	}
	renew := int64(3000)
	if err := renewer.RenewFor(t.Context(), set.ID, reg.Lease, 8000, &renew); err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	// And one at the refusing grantor.
	denied := apitypes.Lease{Grantor: "http://" + dln.Addr().String(), ID: "refused-1", Expiration: time.Now().Add(4 * time.Second).UnixMilli(), Remaining: 4000}
	if err := renewer.RenewFor(t.Context(), set.ID, denied, 60_000, nil); err != nil {
		t.Fatal(err)
	}

	time.Sleep(5 * time.Second) // past the registration's own 3 s lease
	if _, err := lus.Get(t.Context(), reg.ServiceID); err != nil {
		t.Fatalf("registration lapsed %v after it was handed over, though kept for 8 s: %v", time.Since(added), err)
	}
	ls, err := renewer.RenewalLeases(t.Context(), set.ID)
	if err != nil || len(ls) != 1 || ls[0].ID != reg.Lease.ID || ls[0].Expiration <= reg.Lease.Expiration {
		t.Fatalf("set's leases %+v, %v", ls, err)
	}
	evs := sink.Events("/failures")
	if len(evs) != 1 {
		t.Fatalf("%d failure events, want exactly one (for the refused lease): %v", len(evs), evs)
	}
	e := evs[0]
	lease, _ := e["lease"].(map[string]any)
	errf, _ := e["error"].(map[string]any)
	if e["type"] != "RenewalFailureEvent" || e["eventID"] != float64(0) || e["seqNum"] != float64(1) || lease["id"] != "refused-1" || errf["code"] != "LeaseDenied" {
		t.Fatalf("failure event %v", e)
	}

	// At its desired expiration the lease leaves the set, without an
	// event, and then lapses at the lookup service.
	time.Sleep(time.Until(added.Add(8*time.Second + 3500*time.Millisecond)))
	if ls, _ := renewer.RenewalLeases(t.Context(), set.ID); len(ls) != 0 {
		t.Fatalf("still in the set after its desired expiration: %+v", ls)
	}
	if _, err := lus.Get(t.Context(), reg.ServiceID); err == nil {
		t.Fatal("registration still alive well after its desired expiration")
	}
	if n := len(sink.Events("/failures")); n != 1 {
		t.Fatalf("%d failure events in all, want 1", n)
	}
}

// TestRenewalCommands runs every `jinid renewal` command against one
// daemon that is both the grantor and the renewal service.
func TestRenewalCommands(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir())
	defer d.Stop(t)
	sink := jinidtest.NewSink(t, nil, "127.0.0.1")
	run := func(args ...string) string { t.Helper(); return d.CLI(t, bin, args...) }
	m := regexp.MustCompile(`set\s+(\S+)\nlease\s+(\S+)`).FindStringSubmatch(run("renewal", "create", "--duration", "10m"))
	if m == nil {
		t.Fatal("create printed no set")
	}
	set, setLease := m[1], m[2]
	lm := regexp.MustCompile(`lease\s+(\S+)`).FindStringSubmatch(run("lookup", "register", "--type", "com.example.Kept", "--duration", "5m"))
	if lm == nil {
		t.Fatal("lookup register printed no lease")
	}
	leaseID := lm[1]
	run("renewal", "add", set, "--grantor", d.API, "--lease", leaseID, "--remaining", "5m", "--desired", "1h", "--renew", "10m")
	if l := run("renewal", "list", set); !strings.Contains(l, leaseID) || !strings.Contains(l, d.API) {
		t.Fatalf("list printed %q", l)
	}
	if w := run("renewal", "warn", set, "--listener", sink.URL+"/w", "--min-warning", "1m"); !regexp.MustCompile(`(?m)^eventID +1$`).MatchString(w) {
		t.Fatalf("warn printed %q", w)
	}
	if f := run("renewal", "failures", set, "--listener", sink.URL+"/f"); !regexp.MustCompile(`(?m)^eventID +0$`).MatchString(f) {
		t.Fatalf("failures printed %q", f)
	}
	// The set's own lease is refused, with the specification's error.
	out, err := exec.Command(bin, "renewal", "add", set, "--grantor", d.API, "--lease", setLease, "--remaining", "5m", "--server", d.API).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "InvalidArgument") {
		t.Fatalf("adding the set's own lease: %v %s", err, out)
	}
	if r := run("renewal", "remove", set, leaseID); !regexp.MustCompile(`(?m)^removed +` + leaseID + `$`).MatchString(r) {
		t.Fatalf("remove printed %q", r)
	}
	out, err = exec.Command(bin, "renewal", "remove", set, leaseID, "--server", d.API).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "is not in set") {
		t.Fatalf("second remove: %v %s", err, out)
	}
	run("renewal", "failures", set, "--clear")
	run("renewal", "warn", set, "--clear")
}

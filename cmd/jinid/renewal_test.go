package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/netlab"
	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/fault"
)

// rawSink records the JSON bodies POSTed to it, by path; it serves from
// inside a lab host (or loopback when h is nil).
type rawSink struct {
	base string
	mu   sync.Mutex
	got  map[string][]map[string]any
}

func newRawSink(t *testing.T, h *netlab.Host, ip string) *rawSink {
	t.Helper()
	s := &rawSink{got: map[string][]map[string]any{}}
	var ln net.Listener
	listen := func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "0"))
		return err
	}
	var err error
	if h != nil {
		err = h.Namespace().Do(listen)
	} else {
		err = listen()
	}
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v map[string]any
		json.Unmarshal(body, &v)
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], v)
		s.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *rawSink) events(path string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any{}, s.got[path]...)
}

// TestRenewalAcrossDaemons: a jinid in one lab host keeps alive lookup
// registrations granted by a jinid in another, past their own leases and
// until the desired expiration; a grantor that refuses (LeaseDenied)
// produces exactly one renewal failure event.
func TestRenewalAcrossDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	lab := netlab.New(t)
	bin := buildBinary(t)
	lan := lab.LAN()
	rh, lh, ch := lab.Host("renewer"), lab.Host("lus"), lab.Host("client")
	rl, ll, cl := rh.Attach(lan), lh.Attach(lan), ch.Attach(lan)
	labDaemon(t, bin, rh, "--renewal-margin", "1s", "--no-multicast")
	labDaemon(t, bin, lh, "--no-multicast")
	faultLeaseDenied := apitypes.Error{Code: fault.LeaseDenied, Message: "this grantor renews nothing"}
	renewer := labClient(t, ch, "http://"+rl.IPv4.String()+":4162")
	lus := labClient(t, ch, "http://"+ll.IPv4.String()+":4162")
	sink := newRawSink(t, ch, cl.IPv4.String())

	// A grantor that refuses every renewal.
	denier := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	})}
	var dln net.Listener
	ch.Namespace().Do(func() error {
		var err error
		dln, err = net.Listen("tcp", net.JoinHostPort(cl.IPv4.String(), "0"))
		return err
	})
	go denier.Serve(dln)
	defer denier.Close()

	set, err := renewer.RenewalCreate(t.Context(), 600_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewer.RenewalFailures(t.Context(), set.ID, sink.base+"/failures", []byte("hb")); err != nil {
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
	evs := sink.events("/failures")
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
	if n := len(sink.events("/failures")); n != 1 {
		t.Fatalf("%d failure events in all, want 1", n)
	}
}

// TestRenewalCrash kills the renewing daemon at random moments and brings
// it back at once: no client lease due for renewal expires because of the
// crashes.
func TestRenewalCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	grantor := startDaemon(t, bin, t.TempDir())
	defer grantor.stop(t)
	dir := t.TempDir()
	renewer := startDaemon(t, bin, dir, "--renewal-margin", "3s")
	g, _ := client.New(grantor.api, nil)
	r, _ := client.New(renewer.api, nil)
	set, err := r.RenewalCreate(t.Context(), 3_600_000)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var ids []string
	for i := range n {
		reg, err := g.Register(t.Context(), apitypes.Item{Types: []string{"com.example.Kept"}}, 4000+int64(i)*100)
		if err != nil {
			t.Fatal(err)
		}
		// Renewed 4 s at a time: due every 2 s, so the kills land in
		// renewal windows.
		four := int64(4000)
		if err := r.RenewFor(t.Context(), set.ID, reg.Lease, 3_600_000, &four); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ServiceID)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	deadline := time.Now().Add(20 * time.Second)
	kills := 0
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		renewer.kill()
		kills++
		renewer = startDaemon(t, bin, dir, "--renewal-margin", "3s")
		for _, id := range ids {
			if _, err := g.Get(t.Context(), id); err != nil {
				t.Fatalf("after %d kills: registration %s lapsed: %v\n%s", kills, id, err, renewer.log())
			}
		}
	}
	renewer.stop(t)
	t.Logf("%d kills, all %d leases kept", kills, n)
	if !strings.Contains(renewer.log(), "jinid started") || kills < 5 {
		t.Fatalf("only %d kills", kills)
	}
}

// TestRenewalCommands runs every `jinid renewal` command against one
// daemon that is both the grantor and the renewal service.
func TestRenewalCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	d := startDaemon(t, bin, t.TempDir())
	defer d.stop(t)
	sink := newRawSink(t, nil, "127.0.0.1")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--server", d.api)...).CombinedOutput()
		if err != nil {
			t.Fatalf("jinid %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
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
	run("renewal", "add", set, "--grantor", d.api, "--lease", leaseID, "--remaining", "5m", "--desired", "1h", "--renew", "10m")
	if l := run("renewal", "list", set); !strings.Contains(l, leaseID) || !strings.Contains(l, d.api) {
		t.Fatalf("list printed %q", l)
	}
	if w := run("renewal", "warn", set, "--listener", sink.base+"/w", "--min-warning", "1m"); !strings.Contains(w, "eventID 1") {
		t.Fatalf("warn printed %q", w)
	}
	if f := run("renewal", "failures", set, "--listener", sink.base+"/f"); !strings.Contains(f, "eventID 0") {
		t.Fatalf("failures printed %q", f)
	}
	// The set's own lease is refused, with the specification's error.
	out, err := exec.Command(bin, "renewal", "add", set, "--grantor", d.api, "--lease", setLease, "--remaining", "5m", "--server", d.api).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "InvalidArgument") {
		t.Fatalf("adding the set's own lease: %v %s", err, out)
	}
	if r := run("renewal", "remove", set, leaseID); !strings.Contains(r, "removed "+leaseID) {
		t.Fatalf("remove printed %q", r)
	}
	if r := run("renewal", "remove", set, leaseID); !strings.Contains(r, "not in the set") {
		t.Fatalf("second remove printed %q", r)
	}
	run("renewal", "failures", set, "--clear")
	run("renewal", "warn", set, "--clear")
}

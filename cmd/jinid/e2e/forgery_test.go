package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
)

// serveIn serves h on addr (ip:port) inside lab host host until the test
// ends, and returns where it listens.
func serveIn(t *testing.T, host *netlab.Host, addr string, h http.Handler) string {
	t.Helper()
	var ln net.Listener
	if err := host.Namespace().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	jinidtest.Serve(t, ln, h)
	return ln.Addr().String()
}

// TestNoRequestForgery: every URL a client hands the daemon to send
// requests to (a notify or LDS listener, a mailbox push target, a
// renewal listener, a lease's grantor) that names loopback, an
// unspecified, link-local or own address, or carries a user name, is
// refused when handed in; one whose name resolves to loopback, or whose
// server redirects there, is refused when the daemon connects. Counting
// servers on the daemon's own loopback and LAN address see nothing. With
// --allow-outbound 127.0.0.0/8 the loopback one gets its event.
func TestNoRequestForgery(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, attacker, far := lab.Host("gw"), lab.Host("attacker"), lab.Host("far")
	gl := gw.Attach(lan)
	attacker.Attach(lan)
	fl := far.Attach(lan)

	// What must never be reached: services on the daemon's host.
	var internal atomic.Int64
	count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { internal.Add(1) })
	lo4 := serveIn(t, gw, "127.0.0.1:0", count)
	_, port, _ := net.SplitHostPort(lo4)
	lo6 := serveIn(t, gw, "[::1]:0", count)
	own := serveIn(t, gw, gl.IPv4.String()+":0", count)
	gw.SetHosts(map[string]netip.Addr{"internal.test": netip.MustParseAddr("127.0.0.1")})
	// What may be reached: a server on the LAN that redirects to the
	// daemon's loopback, and a listener for renewal failures.
	var redirected atomic.Int64
	redirector := serveIn(t, far, fl.IPv4.String()+":0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, "http://"+lo4+"/redirected", http.StatusTemporaryRedirect)
	}))
	failures := jinidtest.NewSink(t, far, fl.IPv4.String())

	d := jinidtest.LabDaemon(t, bin, gw, "--no-multicast")
	api := "http://" + gl.IPv4.String() + ":4162"
	c := jinidtest.LabClient(t, attacker, api)
	ctx := t.Context()

	// Handed in: refused, each kind of URL, for each use.
	mb, err := c.MailboxRegister(ctx, 600_000, false)
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.RenewalCreate(ctx, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]func(url string) error{
		"notify listener": func(u string) error {
			_, err := c.Notify(ctx, client.NotifyRequest{Transitions: []string{apitypes.NoMatchMatch}, Listener: u, Duration: 60_000})
			return err
		},
		"LDS listener": func(u string) error {
			_, err := c.LDSRegister(ctx, client.LDSRequest{Groups: []string{}, Listener: u, Duration: 60_000})
			return err
		},
		"mailbox target": func(u string) error { return c.MailboxEnable(ctx, mb.ID, u) },
		"renewal listener": func(u string) error {
			_, err := c.RenewalWarning(ctx, set.ID, u, 1000, nil)
			return err
		},
		"lease grantor": func(u string) error {
			return c.RenewFor(ctx, set.ID, apitypes.Lease{Grantor: u, ID: "x", Expiration: time.Now().Add(time.Hour).UnixMilli(), Remaining: 3_600_000}, 600_000, nil)
		},
	}
	for _, u := range []string{
		"http://" + lo4 + "/x",
		"http://" + lo6 + "/x",
		"http://[::ffff:127.0.0.1]:" + port + "/x",
		"http://0.0.0.0:" + port + "/x",
		"http://" + own + "/x",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1%25eth0]:" + port + "/x",
		"http://localhost:" + port + "/x",
		"http://someone:secret@" + redirector + "/x",
	} {
		for use, try := range uses {
			if err := try(u); !fault.Is(err, apitypes.InvalidArgument) {
				t.Errorf("%s %s: %v, want InvalidArgument", use, u, err)
			}
		}
	}

	// Resolved or redirected there: refused at connect time.
	late := []string{"http://internal.test:" + port + "/x", "http://" + redirector + "/to-loopback"}
	var notifies []apitypes.Lease
	var ldsRegs []string
	for _, u := range late {
		n, err := c.Notify(ctx, client.NotifyRequest{Template: apitypes.Template{Types: []string{"com.example.Bait"}},
			Transitions: []string{apitypes.NoMatchMatch}, Listener: u, Duration: 60_000})
		if err != nil {
			t.Fatalf("notify %s: %v", u, err)
		}
		notifies = append(notifies, n.Lease)
		r, err := c.LDSRegister(ctx, client.LDSRequest{Groups: []string{}, Locators: []string{"jini://" + gl.IPv4.String()},
			Listener: u, Duration: 60_000})
		if err != nil {
			t.Fatalf("LDS %s: %v", u, err)
		}
		ldsRegs = append(ldsRegs, r.ID)
	}
	if _, err := c.Register(ctx, apitypes.Item{Types: []string{"com.example.Bait"}}, 60_000); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewalFailures(ctx, set.ID, failures.URL+"/failures", nil); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(3 * time.Second).UnixMilli()
	for _, u := range late {
		if err := c.RenewFor(ctx, set.ID, apitypes.Lease{Grantor: u, ID: "x", Expiration: soon, Remaining: 3000}, 600_000, nil); err != nil {
			t.Fatalf("grantor %s: %v", u, err)
		}
		if err := c.MailboxEnable(ctx, mb.ID, u); err != nil {
			t.Fatalf("target %s: %v", u, err)
		}
		post := raw(t, attacker, "POST", mb.Listener.URL, "", "application/json", "", `{"source":{"service":"x","id":"1"},"eventID":1,"seqNum":1}`)
		if post.status != 204 {
			t.Fatalf("posting to the mailbox: %+v", post)
		}
		testenv.Until(t, "the mailbox to give up on "+u, func() bool {
			st, err := c.MailboxGet(ctx, mb.ID)
			return err == nil && st["target"] == nil
		})
	}
	// Each notify and LDS registration was cancelled for its refused
	// listener (a definite failure), the leases left with a Forbidden or
	// BadAnswer failure each, and nothing reached the daemon's host.
	for _, l := range notifies {
		testenv.Until(t, "the notify registration cancelled", func() bool {
			_, _, err := c.Renew(ctx, l.ID, 60_000)
			return fault.Is(err, apitypes.UnknownLease)
		})
	}
	for _, id := range ldsRegs {
		testenv.Until(t, "the LDS registration cancelled", func() bool {
			_, err := c.LDSGet(ctx, id)
			return fault.Is(err, apitypes.NoSuchObject)
		})
	}
	evs := failures.Wait(t, "/failures", 2)
	codes := map[string]bool{}
	for _, ev := range evs {
		e, _ := ev["error"].(map[string]any)
		codes[fmt.Sprint(e["code"])] = true
	}
	if !codes[string(apitypes.Forbidden)] || !codes[string(apitypes.BadAnswer)] || len(codes) != 2 {
		t.Errorf("renewal failures %v, want Forbidden (the name) and BadAnswer (the redirect)", evs)
	}
	if n := internal.Load(); n != 0 {
		t.Fatalf("%d requests reached services on the daemon's host", n)
	}
	if redirected.Load() == 0 {
		t.Fatal("the redirecting server was never asked: the late-bound cases proved nothing")
	}

	// Allowed, loopback gets its event.
	d.Process.Signal(syscall.SIGTERM)
	d.Wait()
	jinidtest.LabDaemon(t, bin, gw, "--no-multicast", "--data-dir", d.Dir, "--allow-outbound", "127.0.0.0/8")
	// A client of its own: the first's kept connections were to the
	// daemon stopped (a POST is not sent again on one found closed).
	c = jinidtest.LabClient(t, attacker, api)
	if _, err := c.Notify(ctx, client.NotifyRequest{Template: apitypes.Template{Types: []string{"com.example.Allowed"}},
		Transitions: []string{apitypes.NoMatchMatch}, Listener: "http://" + lo4 + "/allowed", Duration: 60_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, apitypes.Item{Types: []string{"com.example.Allowed"}}, 60_000); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, "the event on loopback, allowed", func() bool { return internal.Load() == 1 })
	if strings.Contains(fmt.Sprint(evs), "127.0.0.1") {
		t.Errorf("a failure event names the address: %v", evs)
	}
}

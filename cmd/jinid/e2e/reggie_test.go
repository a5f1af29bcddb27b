package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/services/api/client"
)

// TestRealReggieUnderItsServiceID: a real Java lookup service (Reggie,
// JGDMS) is known under the ServiceID it logs from the first answer on,
// read from the registrar proxy it hands out, whichever protocol version
// answers first. `jinid discover --watch` and the lookup discovery
// service (a registration by group, one by locator) each see it
// discovered once under that ID, never under another; nothing while it
// announces (sequence number 0 every second, over three intervals);
// getRegistrars names it throughout; and, once it is killed, one
// discard under the same ID where discovery by group holds it (a lookup
// service wanted by locator is never passively discarded: LD.3.1).
// The same with two Reggies on one host (different ports), and with
// Reggie reached by protocol version 1 only, through locators (issue 31).
func TestRealReggieUnderItsServiceID(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	riverpeer.Java(t)
	for _, c := range []struct {
		name    string
		reggies int
		v1Only  bool
	}{
		{"one", 1, false},
		{"two on one host", 2, false},
		{"version 1 only", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reggieScene(t, bin, c.reggies, c.v1Only)
		})
	}
}

func reggieScene(t *testing.T, bin string, n int, v1Only bool) {
	lab := netlab.New(t)
	lan := lab.LAN()
	rh, wh, dh := lab.Host("reggie"), lab.Host("watcher"), lab.Host("lds")
	rl, wl, dl := rh.Attach(lan), wh.Attach(lan), dh.Attach(lan)
	const interval = time.Second
	var (
		reggies  []*riverpeer.Reggie
		rids     []string
		locators []string
	)
	for i := range n {
		r := riverpeer.StartReggie(t, rh, rl.IPv4, "multicastAnnouncementInterval=1000L", fmt.Sprintf("initialUnicastDiscoveryPort=%d", 4160+10*i))
		reggies, rids = append(reggies, r), append(rids, r.ServiceID)
		loc := fmt.Sprintf("jini://%s:%d", rl.IPv4, 4160+10*i)
		if v1Only {
			loc = "jini://" + versionOneOnly(t, rh, rl.IPv4, netip.AddrPortFrom(rl.IPv4, uint16(4160+10*i)))
		}
		locators = append(locators, loc)
	}
	slices.Sort(rids)

	// The lookup discovery service in a daemon of its own (its own lookup
	// service in another group); registrations by group and by locator,
	// with listeners on the watcher's host.
	daemonArgs := []string{"--groups", "other", "--no-dns-sd", "--lds-announce-interval", interval.String()}
	watchArgs := []string{"--announce-interval", interval.String()}
	if v1Only {
		daemonArgs = append(daemonArgs, "--no-multicast")
		watchArgs = append(watchArgs, "--no-multicast")
		for _, l := range locators {
			watchArgs = append(watchArgs, "--locator", l)
		}
	} else {
		watchArgs = append(watchArgs, "--groups", "lab")
	}
	jinidtest.LabDaemon(t, bin, dh, daemonArgs...)
	sink := jinidtest.NewSink(t, wh, wl.IPv4.String())
	c := jinidtest.LabClient(t, wh, "http://"+dl.IPv4.String()+":4162")
	ctx := context.Background()
	regs := map[string]string{} // path: registration
	paths := []string{"/by-locator"}
	if !v1Only {
		paths = append(paths, "/by-group")
	}
	for _, p := range paths {
		req := client.LDSRequest{Groups: []string{}, Locators: locators, Listener: sink.URL + p, Duration: 600_000}
		if p == "/by-group" {
			req = client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL + p, Duration: 600_000}
		}
		reg, err := c.LDSRegister(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		regs[p] = reg.ID
	}
	w := startWatch(t, bin, wh, watchArgs...)

	// Discovered once each, under the IDs Reggie logged.
	var watched []string
	for range n {
		e := w.next(t, "discovered", 20*time.Second)
		if e.Kind != "java" || e.StandIn {
			t.Fatalf("discovered %+v, want a Java lookup service under its own ServiceID", e.watchLine)
		}
		watched = append(watched, e.ServiceID)
	}
	slices.Sort(watched)
	if !slices.Equal(watched, rids) {
		t.Fatalf("discover --watch discovered %v, want %v (as Reggie logged)", watched, rids)
	}
	for _, p := range paths {
		var got []string
		for len(got) < n {
			var e ldsEvent
			sink.Next(t, p, 20*time.Second, &e)
			if e.Discarded {
				t.Fatalf("registration %s: discarded %v before %v were all discovered", p, e.ids(), rids)
			}
			for _, r := range e.Registrars {
				if r.Kind != "java" || r.StandIn || slices.Contains(got, r.ServiceID) {
					t.Fatalf("registration %s: discovered %+v, having %v", p, r, got)
				}
				got = append(got, r.ServiceID)
			}
		}
		if slices.Sort(got); !slices.Equal(got, rids) {
			t.Fatalf("registration %s: discovered %v, want %v", p, got, rids)
		}
	}
	registrars := func(when string) {
		t.Helper()
		for _, p := range paths {
			rs, err := c.LDSRegistrars(ctx, regs[p])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.ServiceID)
			}
			if slices.Sort(got); !slices.Equal(got, rids) {
				t.Fatalf("%s: getRegistrars of %s: %v, want %v", when, p, got, rids)
			}
		}
	}
	registrars("once discovered")

	// Announcing with sequence 0 every second: nothing reported over more
	// than a discard window (3 intervals).
	w.none(t, 4*interval)
	for _, p := range paths {
		if k := sink.Pending(p); k > 0 {
			t.Fatalf("registration %s: %d unexpected events: %v", p, k, sink.Events(p))
		}
	}
	registrars("after three announcement intervals")

	// One-shot discovery lists it under the same ID.
	args := []string{"--timeout", "3s", "--merge"}
	if v1Only {
		args = append(args, "--no-multicast")
		for _, l := range locators {
			args = append(args, "--locator", l)
		}
	} else {
		args = append(args, "--groups", "lab")
	}
	var listed []string
	for _, r := range discoverIn(t, bin, wh, args...) {
		if r.Kind == "java" {
			listed = append(listed, r.ServiceID)
		}
	}
	if slices.Sort(listed); !slices.Equal(listed, rids) {
		t.Fatalf("jinid discover listed %v, want %v", listed, rids)
	}

	// Killed: no more announcements, no answer. What group discovery held
	// is discarded once, under the same IDs; what a locator wants stays.
	for _, r := range reggies {
		r.Kill()
	}
	if !v1Only {
		var gone []string
		for range n {
			d := w.next(t, "discarded", 10*time.Second)
			if d.Reason != "communication" {
				t.Fatalf("discarded %s (%s), want communication", d.ServiceID, d.Reason)
			}
			gone = append(gone, d.ServiceID)
		}
		if slices.Sort(gone); !slices.Equal(gone, rids) {
			t.Fatalf("discover --watch discarded %v, want %v", gone, rids)
		}
		gone = nil
		for len(gone) < n {
			var e ldsEvent
			sink.Next(t, "/by-group", 10*time.Second, &e)
			if !e.Discarded {
				t.Fatalf("registration by group: %v discovered after Reggie was killed", e.ids())
			}
			gone = append(gone, e.ids()...)
		}
		if slices.Sort(gone); !slices.Equal(gone, rids) {
			t.Fatalf("registration by group: discarded %v, want %v", gone, rids)
		}
	}
	w.none(t, 4*interval)
	if k := sink.Pending("/by-locator"); k > 0 {
		t.Fatalf("registration by locator: %d events after Reggie was killed: %v", k, sink.Events("/by-locator"))
	}
	rs, err := c.LDSRegistrars(ctx, regs["/by-locator"])
	if err != nil || len(rs) != n {
		t.Fatalf("getRegistrars of the registration by locator after Reggie was killed: %+v, %v; want %v kept", rs, err, rids)
	}
}

// versionOneOnly serves unicast discovery at an address of h in front
// of a lookup service at to, in protocol version 1 only: a version 2
// request is answered with the null format (none of the proposed formats
// is acceptable), so clients fall back to version 1, whose answer comes
// from the lookup service itself. It returns the address it listens on.
func versionOneOnly(t *testing.T, h *netlab.Host, ip netip.Addr, to netip.AddrPort) string {
	t.Helper()
	ln := jinidtest.ListenIn(t, h, ip.String())
	jinidtest.ServeConns(t, ln, func(conn net.Conn) {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		head := make([]byte, 4)
		if _, err := io.ReadFull(conn, head); err != nil {
			return
		}
		if binary.BigEndian.Uint32(head) != 1 {
			conn.Write(binary.BigEndian.AppendUint64([]byte{0, 0, 0, 2}, 0))
			return
		}
		var up net.Conn
		if err := h.Namespace().Do(func() error {
			var err error
			up, err = net.DialTimeout("tcp", to.String(), 5*time.Second)
			return err
		}); err != nil {
			return
		}
		defer up.Close()
		up.Write(head)
		go io.Copy(up, conn)
		io.Copy(conn, up)
	})
	return ln.Addr().String()
}

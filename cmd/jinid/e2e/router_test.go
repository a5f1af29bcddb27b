package e2e

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// run runs a command in lab host h, failing the test on error.
func run(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	if out, err := h.Command(t.Context(), args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s in %s: %v: %s", strings.Join(args, " "), h.Name, err, out)
	}
}

// openWrt shapes h as an OpenWrt router: its LAN link becomes the port
// of a bridge br-lan that holds the LAN addresses, and its WAN link is
// renamed wan and has the default route.
func openWrt(t *testing.T, h *netlab.Host, lan, wan *netlab.Link) {
	t.Helper()
	run(t, h, "ip", "link", "add", "br-lan", "type", "bridge")
	run(t, h, "ip", "addr", "flush", "dev", lan.Name)
	run(t, h, "ip", "link", "set", lan.Name, "master", "br-lan")
	run(t, h, "ip", "addr", "add", lan.IPv4.String()+"/24", "dev", "br-lan")
	run(t, h, "ip", "addr", "add", lan.IPv6.String()+"/64", "dev", "br-lan", "nodad")
	run(t, h, "ip", "link", "set", "br-lan", "up")
	// As a plugged-in router's: the bridge has carrier once its port
	// forwards, a moment after it is up.
	testenv.Until(t, "br-lan up", func() bool {
		out, err := h.Command(t.Context(), "cat", "/sys/class/net/br-lan/operstate").Output()
		return err == nil && strings.TrimSpace(string(out)) == "up"
	})
	run(t, h, "ip", "link", "set", wan.Name, "down")
	run(t, h, "ip", "link", "set", wan.Name, "name", "wan")
	run(t, h, "ip", "link", "set", "wan", "up")
	gw := wan.IPv4.Prev() // another address of the WAN's subnet
	run(t, h, "ip", "route", "add", "default", "via", gw.String(), "dev", "wan", "onlink")
}

// readiness is GET /readyz over the daemon's unix socket: the status
// and what fails.
func readiness(t *testing.T, socket string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}
	status, failing, _ := readyz(t, hc, "http://localhost")
	return status, failing
}

var multicastState = regexp.MustCompile(`multicast="?([^"\n]*?)"? registrations`)

// On a host shaped like an OpenWrt router, the daemon's defaults serve
// br-lan, over IPv4 and IPv6, and not wan; a client on the LAN finds it
// in both families, one behind the WAN does not. Named in --interfaces,
// br-lan is served even when an exclusion matches it.
func TestOpenWrtRouter(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lanNet, wanNet := lab.LAN(), lab.LAN()
	router, client, isp := lab.Host("router"), lab.Host("client"), lab.Host("isp")
	isp.Attach(wanNet)
	rl, rw := router.Attach(lanNet), router.Attach(wanNet)
	client.Attach(lanNet)
	openWrt(t, router, rl, rw)

	for _, args := range [][]string{nil, {"--interfaces", "br-lan", "--exclude-interfaces", "br-*"}} {
		d := jinidtest.LabDaemon(t, bin, router, args...)
		m := multicastState.FindStringSubmatch(d.Log())
		if m == nil || m[1] != "on (br-lan)" {
			t.Fatalf("daemon %v: the start line's multicast state is %q, want on (br-lan):\n%s", args, m, d.Log())
		}
		if status, failing := readiness(t, d.Socket); status != 200 {
			t.Fatalf("daemon %v: not ready: %s", args, failing)
		}
		rs := discoverIn(t, bin, client, "--timeout", "2s")
		r4, ok4 := atHost(rs, rl.IPv4.String())
		r6, ok6 := atHost(rs, rl.IPv6.String())
		if !ok4 || !ok6 || r4.Interface != "eth0" || r6.Interface != "eth0" {
			t.Fatalf("daemon %v: from the LAN, want it found over IPv4 and IPv6 on eth0: %+v", args, rs)
		}
		if rs := discoverIn(t, bin, isp, "--timeout", "1s"); len(rs) != 0 {
			t.Fatalf("daemon %v: found from behind the WAN: %+v", args, rs)
		}
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	}
}

// With no interface it may serve, the daemon says so (the start line, a
// warning) and is not ready, naming why; once one appears it is ready
// within a second.
func TestReadyOnlyWithAnInterface(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	h := lab.Host("router")
	h.Attach(lab.LAN())
	d := jinidtest.LabDaemon(t, bin, h, "--interfaces", "lan9")
	if m := multicastState.FindStringSubmatch(d.Log()); m == nil || m[1] != "waiting (no eligible interface)" {
		t.Fatalf("start line's multicast state %q:\n%s", m, d.Log())
	}
	if !strings.Contains(d.Log(), "no interface to multicast on") {
		t.Fatalf("no warning:\n%s", d.Log())
	}
	status, failing := readiness(t, d.Socket)
	if status != 503 || !strings.HasPrefix(failing, "multicast: no eligible interface") {
		t.Fatalf("readiness with no interface: %d %q", status, failing)
	}
	start := time.Now()
	run(t, h, "ip", "link", "add", "lan9", "type", "veth", "peer", "name", "lan9p")
	run(t, h, "ip", "addr", "add", "198.18.77.1/24", "dev", "lan9")
	run(t, h, "ip", "link", "set", "lan9p", "up")
	run(t, h, "ip", "link", "set", "lan9", "up")
	testenv.Until(t, "ready once lan9 is up", func() bool { s, _ := readiness(t, d.Socket); return s == 200 })
	// Reported, not asserted: a loaded machine takes longer.
	t.Logf("ready %v after the interface was created", time.Since(start).Round(time.Millisecond))
}

// A router whose WAN is not named wan: --exclude-default-route keeps the
// daemon off it (it answers on the LAN, not from behind the WAN), and
// --print-interfaces says, interface by interface, what the daemon makes
// of each and why.
func TestExcludeDefaultRoute(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lanNet, wanNet := lab.LAN(), lab.LAN()
	router, client, isp := lab.Host("router"), lab.Host("client"), lab.Host("isp")
	rl, rw := router.Attach(lanNet), router.Attach(wanNet)
	client.Attach(lanNet)
	isp.Attach(wanNet)
	run(t, router, "ip", "route", "add", "default", "via", rw.IPv4.Prev().String(), "dev", rw.Name, "onlink")

	printed := func(args ...string) string {
		t.Helper()
		out, err := router.Command(t.Context(), bin, append([]string{"daemon", "--print-interfaces"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("--print-interfaces %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	lineOf := func(out, name string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return l
			}
		}
		t.Fatalf("no line for %s in\n%s", name, out)
		return ""
	}
	out := printed("--exclude-default-route")
	for name, want := range map[string]string{
		"lo":    "loopback",
		rl.Name: "served (IPv4, IPv6)",
		rw.Name: "(default route)  has the default route (--exclude-default-route)",
	} {
		if l := lineOf(out, name); !strings.Contains(l, want) {
			t.Errorf("--print-interfaces line %q; want %q in it", l, want)
		}
	}
	if l := lineOf(printed(), rw.Name); !strings.HasSuffix(strings.TrimSpace(l), "served (IPv4, IPv6)") {
		t.Errorf("without --exclude-default-route the WAN is served; printed %q", l)
	}
	if l := lineOf(printed("--exclude-default-route", "--interfaces", rw.Name), rw.Name); !strings.HasSuffix(strings.TrimSpace(l), "served (IPv4, IPv6)") {
		t.Errorf("named in --interfaces the WAN is served; printed %q", l)
	}

	jinidtest.LabDaemon(t, bin, router, "--exclude-default-route", "--announce-interval", "500ms")
	if _, ok := atHost(discoverIn(t, bin, client, "--timeout", "3s"), rl.IPv4.String()); !ok {
		t.Errorf("not found from the LAN")
	}
	if rs := discoverIn(t, bin, isp, "--timeout", "2s"); len(rs) != 0 {
		t.Errorf("found from behind the WAN: %+v", rs)
	}
}

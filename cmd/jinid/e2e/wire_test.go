package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
)

// labPort takes the discovery port of a multicast host (IPv4) in a lab
// host, for tests that send or watch multicast there themselves.
func labPort(t testing.TB, h *netlab.Host, onMessage func(mcast.Message)) *mcast.Port {
	t.Helper()
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: h.Namespace(), NoIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Shutdown(context.Background()) })
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	port, err := host.Open(mcast.PortConfig{OnMessage: onMessage})
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// discoverIn runs jinid discover in a lab host and returns its results.
func discoverIn(t *testing.T, bin string, h *netlab.Host, args ...string) []finder.Result {
	t.Helper()
	rs, err := discoverResults(t.Context(), bin, h, args...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// discoverResults is discoverIn for any goroutine: it returns what
// failed.
func discoverResults(ctx context.Context, bin string, h *netlab.Host, args ...string) ([]finder.Result, error) {
	out, err := h.Command(ctx, bin, append([]string{"discover", "--json"}, args...)...).Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: nothing found
		return nil, fmt.Errorf("discover in %s: %w", h.Name, err)
	}
	var rs []finder.Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r finder.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("discover in %s: %q: %w", h.Name, sc.Bytes(), err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// ofFamily keeps the results of one address family.
func ofFamily(rs []finder.Result, family int) []finder.Result {
	var out []finder.Result
	for _, r := range rs {
		if r.Family == family {
			out = append(out, r)
		}
	}
	return out
}

func atHost(rs []finder.Result, host string) (finder.Result, bool) {
	for _, r := range rs {
		if r.Host == host {
			return r, true
		}
	}
	return finder.Result{}, false
}

// Two jinid daemons on a LAN discover each other with jinid discover.
func TestDaemonsDiscoverEachOther(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	a, b := lab.Host("a"), lab.Host("b")
	la, lb := a.Attach(lan), b.Attach(lan)
	jinidtest.LabDaemon(t, bin, a, "--announce-interval", "500ms")
	jinidtest.LabDaemon(t, bin, b, "--announce-interval", "500ms", "--groups", "lab")

	for _, c := range []struct {
		from  *netlab.Host
		other *netlab.Link
		grp   []string
	}{{a, lb, []string{"", "lab"}}, {b, la, []string{""}}} {
		rs := discoverIn(t, bin, c.from, "--timeout", "2s")
		r, ok := atHost(rs, c.other.IPv4.String())
		if !ok {
			t.Fatalf("from %s: %s not found in %+v", c.from.Name, c.other.IPv4, rs)
		}
		slices.Sort(r.Groups)
		if r.Kind != "jinid" || r.Port != 4160 || r.APIURL != "http://"+c.other.IPv4.String()+":4162" || r.Interface != "eth0" ||
			!slices.Equal(r.Groups, c.grp) || !slices.Contains(r.How, finder.ViaAnnouncement) || !slices.Contains(r.How, finder.ViaRequest) {
			t.Errorf("from %s: %+v", c.from.Name, r)
		}
	}
}

// A gateway daemon on two LANs is found on each at its address on that
// LAN; a daemon on the far LAN is not found from the near one.
func TestGatewayDaemon(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	gw, x, far := lab.Host("gw"), lab.Host("x"), lab.Host("far")
	g1, g2 := gw.Attach(lan1), gw.Attach(lan2)
	x.Attach(lan1)
	lf := far.Attach(lan2)
	jinidtest.LabDaemon(t, bin, gw, "--announce-interval", "500ms")
	jinidtest.LabDaemon(t, bin, far, "--announce-interval", "500ms")

	rs := discoverIn(t, bin, x, "--timeout", "2s", "--exclude-interfaces", "")
	r, ok := atHost(rs, g1.IPv4.String())
	if !ok {
		t.Fatalf("gateway not found at %s from LAN 1: %+v", g1.IPv4, rs)
	}
	for _, r := range rs {
		for _, a := range append([]string{r.Address}, r.Addresses...) {
			if strings.Contains(a, g2.IPv4.String()) || strings.Contains(a, g2.IPv6.String()) {
				t.Errorf("from LAN 1 the gateway was also reached at its LAN 2 address: %+v", r)
			}
		}
	}
	if r.APIURL != "http://"+g1.IPv4.String()+":4162" {
		t.Errorf("gateway's API URL on LAN 1: %s", r.APIURL)
	}
	if _, ok := atHost(rs, lf.IPv4.String()); ok {
		t.Errorf("the daemon on LAN 2 was found from LAN 1: %+v", rs)
	}
	rs = discoverIn(t, bin, far, "--timeout", "2s")
	if _, ok := atHost(rs, g2.IPv4.String()); !ok {
		t.Errorf("gateway not found at %s from LAN 2: %+v", g2.IPv4, rs)
	}
}

// Group changes through the API are announced at once, and a daemon that
// stops says so with an announcement of no groups.
func TestGroupChangeAnnounced(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, watcher := lab.Host("lus"), lab.Host("watcher")
	ll := lus.Attach(lan)
	watcher.Attach(lan)
	cmd := jinidtest.LabDaemon(t, bin, lus, "--announce-interval", "10s")

	// A listener on the LAN records every announcement from the daemon.
	type heard struct {
		at     time.Time
		groups []string
	}
	var mu sync.Mutex
	var got []heard
	port := labPort(t, watcher, func(m mcast.Message) {
		if a := m.Announcement; a != nil && a.Version == 2 && a.Host == ll.IPv4.String() {
			mu.Lock()
			got = append(got, heard{time.Now(), slices.Clone(a.Groups)})
			mu.Unlock()
		}
	})

	// Change the groups through the API, from inside the lab, as its
	// administrator.
	c := jinidtest.LabClient(t, watcher, "http://"+ll.IPv4.String()+":4162", client.WithToken(cmd.AdminToken(t)))
	// Once the watcher has joined the groups, a change's announcement
	// cannot be missed.
	testenv.Until(t, "the watcher joined", func() bool { return len(port.Joined()) > 0 })
	changed := time.Now()
	if err := c.SetGroups(t.Context(), []string{"moved"}); err != nil {
		t.Fatal(err)
	}
	var after time.Duration
	testenv.Until(t, "an announcement of the new groups", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range got {
			if h.at.After(changed) && slices.Equal(h.groups, []string{"moved"}) {
				after = h.at.Sub(changed)
				return true
			}
		}
		return false
	})
	t.Logf("new groups announced %v after the change", after)
	if after > 3*time.Second {
		t.Fatalf("the new groups announced %v after the change, not at once (the interval is 10 s)", after)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	testenv.Until(t, "a final announcement without groups after the daemon stopped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got[len(got)-1].groups) == 0
	})
}

// A flood of multicast requests (bounded: 20,000, paced, inside the lab)
// naming unreachable and refusing reply addresses does not stop the daemon
// answering a legitimate requester, and its memory stays flat.
func TestRequestFlood(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, attacker, legit := lab.Host("lus"), lab.Host("attacker"), lab.Host("legit")
	ll := lus.Attach(lan)
	la := attacker.Attach(lan)
	legit.Attach(lan)
	cmd := jinidtest.LabDaemon(t, bin, lus, "--announce-interval", "30s")
	time.Sleep(200 * time.Millisecond) // settled after start, for the first measurement
	before := usage(t, cmd.Process.Pid).RSSKiB

	tr := labPort(t, attacker, nil)

	flood := func(n int, on chan<- struct{}) {
		pace := time.NewTicker(10 * time.Millisecond)
		defer pace.Stop()
		for i := 0; i < n; i++ {
			if i == 1000 && on != nil {
				close(on)
			}
			host := fmt.Sprintf("198.18.1.%d", 200+i%50) // nobody there: connects hang until they fail
			if i%2 == 1 {
				host = la.IPv4.String() // the attacker itself, port closed: refused at once
			}
			req := discovery.Request{Version: 2, Host: host, Port: 20000 + i%40000}
			if err := tr.Send(mcast.Requests, func(mcast.Joined) ([][]byte, error) { return req.Encode(512) }); err != nil {
				t.Error(err)
				return
			}
			if i%200 == 199 {
				<-pace.C // 20,000 requests a second
			}
		}
	}
	done, on := make(chan struct{}), make(chan struct{})
	go func() { flood(20000, on); close(done) }()
	<-on // the flood is on
	rs := discoverIn(t, bin, legit, "--timeout", "3s")
	<-done
	r, ok := atHost(rs, ll.IPv4.String())
	if !ok || !slices.Contains(r.How, finder.ViaRequest) {
		t.Fatalf("during the flood the legitimate request went unanswered: %+v", rs)
	}
	after := usage(t, cmd.Process.Pid).RSSKiB
	flood(20000, nil)
	// Let it work through what the kernel queued before measuring: this
	// is a settling time for a measurement, not a wait for an event.
	time.Sleep(500 * time.Millisecond)
	again := usage(t, cmd.Process.Pid).RSSKiB
	t.Logf("daemon RSS: %d KiB before, %d KiB after 20,000 requests, %d KiB after 20,000 more", before, after, again)
	if after-before > 16<<10 || again-after > 4<<10 {
		t.Fatalf("memory grew under the flood: %d -> %d -> %d KiB", before, after, again)
	}
}

// BenchmarkRequestToResponse measures, in the lab, the time from a
// multicast request leaving the requester to the unicast response being
// read, over 1000 requests; it reports the median and the 99th percentile.
//
//	go test -run=NONE -bench=RequestToResponse -benchtime=1x ./cmd/jinid/
func BenchmarkRequestToResponse(b *testing.B) {
	lab := netlab.New(b)
	bin := jinidtest.Binary(b)
	lan := lab.LAN()
	lus, req := lab.Host("lus"), lab.Host("req")
	lus.Attach(lan)
	lr := req.Attach(lan)
	jinidtest.LabDaemon(b, bin, lus)
	tr := labPort(b, req, nil)
	for b.Loop() {
		var lat []time.Duration
		var open []net.Listener // kept open: each request names a port of its own
		defer func() {
			for _, ln := range open {
				ln.Close()
			}
		}()
		for range 1000 {
			var ln net.Listener
			if err := req.Namespace().Do(func() error { var err error; ln, err = net.Listen("tcp4", ":0"); return err }); err != nil {
				b.Fatal(err)
			}
			open = append(open, ln)
			ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
			r := discovery.Request{Version: 2, Host: lr.IPv4.String(), Port: ln.Addr().(*net.TCPAddr).Port}
			start := time.Now()
			if err := tr.Send(mcast.Requests, func(mcast.Joined) ([][]byte, error) { return r.Encode(512) }); err != nil {
				b.Fatal(err)
			}
			conn, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := unicast.Discover(b.Context(), conn, 2); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			conn.Close()
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

// jinid discover --locator jini://DOMAIN finds the lookup services that
// the domain's _jini._tcp SRV records list, served by a real DNS server
// (dnsmasq) in the lab.
func TestLocatorBySRV(t *testing.T) {
	t.Parallel()
	dnsmasq := testenv.LookPath(t, "dnsmasq", "dnsmasq-base")
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	dns, l1h, l2h, client := lab.Host("dns"), lab.Host("lus1"), lab.Host("lus2"), lab.Host("client")
	ld := dns.Attach(lan)
	l1, l2 := l1h.Attach(lan), l2h.Attach(lan)
	client.Attach(lan)
	jinidtest.LabDaemon(t, bin, l1h, "--no-multicast")
	jinidtest.LabDaemon(t, bin, l2h, "--no-multicast", "--discovery-port", "4170")

	srv := dns.Command(context.Background(), dnsmasq, "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces",
		"--listen-address="+ld.IPv4.String(), "--port=53", "--log-facility=-",
		"--srv-host=_jini._tcp.lab.test,lus1.lab.test,4160,0,10",
		"--srv-host=_jini._tcp.lab.test,lus2.lab.test,4170,0,10",
		"--host-record=lus1.lab.test,"+l1.IPv4.String(),
		"--host-record=lus2.lab.test,"+l2.IPv4.String())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	client.SetResolver(ld.IPv4)
	// dnsmasq serves once it answers the query discover will make.
	q := new(mdns.Msg)
	q.SetQuestion("_jini._tcp.lab.test.", mdns.TypeSRV)
	testenv.Until(t, "dnsmasq answering", func() bool {
		var r *mdns.Msg
		client.Namespace().Do(func() error {
			var err error
			r, _, err = (&mdns.Client{Timeout: 200 * time.Millisecond}).Exchange(q, ld.IPv4.String()+":53")
			return err
		})
		return r != nil && len(r.Answer) == 2
	})

	rs := discoverIn(t, bin, client, "--no-multicast", "--locator", "jini://lab.test", "--timeout", "2s")
	for _, want := range []struct {
		host string
		port int
	}{{l1.IPv4.String(), 4160}, {l2.IPv4.String(), 4170}} {
		r, ok := atHost(rs, want.host)
		if !ok || r.Port != want.port || r.Kind != "jinid" || !slices.Contains(r.How, finder.ViaSRV) {
			t.Errorf("lookup service at %s:%d by SRV: %+v (all: %+v)", want.host, want.port, r, rs)
		}
	}
}

// Avahi, a real mDNS implementation running in a lab namespace, sees the
// daemon's DNS-SD advertisement: avahi-browse -rpt _jini._tcp resolves it
// to the daemon's address, unicast port and TXT record.
func TestAvahiSeesAdvertisement(t *testing.T) {
	t.Parallel()
	testenv.LookPath(t, "avahi-daemon", "avahi-daemon")
	testenv.LookPath(t, "avahi-browse", "avahi-utils")
	testenv.LookPath(t, "dbus-daemon", "dbus")
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, observer := lab.Host("lus"), lab.Host("observer")
	ll := lus.Attach(lan)
	observer.Attach(lan)
	jinidtest.LabDaemon(t, bin, lus, "--announce-interval", "30s")

	env, avahiLog := startAvahi(t, observer, false)
	var out []byte
	defer func() {
		if t.Failed() {
			t.Logf("avahi-browse printed:\n%s\navahi-daemon said:\n%s", out, avahiLog())
		}
	}()
	want := fmt.Sprintf(";%s;4160;", ll.IPv4)
	testenv.Until(t, "avahi-browse to resolve the advertisement to "+ll.IPv4.String()+":4160", func() bool {
		browse := observer.Command(t.Context(), "avahi-browse", "-rpt", "_jini._tcp")
		browse.Env = env
		out, _ = browse.Output()
		return strings.Contains(string(out), want)
	})
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "=") && strings.Contains(l, want) {
			if !strings.Contains(l, `"serviceID=`) || !strings.Contains(l, `"api=http://`+ll.IPv4.String()+`:4162/"`) {
				t.Errorf("resolved record lacks the TXT fields: %s", l)
			}
			t.Logf("avahi-browse: %s", l)
			return
		}
	}
	t.Fatalf("no resolved line in:\n%s", out)
}

// startAvahi runs avahi-daemon in h on a private system bus, so nothing
// outside the lab is touched, until the test ends; publishing says
// whether it may publish (for avahi-publish). It returns the
// environment its clients need, and what it logged.
func startAvahi(t testing.TB, h *netlab.Host, publishing bool) ([]string, func() string) {
	t.Helper()
	testenv.LookPath(t, "avahi-daemon", "avahi-daemon")
	testenv.LookPath(t, "avahi-browse", "avahi-utils")
	testenv.LookPath(t, "dbus-daemon", "dbus")
	dir, err := os.MkdirTemp("", "jinid-avahi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777) // dbus-daemon runs as messagebus
	bus := "unix:path=" + dir + "/system_bus_socket"
	env := append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+bus)
	dbusd := h.Command(context.Background(), "dbus-daemon", "--nofork", "--nopidfile",
		"--config-file=/usr/share/dbus-1/system.conf", "--address="+bus)
	if err := dbusd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbusd.Process.Kill(); dbusd.Wait() })
	conf := dir + "/avahi-daemon.conf"
	os.WriteFile(conf, []byte(fmt.Sprintf("[server]\nuse-ipv4=yes\nuse-ipv6=no\nallow-interfaces=eth0\nenable-dbus=yes\n[wide-area]\nenable-wide-area=no\n[publish]\ndisable-publishing=%s\n",
		map[bool]string{true: "no", false: "yes"}[publishing])), 0o644)
	testenv.Until(t, "the bus socket", func() bool { _, err := os.Stat(dir + "/system_bus_socket"); return err == nil })
	// A /run of its own (ip netns exec gives the command a mount
	// namespace of its own): avahi-daemon keeps a PID file there, and two
	// tests' avahis would each find the other's.
	avahi := h.Command(context.Background(), "sh", "-c", `mount -t tmpfs jinid-avahi-run /run && mkdir -p /run/avahi-daemon && exec avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$0"`, conf)
	avahi.Env = env
	var mu sync.Mutex
	var log bytes.Buffer
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(b) })
	avahi.Stderr, avahi.Stdout = w, w
	if err := avahi.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { avahi.Process.Signal(syscall.SIGTERM); avahi.Wait() })
	return env, func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A name avahi holds on the LAN is not taken: the daemon, finding
// avahi answering its probes for jinid-<its ServiceID's first digits>,
// claims jinid-...-2 instead, and avahi-browse lists both services.
func TestAvahiNameConflict(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, observer := lab.Host("lus"), lab.Host("observer")
	lus.Attach(lan)
	observer.Attach(lan)
	// The daemon's ServiceID, kept in its store: the same at the next
	// start.
	data := t.TempDir()
	first := jinidtest.LabDaemon(t, bin, lus, "--data-dir", data, "--no-dns-sd")
	name := "jinid-" + idOf(t, first.Log())[:8]
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()

	env, avahiLog := startAvahi(t, observer, true)
	testenv.Until(t, "avahi-daemon to answer on its bus", func() bool {
		c := observer.Command(t.Context(), "avahi-browse", "-a", "-t", "-p")
		c.Env = env
		return c.Run() == nil
	})
	// avahi-publish holds the name while it runs.
	var pubMu sync.Mutex
	var pubOut bytes.Buffer
	pw := writerFunc(func(b []byte) (int, error) { pubMu.Lock(); defer pubMu.Unlock(); return pubOut.Write(b) })
	publish := observer.Command(context.Background(), "avahi-publish", "-s", name, "_jini._tcp", "4170")
	publish.Env = env
	publish.Stdout, publish.Stderr = pw, pw
	if err := publish.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { publish.Process.Kill(); publish.Wait() })
	testenv.Until(t, "avahi to hold "+name, func() bool {
		pubMu.Lock()
		defer pubMu.Unlock()
		return strings.Contains(pubOut.String(), "Established")
	})
	d := jinidtest.LabDaemon(t, bin, lus, "--data-dir", data)
	var out []byte
	defer func() {
		if t.Failed() {
			t.Logf("avahi-browse printed:\n%s\navahi-daemon said:\n%s\njinid said:\n%s", out, avahiLog(), d.Log())
		}
	}()
	testenv.Until(t, "avahi-browse to list avahi's "+name+" and the daemon's "+name+"-2", func() bool {
		browse := observer.Command(t.Context(), "avahi-browse", "-rpt", "_jini._tcp")
		browse.Env = env
		out, _ = browse.Output()
		return strings.Contains(string(out), ";"+name+";_jini._tcp;") && strings.Contains(string(out), ";"+name+"-2;_jini._tcp;") &&
			strings.Contains(string(out), ";4160;")
	})
	// One rename, for the one name avahi holds: avahi's own probes and
	// answers about -2 (its cache, its queries with known answers) are
	// no conflict.
	if n := strings.Count(d.Log(), "mDNS name in use on the LAN; renamed"); n != 1 {
		t.Errorf("renamed %d times, want once", n)
	}
}

// jinid discover --dns-sd finds a daemon by browsing _jini._tcp.local.
func TestDiscoverDNSSD(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, client := lab.Host("lus"), lab.Host("client")
	ll := lus.Attach(lan)
	client.Attach(lan)
	jinidtest.LabDaemon(t, bin, lus, "--announce-interval", "30s")
	// Groups no lookup service has: only DNS-SD can find it.
	rs := discoverIn(t, bin, client, "--dns-sd", "--groups", "nobody-here", "--timeout", "2s")
	r, ok := atHost(rs, ll.IPv4.String())
	if !ok || !slices.Contains(r.How, finder.ViaDNSSD) || r.Kind != "jinid" || r.ServiceID == "" {
		t.Fatalf("not found by DNS-SD: %+v", rs)
	}
}

// A static service asking for DNS-SD is published under its own type
// beside the lookup service's _jini._tcp: avahi-browse -a -r lists both,
// the printer resolved to its endpoint's address and port; removed from
// the configuration, it says goodbye and avahi forgets it.
func TestAvahiSeesStaticServices(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, observer := lab.Host("lus"), lab.Host("observer")
	ll := lus.Attach(lan)
	observer.Attach(lan)
	services := t.TempDir()
	file := filepath.Join(services, "lobby.json")
	os.WriteFile(file, []byte(`{"types":["org.example.Printer"],"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"Lobby printer"}}],
		"endpoint":"ipp://198.18.1.9:631/lobby","dnsSD":{"type":"_ipp._tcp","txt":["rp=lobby"]}}`), 0o644)
	d := jinidtest.LabDaemon(t, bin, lus, "--services-dir", services)

	env, avahiLog := startAvahi(t, observer, false)
	var out []byte
	defer func() {
		if t.Failed() {
			t.Logf("avahi-browse printed:\n%s\navahi-daemon said:\n%s\njinid said:\n%s", out, avahiLog(), d.Log())
		}
	}()
	browse := func() string {
		c := observer.Command(t.Context(), "avahi-browse", "-a", "-r", "-t", "-p")
		c.Env = env
		out, _ = c.Output()
		return string(out)
	}
	jini := ";_jini._tcp;local;jinid-" // the lookup service's own
	// avahi-browse names the types it knows (_ipp._tcp is an
	// "Internet Printer").
	printer := `=;eth0;IPv4;Lobby\032printer;Internet Printer;local;lobby-printer.local;198.18.1.9;631;"rp=lobby"`
	testenv.Until(t, "avahi-browse -a -r to list the lookup service and the printer", func() bool {
		s := browse()
		return strings.Contains(s, printer) && strings.Contains(s, jini) && strings.Contains(s, fmt.Sprintf(";%s;4160;", ll.IPv4))
	})
	os.Remove(file)
	d.Process.Signal(syscall.SIGHUP)
	testenv.Until(t, "avahi to forget the printer once removed", func() bool { return !strings.Contains(browse(), "Lobby") })
}

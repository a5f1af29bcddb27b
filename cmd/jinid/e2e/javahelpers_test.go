package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
)

// summary is a River client's last line.
func summary(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "SUMMARY ") {
			return l
		}
	}
	return ""
}

// riverSide is the River's side of a comparison: a LAN of its own in
// jinid's lab, with a Reggie, the River service and a host for its
// Java client.
type riverSide struct {
	reggie   *riverpeer.Reggie
	service  *riverpeer.Service
	client   *netlab.Host
	clientIP netip.Addr
}

// newRiverSide starts the River service named (ServiceMain's name) with a
// Reggie on a LAN of its own in jl's lab.
func newRiverSide(t *testing.T, jl *javaLab, service string) riverSide {
	t.Helper()
	rlan := jl.lab.LAN()
	rh, sh, rc := jl.lab.Host("reggie"), jl.lab.Host(service), jl.lab.Host("river-client")
	rip, sip, rcip := rh.Attach(rlan).IPv4, sh.Attach(rlan).IPv4, rc.Attach(rlan).IPv4
	return riverSide{reggie: riverpeer.StartReggie(t, rh, rip), service: riverpeer.StartService(t, sh, sip, service, nil), client: rc, clientIP: rcip}
}

// riverClientLikeRiver runs a River service's Java client (NormClient,
// MercuryClient, ...) against jinid, and against the River service
// itself (name, for ServiceMain) registered with a Reggie on another LAN
// of the same lab, side by side: every one of its n steps must be OK
// against both, with the same number of events. It returns jinid's
// output.
func riverClientLikeRiver(t *testing.T, client, service string, n int, args ...string) string {
	t.Helper()
	// How long a step waits for an event: jinid's lookup discovery
	// service tries a discarded lookup service's locator again after
	// 15 s, give or take a tenth (locator.DefaultRediscoverDelay).
	eventWait := "15000"
	if client == "FiddlerClient" {
		eventWait = "30000"
	}
	jl := newJavaLab(t)
	rs := newRiverSide(t, jl, service)
	reggie, river, rc, rcip := rs.reggie, rs.service, rs.client, rs.clientIP

	type result struct {
		out string
		err error
	}
	run := func(h *netlab.Host, locator string, listen netip.Addr, extra ...string) <-chan result {
		c := make(chan result, 1)
		go func() {
			out, err := riverpeer.Run(t, h, 3*time.Minute, nil, client, append(append([]string{"--locator", locator,
				"--listen-host", listen.String(), "--event-wait", eventWait}, extra...), args...)...)
			c <- result{out, err}
		}()
		return c
	}
	// One after the other: each JVM takes a core while it starts, and the
	// suite runs other Java tests beside this one.
	j := <-run(jl.java, jl.locator(), jl.javaIP)
	r := <-run(rc, reggie.Locator, rcip, "--service-id", river.ServiceID)
	if r.err != nil {
		t.Errorf("against the River service: %v\n%s", r.err, r.out)
	}
	if j.err != nil {
		t.Errorf("against jinid: %v\n%s\njinid's log:\n%s", j.err, j.out, jl.proc.Log())
	}
	jsteps, order, jevents := steps(j.out)
	rsteps, _, revents := steps(r.out)
	if len(order) != n {
		t.Fatalf("jinid: %d steps, want %d:\n%s", len(order), n, j.out)
	}
	for _, s := range order {
		if jsteps[s] != "OK" || rsteps[s] != "OK" {
			t.Errorf("step %s: jinid %s, %s %s", s, jsteps[s], service, rsteps[s])
		}
	}
	if jevents != revents {
		t.Errorf("events: jinid %d, %s %d", jevents, service, revents)
	}
	t.Logf("jinid: %s; %s: %s", summary(j.out), service, summary(r.out))
	if testing.Verbose() {
		t.Logf("jinid:\n%s\n%s:\n%s", j.out, service, r.out)
	}
	return j.out
}

// An unmodified Java client of a lease renewal service (NormClient)
// finds jinid's at jinid's lookup service, the River proxy
// (ConstrainableNormProxy) pointing at jinid, and passes every step as
// it does against Norm: a set and its lease, a service's lease handed
// in and kept alive past three and a half of its periods by the renewal
// service alone, the expiration warning, the renewal failure of a lease
// cancelled behind the set's back, remove, and the set's cancel (issue
// 50).
func TestJavaNormClient(t *testing.T) {
	t.Parallel()
	out := riverClientLikeRiver(t, "NormClient", "norm", 11)
	if !strings.Contains(out, "proxy=org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy") {
		t.Errorf("the proxy found at jinid is not Norm's:\n%s", out)
	}
}

// helperCalls is how many calls of method (a key, "renewFor/4") Java
// clients made to a helper service that returned, as /metrics counts
// them.
func helperCalls(t *testing.T, jl *javaLab, service, method string) int {
	t.Helper()
	body := raw(t, jl.java, "GET", "http://"+jl.jinidIP.String()+":4162/metrics", "", "", "", "").body
	m := regexp.MustCompile(`(?m)^jinid_java_helper_calls_total\{service="` + service + `",method="` + regexp.QuoteMeta(method) + `",outcome="return"\} (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	return atoi(m[1])
}

// An unmodified Java client of an event mailbox (MercuryClient) finds
// jinid's, Mercury's own proxy pointing at jinid, and passes every step
// as it does against Mercury: a pull registration and its listener,
// events sent to that listener by the client and by the lookup service
// (jinid's registrar, in the process), pulled in order, then pushed to
// the client's own listener once delivery is enabled, stored again once
// it is disabled, the registration renewed and cancelled (issue 50).
func TestJavaMercuryClient(t *testing.T) {
	t.Parallel()
	out := riverClientLikeRiver(t, "MercuryClient", "mercury", 11)
	if !strings.Contains(out, "proxy=org.apache.river.mercury.proxy.MailboxProxy$ConstrainableMailboxProxy") {
		t.Errorf("the proxy found at jinid is not Mercury's:\n%s", out)
	}
}

// An unmodified Java client of a lookup discovery service
// (FiddlerClient) finds jinid's, Fiddler's own proxy pointing at jinid,
// and passes every step as it does against Fiddler: a registration for
// the lookup service it found the service at, its discovered event with
// the registrar's proxy, getRegistrars, the groups and locators, discard
// and its discarded event, the rediscovery, renew and cancel (issue 50).
func TestJavaFiddlerClient(t *testing.T) {
	t.Parallel()
	out := riverClientLikeRiver(t, "FiddlerClient", "fiddler", 10)
	if !strings.Contains(out, "proxy=org.apache.river.fiddler.proxy.FiddlerProxy$ConstrainableFiddlerProxy") {
		t.Errorf("the proxy found at jinid is not Fiddler's:\n%s", out)
	}
}

// An unmodified Java client of a transaction manager (MahaloClient)
// finds jinid's, Mahalo's own proxy pointing at jinid, and passes every
// step as it does against Mahalo: a transaction with two Java
// participants that jinid calls over Jini ERI (prepare, in which each
// asks the manager for the state and hears VOTING, then commit), one
// participant alone (prepareAndCommit), an abort, and a transaction
// whose lease ran out (issue 50).
func TestJavaMahaloClient(t *testing.T) {
	t.Parallel()
	out := riverClientLikeRiver(t, "MahaloClient", "mahalo", 9)
	if !strings.Contains(out, "proxy=org.apache.river.mahalo.proxy.TxnMgrProxy$ConstrainableTxnMgrProxy") {
		t.Errorf("the proxy found at jinid is not Mahalo's:\n%s", out)
	}
}

// Java and HTTP on the same registrations (issue 50, mixed worlds),
// with a Reggie on jinid's LAN:
//   - a Java service hands the lease of its registration at Reggie to
//     jinid's renewal service, which keeps it there past ten of its
//     lease periods by calling Reggie over Jini ERI;
//   - an HTTP client's mailbox gets the events of Reggie, a Java
//     generator, through its listener's Java form (GET
//     /v1/java/mailbox/{id}/listener);
//   - a Java client pulls the event an HTTP generator sent its mailbox;
//   - a Java client's lookup discovery registration hears of jinid and
//     of Reggie;
//   - a Java participant and an HTTP participant in one transaction a
//     Java client made commit together;
//   - an administrator lists what Java programs made (GET
//     /v1/java/registrations), owned by their address.
func TestJavaMixedWorlds(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	rh := jl.lab.Host("reggie")
	rip := rh.Attach(jl.lan).IPv4
	reggie := riverpeer.StartReggie(t, rh, rip)
	c := jinidtest.LabClient(t, jl.java, "http://"+jl.jinidIP.String()+":4162", client.WithToken(jl.proc.AdminToken(t)))
	ctx := t.Context()

	// The parts one after the other: each runs JVMs of its own, beside
	// the suite's other Java tests.
	t.Run("renewal", func(t *testing.T) {
		const lease, secs = 2000, 22 // eleven periods
		out, err := riverpeer.Run(t, jl.java, 2*time.Minute, nil, "JinidPeer", "norm-hold", "--locator", reggie.Locator,
			"--norm-locator", jl.locator(), "--lease", fmt.Sprint(lease), "--secs", fmt.Sprint(secs))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var checks, found, renewals int
		if _, err := fmt.Sscanf(lineWith(out, "held "), "held checks=%d found=%d renewals=%d", &checks, &found, &renewals); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if checks < secs-2 || found != checks || renewals < secs*1000/lease/2 {
			t.Errorf("held: found at Reggie in %d of %d checks, %d renewals seen, over %d lease periods:\n%s", found, checks, renewals, secs*1000/lease, out)
		}
		if n := helperCalls(t, jl, "norm", "renewFor/4"); n < 1 {
			t.Errorf("renewFor counted %d times in /metrics", n)
		}
	})

	t.Run("mailbox-from-reggie", func(t *testing.T) {
		reg, err := c.MailboxRegister(ctx, 60_000, true)
		if err != nil {
			t.Fatal(err)
		}
		jf, err := c.JavaMailboxListener(ctx, reg.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := riverpeer.Run(t, jl.java, time.Minute, nil, "JinidPeer", "notify-listener", "--locator", reggie.Locator,
			"--listener", base64.StdEncoding.EncodeToString(jf.Marshalled), "--secs", "1")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		it, err := c.MailboxIterator(ctx, reg.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < 2 {
			ev, err := c.MailboxNext(ctx, reg.ID, it, 15_000)
			if err != nil || ev == nil {
				t.Fatalf("after %d events: %v (Reggie's side:\n%s)", len(got), err, out)
			}
			var e struct {
				Type, Class string
				EventID     int64
				Java        []byte
			}
			if err := json.Unmarshal(ev, &e); err != nil || e.Type != "java" || !strings.Contains(e.Class, "RegistrarEvent") || len(e.Java) == 0 {
				t.Fatalf("event %s: %v", ev, err)
			}
			got = append(got, e.Class)
		}
	})

	t.Run("java-pulls-http", func(t *testing.T) {
		p := riverpeer.Start(t, jl.java, nil, "JinidPeer", "pull", "--locator", jl.locator(), "--secs", "30")
		id := strings.TrimPrefix(p.WaitLine(t, regexp.MustCompile(`^registration `), time.Minute), "registration ")
		info, err := c.MailboxGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		listed(t, c, "mailbox", id, "java@"+jl.javaIP.String())
		listener, _ := info["listener"].(map[string]any)
		url, _ := listener["url"].(string)
		if url == "" {
			t.Fatalf("no listener URL in %v", info)
		}
		hc := &http.Client{Transport: &http.Transport{DialContext: jinidtest.DialFrom(jl.java)}, Timeout: 5 * time.Second}
		resp, err := hc.Post(url, "application/json", strings.NewReader(`{"source":"http-generator","eventID":7,"seqNum":1,"type":"note"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("posting the event: %s", resp.Status)
		}
		l := p.WaitLine(t, regexp.MustCompile(`^event `), 30*time.Second)
		if !strings.Contains(l, "class=net.jini.core.event.RemoteEvent") || !strings.Contains(l, `source="http-generator" id=7 seq=1`) {
			t.Errorf("Java pulled: %s", l)
		}
	})

	t.Run("lds-hears-both", func(t *testing.T) {
		out, err := riverpeer.Run(t, jl.java, 3*time.Minute, nil, "FiddlerClient", "--locator", jl.locator(), "--groups", "lab",
			"--listen-host", jl.javaIP.String(), "--event-wait", "30000")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, id := range []string{jl.serviceID, reggie.ServiceID} {
			if !strings.Contains(out, "discarded=false registrars=["+id) && !strings.Contains(out, ","+id+"]") {
				t.Errorf("no discovered event named %s:\n%s", id, out)
			}
		}
	})

	t.Run("txn-java-and-http", func(t *testing.T) {
		hp := newLabParticipant(t, jl.java, jl.javaIP.String(), 0)
		goFile := filepath.Join(t.TempDir(), "go")
		p := riverpeer.Start(t, jl.java, nil, "JinidPeer", "txn", "--locator", jl.locator(), "--listen-host", jl.javaIP.String(),
			"--go-file", goFile, "--secs", "60")
		var long int64
		fmt.Sscanf(p.WaitLine(t, regexp.MustCompile(`^created `), time.Minute), "created %d", &long)
		id, err := c.JavaTransaction(ctx, long)
		if err != nil {
			t.Fatal(err)
		}
		listed(t, c, "transactions", id, "java@"+jl.javaIP.String())
		if err := c.TxnJoin(ctx, id, hp.URL, 1); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goFile, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		l := p.WaitLine(t, regexp.MustCompile(`^participant `), time.Minute)
		if l != "participant [prepare:2, commit]" { // 2: VOTING
			t.Errorf("the Java participant heard %s", l)
		}
		testenv.Until(t, "the HTTP participant prepared and committed once",
			func() bool { prepared, commits := hp.counts(); return prepared == 1 && commits == 1 })
	})
}

// listed checks that an administrator lists a registration a Java
// program made, with its owner.
func listed(t *testing.T, c *client.Client, service, id, owner string) {
	t.Helper()
	regs, err := c.JavaRegistrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range regs {
		if r.Service == service && r.ID == id {
			if r.Owner != owner {
				t.Errorf("%s %s owned by %s, want %s", service, id, r.Owner, owner)
			}
			return
		}
	}
	t.Errorf("%s %s is not among the Java registrations: %+v", service, id, regs)
}

// lineWith is the first line of out that begins with prefix.
func lineWith(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestJavaHelpersBench is the measurement of docs/performance.md, "The
// helper services to Java": for each River helper service, the main
// calls of a Java client timed from 1 and 16 threads against jinid and
// against the persistent River service (its changes on disk before it
// answers, as jinid's), and both processes' resident memory at rest and
// after the load. Run on demand (JINID_BENCH=1).
func TestJavaHelpersBench(t *testing.T) {
	// One client makes thousands of registrations: past the quotas a
	// LAN's client gets by default (docs/security.md), none of which the
	// River services have.
	jl := newJavaBenchLab(t, "--limit", "ldsRegistrationsPerClient=100000", "--limit", "ldsRegistrations=100000",
		"--limit", "renewalSetsPerClient=100000", "--limit", "renewalSets=100000",
		"--limit", "mailboxesPerClient=100000", "--limit", "mailboxes=100000",
		"--limit", "transactionsPerClient=100000", "--limit", "transactions=100000")
	rlan := jl.lab.LAN()
	rh, rc := jl.lab.Host("reggie"), jl.lab.Host("river-client")
	rip, rcip := rh.Attach(rlan).IPv4, rc.Attach(rlan).IPv4
	reggie := riverpeer.StartReggie(t, rh, rip)
	line := regexp.MustCompile(`(?m)^bench (\S+) (\S+) threads=(\d+) calls=(\d+) failed=(\d+) persec=(\d+) p50=(\d+) p99=(\d+)$`)
	bench := func(h *netlab.Host, locator string, listen netip.Addr, service string, threads int, extra ...string) []string {
		calls := 1600 / threads
		out, err := riverpeer.Run(t, h, 10*time.Minute, nil, "JinidPeer", append([]string{"helper-bench", "--locator", locator,
			"--service", service, "--threads", fmt.Sprint(threads), "--calls", fmt.Sprint(calls), "--listen-host", listen.String()}, extra...)...)
		if err != nil {
			t.Fatalf("%s, %d threads, at %s: %v\n%s", service, threads, locator, err, out)
		}
		var got []string
		for _, m := range line.FindAllStringSubmatch(out, -1) {
			if m[2] == "warm" {
				continue
			}
			if m[5] != "0" {
				t.Errorf("%s: %s failed calls:\n%s", service, m[5], out)
			}
			got = append(got, fmt.Sprintf("%s %d/s p50 %s µs p99 %s µs", m[2], atoi(m[6]), m[7], m[8]))
		}
		return got
	}
	rss := func(pid int) string {
		all, _, _ := procRSS(t, pid)
		return fmt.Sprintf("%.1f MB", float64(all)/1e6)
	}
	for _, service := range []string{"norm", "mercury", "fiddler", "mahalo"} {
		sh := jl.lab.Host("river-" + service)
		river := riverpeer.StartService(t, sh, sh.Attach(rlan).IPv4, service, []string{"-Dservice.persistent=" + t.TempDir()})
		jRest, rRest := rss(jl.proc.Process.Pid), rss(river.Program.Pid())
		for _, threads := range []int{1, 16} {
			j := bench(jl.java, jl.locator(), jl.javaIP, service, threads)
			jLoad := rss(jl.proc.Process.Pid)
			r := bench(rc, reggie.Locator, rcip, service, threads, "--service-id", river.ServiceID)
			rLoad := rss(river.Program.Pid())
			t.Logf("%s, %d thread(s): jinid %v (RSS %s at rest, %s after); %s %v (RSS %s at rest, %s after)",
				service, threads, j, jRest, jLoad, service, r, rRest, rLoad)
		}
		river.Kill()
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// The rules of each helper service's specification that a Java client
// can see (LR, EM, LD, TX: argument errors, leases, event registrations,
// iterators, groups and locators, transaction states and votes), checked
// through the River proxy by JinidPeer spec against jinid and against the
// River service side by side: every rule holds against both (issue 50,
// the Java side of the scenarios the services pass over HTTP).
func TestJavaSpecLikeRiver(t *testing.T) {
	t.Parallel()
	// The services one after the other: each subtest runs four JVMs (a
	// Reggie, the River service, two clients), which the other Java
	// tests of the suite share two cores with.
	for _, service := range []string{"norm", "mercury", "fiddler", "mahalo"} {
		t.Run(service, func(t *testing.T) {
			jl := newJavaLab(t)
			rs := newRiverSide(t, jl, service)
			run := func(h *netlab.Host, locator string, listen netip.Addr, extra ...string) map[string]string {
				out, err := riverpeer.Run(t, h, 3*time.Minute, nil, "JinidPeer", append([]string{"spec", "--locator", locator,
					"--service", service, "--listen-host", listen.String()}, extra...)...)
				if err != nil {
					t.Fatalf("against %s: %v\n%s\njinid's log:\n%s", locator, err, out, jl.proc.Log())
				}
				got := map[string]string{}
				for _, l := range strings.Split(out, "\n") {
					if rest, ok := strings.CutPrefix(l, "CHECK "); ok {
						// "RULE... OK|FAIL detail": the rule is everything
						// before the outcome.
						for _, o := range []string{" OK", " FAIL"} {
							if i := strings.Index(rest, o); i > 0 {
								got[rest[:i]] = strings.TrimSpace(rest[i:])
								break
							}
						}
					}
				}
				if len(got) == 0 || !strings.Contains(out, "SPEC ok=") {
					t.Fatalf("against %s, no checks:\n%s", locator, out)
				}
				return got
			}
			j := run(jl.java, jl.locator(), jl.javaIP)
			r := run(rs.client, rs.reggie.Locator, rs.clientIP, "--service-id", rs.service.ServiceID)
			for rule, outcome := range j {
				if !strings.HasPrefix(outcome, "OK") || !strings.HasPrefix(r[rule], "OK") {
					t.Errorf("%s: jinid %s; %s %s", rule, outcome, service, r[rule])
				}
			}
			t.Logf("%d rules, each holding against jinid and %s", len(j), service)
		})
	}
}

// jinid SIGKILLed while a Java client holds the proxies of a renewal set
// (with a service's lease in it), a pull mailbox (with an event) and a
// lookup discovery registration, and started again on its store: the
// same proxies work (the servers' object Uuids and the port are kept),
// what was acknowledged is there, and the renewal service goes on
// renewing the lease, whose service stays registered past its period.
func TestJavaHelpersSurviveRestart(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	goFile := filepath.Join(t.TempDir(), "go")
	p := riverpeer.Start(t, jl.java, nil, "JinidPeer", "hold", "--locator", jl.locator(), "--listen-host", jl.javaIP.String(),
		"--go-file", goFile, "--secs", "90")
	p.WaitLine(t, regexp.MustCompile(`^holding `), time.Minute)
	jl.proc.Kill()
	prefix := netip.PrefixFrom(jl.jinidIP, 24).Masked().String()
	jl.proc = jinidtest.LabDaemon(t, jl.bin, jl.jinid, "--java-register-from", prefix, "--data-dir", jl.proc.Dir)
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := p.WaitLine(t, regexp.MustCompile(`^after `), time.Minute)
	if l != "after leases=1 event=1 groups=1 renewed=yes registered=yes" {
		t.Fatalf("after the restart: %s\njinid's log:\n%s", l, jl.proc.Log())
	}
}

// jinid's join manager registers its helper services, as Java finds
// them, where it registers its static services: at a Reggie of the
// group it joins. There each River service's Java client finds jinid's
// (the proxy made for the address Reggie's host reaches jinid at) and
// passes every step: Norm's keeps the client's registration at Reggie
// alive by renewing it there over Jini ERI, Mercury's mailbox takes
// Reggie's events through its listener, Fiddler's discovers Reggie,
// Mahalo's calls the client's participants (issue 50).
func TestJavaHelpersJoined(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t, "--groups", "lab", "--public-group=false", "--announce-interval", "1s",
		"--services-dir", joinedPrinter(t))
	rh := jl.lab.Host("reggie")
	reggie := riverpeer.StartReggie(t, rh, rh.Attach(jl.lan).IPv4, "multicastAnnouncementInterval=1000L")
	for _, c := range []struct {
		client string
		steps  int
	}{{"NormClient", 11}, {"MercuryClient", 11}, {"FiddlerClient", 10}, {"MahaloClient", 9}} {
		out, err := riverpeer.Run(t, jl.java, 3*time.Minute, nil, c.client, "--locator", reggie.Locator,
			"--listen-host", jl.javaIP.String(), "--event-wait", "30000", "--find-wait", "60000")
		got, order, _ := steps(out)
		if err != nil || len(order) != c.steps {
			t.Errorf("%s at Reggie: %v\n%s\njinid's log:\n%s", c.client, err, out, jl.proc.Log())
			continue
		}
		for _, s := range order {
			if got[s] != "OK" {
				t.Errorf("%s at Reggie, step %s: %s", c.client, s, got[s])
			}
		}
		if !strings.Contains(lineWith(out, "STEP find "), "proxy=org.apache.river.") {
			t.Errorf("%s found no River proxy:\n%s", c.client, out)
		}
	}
}

// joinedPrinter is a services directory with one static service that
// joins the lookup services of the group "lab".
func joinedPrinter(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := os.WriteFile(filepath.Join(dir, "printer.json"), []byte(`{"types":["org.example.Printer"],
		"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"lobby"}}],"endpoint":"ipp://198.18.1.9/lobby",
		"join":{"groups":["lab"]}}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

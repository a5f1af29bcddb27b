package e2e

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
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
	rlan := jl.lab.LAN()
	rh, sh, rc := jl.lab.Host("reggie"), jl.lab.Host(service), jl.lab.Host("river-client")
	rip, sip, rcip := rh.Attach(rlan).IPv4, sh.Attach(rlan).IPv4, rc.Attach(rlan).IPv4
	reggie := riverpeer.StartReggie(t, rh, rip)
	river := riverpeer.StartService(t, sh, sip, service, nil)

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
	jc := run(jl.java, jl.locator(), jl.javaIP)
	rcc := run(rc, reggie.Locator, rcip, "--service-id", river.ServiceID)
	j, r := <-jc, <-rcc
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

package e2e

import (
	"context"
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/netlab"
	"github.com/jinid/jinid/internal/riverpeer"
	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/api/client"
)

// javaLab is a LAN with jinid, serving Java clients of the LAN's
// network, and a host for the Java programs.
type javaLab struct {
	bin       string
	lab       *netlab.Lab
	jinid     *netlab.Host
	java      *netlab.Host
	jinidIP   netip.Addr
	javaIP    netip.Addr
	proc      *jinidtest.LabProc
	serviceID string
}

func newJavaLab(t *testing.T, args ...string) *javaLab {
	t.Helper()
	riverpeer.Java(t)
	jl := &javaLab{bin: jinidtest.Binary(t), lab: netlab.New(t)}
	lan := jl.lab.LAN()
	jl.jinid, jl.java = jl.lab.Host("jinid"), jl.lab.Host("java")
	jl.jinidIP, jl.javaIP = jl.jinid.Attach(lan).IPv4, jl.java.Attach(lan).IPv4
	prefix := netip.PrefixFrom(jl.jinidIP, 24).Masked().String()
	jl.proc = jinidtest.LabDaemon(t, jl.bin, jl.jinid, append([]string{"--java-register-from", prefix}, args...)...)
	jl.serviceID = idOf(t, jl.proc.Log())
	return jl
}

func (jl *javaLab) locator() string { return "jini://" + jl.jinidIP.String() }

// steps reads RegistrarClient's output: each step's outcome (OK or FAIL),
// and the events line count.
func steps(out string) (map[string]string, []string, int) {
	got := map[string]string{}
	var order []string
	events := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "STEP":
			got[f[1]] = f[2]
			order = append(order, f[1])
		case len(f) > 0 && f[0] == "EVENT":
			events++
		}
	}
	return got, order, events
}

// An unmodified Java client's whole registrar scenario (issue 23):
// discovery, groups, locator, register, four lookups, notify with its
// events, a second registration, renew and a batch renewal, cancel,
// renew-after-cancel (UnknownLeaseException) and the cancellations ends
// the same against jinid as against a real Reggie on another LAN of the
// same test: every step OK, three events.
func TestJavaRegistrarClientLikeReggie(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	rlan := jl.lab.LAN()
	rh, rc := jl.lab.Host("reggie"), jl.lab.Host("reggie-client")
	rip, rcip := rh.Attach(rlan).IPv4, rc.Attach(rlan).IPv4
	reggie := riverpeer.StartReggie(t, rh, rip)

	run := func(h *netlab.Host, locator, listen, expect string) string {
		out, err := riverpeer.Run(t, h, 90*time.Second, nil, "RegistrarClient",
			"--locator", locator, "--listen-host", listen, "--expect-id", expect, "--event-wait", "10000")
		if err != nil {
			t.Errorf("against %s: %v\n%s", locator, err, out)
		}
		return out
	}
	jout := run(jl.java, jl.locator(), jl.javaIP.String(), jl.serviceID)
	rout := run(rc, reggie.Locator, rcip.String(), reggie.ServiceID)
	jsteps, order, jevents := steps(jout)
	rsteps, _, revents := steps(rout)
	if len(order) != 18 {
		t.Fatalf("jinid: %d steps, want 18:\n%s", len(order), jout)
	}
	for _, s := range order {
		if jsteps[s] != rsteps[s] || jsteps[s] != "OK" {
			t.Errorf("step %s: jinid %s, Reggie %s", s, jsteps[s], rsteps[s])
		}
	}
	if jevents != 3 || revents != 3 {
		t.Errorf("events: jinid %d, Reggie %d; want 3 each", jevents, revents)
	}
	if t.Failed() {
		t.Logf("jinid:\n%s\nReggie:\n%s", jout, rout)
	}
}

// Java's LookupDiscovery finds jinid under its ServiceID by multicast,
// with no failed unicast discovery, and the registrar proxy jinid serves
// is one Java uses.
func TestJavaDiscoversJinid(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	out, err := riverpeer.Run(t, jl.java, 60*time.Second, nil, "LookupWatch",
		"--public", "--secs", "6", "--request-host", jl.javaIP.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, jl.serviceID) {
		t.Fatalf("LookupWatch did not discover jinid %s:\n%s", jl.serviceID, out)
	}
	if regexp.MustCompile(`(?m)^\S+ failed `).MatchString(out) || !strings.Contains(out, " failed=0") {
		t.Fatalf("Java failed a unicast discovery:\n%s", out)
	}
}

// A Java JoinManager service registers with jinid, renews its lease on
// its own cadence over several lease periods, is visible over HTTP by
// type and by Name, and is gone when it terminates.
func TestJavaJoinManager(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	c := jinidtest.LabClient(t, jl.java, "http://"+jl.jinidIP.String()+":4162")
	ctx := context.Background()
	p := riverpeer.Start(t, jl.java, nil, "JoinService", "--locator", jl.locator(), "--name", "join-1",
		"--lease", "4000", "--secs", "14", "--request-host", jl.javaIP.String())
	line := p.WaitLine(t, regexp.MustCompile(`serviceID `), 30*time.Second)
	sid := strings.Fields(line)[2]
	p.WaitLine(t, regexp.MustCompile(`joined `+jl.serviceID), 30*time.Second)

	for _, tmpl := range []apitypes.Template{
		{Types: []string{"com.example.Hello"}},
		{Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "join-1"}}}},
	} {
		items, _, err := c.Query(ctx, tmpl, 10)
		if err != nil || len(items) != 1 || items[0].ServiceID != sid {
			t.Fatalf("HTTP query %+v: %+v, %v; want the Java service %s", tmpl, items, err, sid)
		}
		it := items[0]
		if !contains(it.Types, "com.example.HelloProxy") || !contains(it.Types, "java.io.Serializable") {
			t.Errorf("types %q", it.Types)
		}
		var svc map[string]string
		if json.Unmarshal(it.Service, &svc) != nil || svc["javaSerialized"] == "" {
			t.Errorf("service %s, want the serialized Java object", it.Service)
		}
	}
	out := p.Wait(t, 60*time.Second)
	sum := regexp.MustCompile(`SUMMARY joined=1 .* renewals=(\d+) warnings=0 discovery-failures=0 removed=yes`).FindStringSubmatch(out)
	if sum == nil {
		t.Fatalf("JoinService:\n%s", out)
	}
	if n := len(regexp.MustCompile(`(?m) renewed `).FindAllString(out, -1)); n < 4 {
		t.Errorf("%d renewals over 14 s of 4 s leases:\n%s", n, out)
	}
	items, _, err := c.Query(ctx, apitypes.Template{Types: []string{"com.example.Hello"}}, 10)
	if err != nil || len(items) != 0 {
		t.Fatalf("after terminate: %+v, %v", items, err)
	}
}

// An item registered over HTTP is found by a Java lookup by type; its
// service object is its JSON as a String.
func TestHTTPItemFoundByJava(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	c := jinidtest.LabClient(t, jl.java, "http://"+jl.jinidIP.String()+":4162", client.WithToken(jl.proc.AdminToken(t)))
	reg, err := c.Register(context.Background(), apitypes.Item{Types: []string{"com.acme.Printer"},
		Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "printer-1"}}},
		Service:    json.RawMessage(`{"url":"ipp://printer-1/"}`)}, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	out, err := riverpeer.Run(t, jl.java, 60*time.Second, nil, "RegistrarClient", "lookup",
		"--locator", jl.locator(), "--type", "com.acme.Printer", "--want", reg.ServiceID)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "ipp://printer-1/") || !strings.Contains(out, "printer-1") {
		t.Fatalf("Java lookup:\n%s", out)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// On a LAN with IPv6 link-local addresses only (no IPv4, no router, no
// DHCP) a jinid lookup service is discovered at its zoned address, is
// reached by unicast discovery at jini://[fe80::…%eth0], is never falsely
// discarded by --watch, and an LDS event hands a third host an address it
// can dial.
func TestIPv6OnlyLAN(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	lus, cl, third := lab.Host("lus"), lab.Host("client"), lab.Host("third")
	ll, lt := lus.AttachLinkLocal(lan), third.AttachLinkLocal(lan)
	cl.AttachLinkLocal(lan)
	// Listeners on an IPv6-only LAN are at link-local addresses: allowed
	// outright, as docs/security.md says to.
	jinidtest.LabDaemon(t, bin, lus, "--announce-interval", "500ms", "--allow-outbound", "fe80::/10")
	zoned := ll.IPv6.String() + "%eth0" // the lookup service as its neighbours see it

	// Discovery.
	rs := discoverIn(t, bin, cl, "--timeout", "5s")
	r, ok := atHost(rs, zoned)
	if !ok || len(rs) != 1 {
		t.Fatalf("want the lookup service found once, at %s: %+v", zoned, rs)
	}
	if r.Kind != "jinid" || r.Family != 6 || r.Interface != "eth0" || r.Address != "["+zoned+"]:4160" || !slices.Equal(r.Versions, []int{1, 2}) ||
		!strings.Contains(r.APIURL, "%25eth0") {
		t.Errorf("found %+v; want a jinid lookup service at [%s]:4160 on eth0, versions 1 and 2, its API URL zoned", r, zoned)
	}
	id := r.ServiceID

	// Unicast discovery by a zoned locator, and the zone kept in what is
	// printed.
	byLoc := discoverIn(t, bin, cl, "--no-multicast", "--locator", "jini://["+zoned+"]")
	if len(byLoc) != 1 || byLoc[0].Address != "["+zoned+"]:4160" || byLoc[0].ServiceID != id || !strings.Contains(byLoc[0].APIURL, "%25eth0") {
		t.Errorf("by locator: %+v; want it at [%s]:4160 with its API URL zoned", byLoc, zoned)
	}

	// --watch for five announcement intervals, twenty times: discovered
	// at the zoned address, never discarded.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 5)
	for run := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := cl.Command(t.Context(), bin, "discover", "--watch", "--json", "--announce-interval", "500ms", "--timeout", "2500ms").Output()
			if err != nil {
				t.Errorf("watch run %d: %v", run, err)
				return
			}
			discovered := false
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var e struct{ Event, ServiceID, Host, Reason string }
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Errorf("watch run %d: %q: %v", run, sc.Bytes(), err)
					return
				}
				switch {
				case e.Event == "discovered" && e.ServiceID == id && e.Host == zoned:
					discovered = true
				case e.Event != "discovered":
					t.Errorf("watch run %d: %s %s %s (reason %q); want nothing but its discovery at %s", run, e.Event, e.ServiceID, e.Host, e.Reason, zoned)
				}
			}
			if !discovered {
				t.Errorf("watch run %d: not discovered at %s:\n%s", run, zoned, out)
			}
		}()
	}
	wg.Wait()

	// The lookup discovery service: a listener on the third host gets
	// the lookup service's address without the daemon's zone (which means
	// nothing there), and reaches it by adding its own.
	sink := jinidtest.NewSink(t, third, lt.IPv6.String()+"%eth0")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(sink.URL, "http://"))
	listener := "http://[" + lt.IPv6.String() + "%25eth0]:" + port + "/events"
	c := jinidtest.LabClient(t, third, "http://["+ll.IPv6.String()+"%25eth0]:4162")
	if _, err := c.LDSRegister(t.Context(), client.LDSRequest{Listener: listener, Duration: 60_000}); err != nil {
		t.Fatal(err)
	}
	var ev apitypes.RemoteDiscoveryEvent
	sink.Next(t, "/events", 15*time.Second, &ev)
	i := slices.IndexFunc(ev.Registrars, func(r apitypes.Registrar) bool { return r.ServiceID == id })
	if ev.Discarded || i < 0 {
		t.Fatalf("event %+v; want the lookup service discovered", ev)
	}
	reg := ev.Registrars[i]
	if reg.Host != ll.IPv6.String() || reg.Locator != "jini://["+ll.IPv6.String()+"]:4160" {
		t.Fatalf("registrar %+v; want host %s (no zone: it is the daemon's)", reg, ll.IPv6)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	addr := net.JoinHostPort(reg.Host+"%"+lt.Name, fmt.Sprint(reg.Port))
	resp, err := unicast.DiscoverAt(ctx, jinidtest.DialFrom(third), addr, discovery.ProtocolV2)
	if err != nil {
		t.Fatalf("the third host dialing %s: %v", addr, err)
	}
	if d := resp.Registrar.Descriptor; d == nil || d.ServiceID.String() != id {
		t.Fatalf("the third host reached %+v at %s; want the lookup service %s", resp, addr, id)
	}
}

// On a dual-stack LAN, twenty runs of jinid discover --json give every
// lookup service the same address and versions, on each interface and
// family and merged, whichever family answered first.
func TestDualStackDeterministic(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	cl, a, b := lab.Host("client"), lab.Host("a"), lab.Host("b")
	cl.Attach(lan)
	a.Attach(lan)
	b.Attach(lan)
	jinidtest.LabDaemon(t, bin, a, "--announce-interval", "500ms")
	jinidtest.LabDaemon(t, bin, b, "--announce-interval", "500ms")

	type seen struct {
		id, iface string
		family    int
	}
	summary := func(rs []finder.Result) map[seen]string {
		m := map[seen]string{}
		for _, r := range rs {
			m[seen{r.ServiceID, r.Interface, r.Family}] = fmt.Sprintf("%s %v %s", r.Address, r.Versions, r.Error)
		}
		return m
	}
	var (
		mu    sync.Mutex
		first = map[string]map[seen]string{}
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 5)
	)
	for run := range 20 {
		for _, mode := range [][]string{nil, {"--merge"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				got := summary(discoverIn(t, bin, cl, append([]string{"--timeout", "5s"}, mode...)...))
				key := strings.Join(mode, "")
				mu.Lock()
				defer mu.Unlock()
				if len(got) != map[string]int{"": 4, "--merge": 2}[key] {
					t.Errorf("run %d %s: %d results, want both lookup services over both families: %v", run, key, len(got), got)
					return
				}
				if first[key] == nil {
					first[key] = got
					return
				}
				for k, v := range first[key] {
					if got[k] != v {
						t.Errorf("run %d %s: %v is %q, was %q", run, key, k, got[k], v)
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("per interface and family: %v; merged: %v", first[""], first["--merge"])
	for k, v := range first["--merge"] {
		if !strings.HasPrefix(v, "[2001:db8:") {
			t.Errorf("merged %v at %s; want its global IPv6 address (RFC 6724's order)", k, v)
		}
	}
}

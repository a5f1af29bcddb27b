package finder

import (
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startLUS(t *testing.T, h *netlab.Host, version int, id byte, groups ...string) *discoverytest.LookupService {
	t.Helper()
	l, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: version, ServiceID: discovery.ServiceID{id}, Groups: groups,
		Namespace: h.Namespace(), Announce: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func byID(rs []Result, id byte) (Result, bool) {
	want := discovery.ServiceID{id}.String()
	for _, r := range rs {
		if r.ServiceID == want {
			return r, true
		}
	}
	return Result{}, false
}

func TestFindOnALAN(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1, h2, h3 := lab.Host("client"), lab.Host("lus1"), lab.Host("lus2"), lab.Host("lus3")
	client.Attach(lan)
	l1, l2 := h1.Attach(lan), h2.Attach(lan)
	h3.Attach(lan)
	startLUS(t, h1, 1, 1, "lab")
	startLUS(t, h2, 2, 2, "lab", "extra")
	startLUS(t, h3, 2, 3, "other")

	rs, err := Find(t.Context(), Config{Groups: []string{"lab"}, Timeout: 2 * time.Second, Namespace: client.Namespace(), NoIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	r1, ok1 := byID(rs, 1)
	r2, ok2 := byID(rs, 2)
	if !ok1 || !ok2 {
		t.Fatalf("found %+v; want lus1 (v1) and lus2 (v2)", rs)
	}
	if _, ok := byID(rs, 3); ok {
		t.Errorf("found lus3, which is not in group lab")
	}
	for _, c := range []struct {
		r       Result
		version int
		host    string
		groups  []string
	}{{r1, 1, l1.IPv4.String(), []string{"lab"}}, {r2, 2, l2.IPv4.String(), []string{"lab", "extra"}}} {
		if !slices.Equal(c.r.Versions, []int{c.version}) || c.r.Host != c.host || c.r.Port != 4160 || !slices.Equal(c.r.Groups, c.groups) ||
			c.r.Interface != "eth0" || c.r.Family != 4 || c.r.Kind != "jinid" || c.r.Error != "" {
			t.Errorf("got %+v; want version %d at %s:4160 groups %q on eth0", c.r, c.version, c.host, c.groups)
		}
		if !slices.Contains(c.r.How, ViaRequest) || !slices.Contains(c.r.How, ViaAnnouncement) {
			t.Errorf("%s found via %q; want both a request response and an announcement", c.r.Host, c.r.How)
		}
	}
	if len(rs) != 2 {
		t.Errorf("found %d lookup services, want 2: %+v", len(rs), rs)
	}
}

func TestFindByLocator(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1, empty := lab.Host("client"), lab.Host("lus1"), lab.Host("empty")
	client.Attach(lan)
	l1 := h1.Attach(lan)
	le := empty.Attach(lan)
	startLUS(t, h1, 1, 1, "lab")

	rs, err := Find(t.Context(), Config{NoMulticast: true, Timeout: 2 * time.Second, Namespace: client.Namespace(),
		Locators: []discovery.Locator{{Host: l1.IPv4.String(), Port: 4160}, {Host: le.IPv4.String(), Port: 4160}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %+v, want one found and one unreachable", rs)
	}
	found, bad := rs[0], rs[1]
	if found.Host != l1.IPv4.String() {
		found, bad = bad, found
	}
	if !slices.Equal(found.Versions, []int{1}) || found.Error != "" || !slices.Equal(found.How, []string{ViaLocator}) || found.ServiceID != (discovery.ServiceID{1}).String() {
		t.Errorf("v1-only lookup service by locator: %+v", found)
	}
	if bad.Error == "" || bad.Host != le.IPv4.String() {
		t.Errorf("unreachable locator: %+v, want an error", bad)
	}
}

// A locator that takes the request and never answers (an HTTP server: a
// jinid's API port) is a row saying so, not left out at the round's end
// (discover printed an empty table for it).
func TestLocatorThatSaysNothing(t *testing.T) {
	addr := testenv.Serve(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // reads, says nothing
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	l := discovery.Locator{Host: "127.0.0.1", Port: p}
	rs, err := Find(t.Context(), Config{Locators: []discovery.Locator{l}, NoMulticast: true, Timeout: time.Second})
	if err != nil || len(rs) != 1 || !strings.Contains(rs[0].Error, "no answer within") {
		t.Fatalf("results %+v (%v), want one saying no answer came", rs, err)
	}
}

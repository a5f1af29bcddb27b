package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// jinid discover, run in one namespace, finds a lookup service answering
// in protocol version 1 and one in version 2 in others, with their groups
// and the interface they were seen on; one outside the groups asked for is
// not listed.
func TestDiscoverOnALAN(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	client := lab.Host("client")
	client.Attach(lan1)
	client.Attach(lan2)
	h1, h2, h3 := lab.Host("lus1"), lab.Host("lus2"), lab.Host("lus3")
	l1, l2 := h1.Attach(lan1), h2.Attach(lan2)
	h3.Attach(lan1)
	// lus2 stands in for a Java lookup service: it hands out River's proxy.
	javaProxy := javaRegistrar(t)
	for _, c := range []discoverytest.LookupServiceConfig{
		{Version: 1, ServiceID: discovery.ServiceID{1}, Groups: []string{"lab"}, Namespace: h1.Namespace()},
		{Version: 2, ServiceID: discovery.ServiceID{2}, Groups: []string{"lab", "ops"}, Namespace: h2.Namespace(), Registrar: javaProxy},
		{Version: 2, ServiceID: discovery.ServiceID{3}, Groups: []string{"other"}, Namespace: h3.Namespace()},
	} {
		c.Announce = 500 * time.Millisecond
		l, err := discoverytest.StartLookupService(c)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}

	all := discoverIn(t, bin, client, "--groups", "lab", "--timeout", "2s")
	rs := ofFamily(all, 4)
	if len(rs) != 2 {
		t.Fatalf("found %d lookup services over IPv4, want 2: %+v", len(rs), all)
	}
	v1, v2 := rs[0], rs[1] // in ServiceID order
	if len(ofFamily(all, 6)) != 2 {
		t.Errorf("want both found over IPv6 too, on a line each: %+v", all)
	}
	if v1.Host != l1.IPv4.String() || v1.Port != 4160 || !slices.Equal(v1.Groups, []string{"lab"}) || v1.Interface != "eth0" ||
		v1.Kind != "jinid" || v1.ServiceID != (discovery.ServiceID{1}).String() {
		t.Errorf("v1 lookup service: %+v", v1)
	}
	if !slices.Equal(v1.Versions, []int{1}) {
		t.Errorf("v1 lookup service spoke versions %v", v1.Versions)
	}
	if !slices.Equal(v2.Versions, []int{2}) || v2.Host != l2.IPv4.String() || v2.Port != 4160 || !slices.Equal(v2.Groups, []string{"lab", "ops"}) ||
		v2.Interface != "eth1" || v2.Kind != "java" || v2.ProxySize != len(javaProxy.Marshalled) {
		t.Errorf("v2 (Java) lookup service: %+v", v2)
	}

	// The text form, for people.
	text, err := client.Command(t.Context(), bin, "discover", "--groups", "lab", "--timeout", "2s").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SERVICE ID", l1.IPv4.String() + ":4160", "jinid http://lookup.invalid:4162", "java (proxy"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

// javaRegistrar is the registrar proxy from the Java implementation's v2
// unicast response vector.
func javaRegistrar(t *testing.T) discovery.Registrar {
	resp, err := unicast.ReadResponse(bytes.NewReader(vectors.Named("v2.unicast.response").Bytes()), unicast.DefaultMaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Registrar
}

// jinid inspect --iface captures live in a namespace, prints what it
// decodes, and --write saves a capture that --pcap reads back the same.
func TestInspectLive(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	sniffer, lh := lab.Host("sniffer"), lab.Host("lus")
	sniffer.Attach(lan)
	ll := lh.Attach(lan)
	l, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: 1, ServiceID: discovery.ServiceID{4}, Groups: []string{"lab"},
		Namespace: lh.Namespace(), Announce: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	saved := filepath.Join(t.TempDir(), "live.pcap")
	out, err := sniffer.Command(t.Context(), bin, "inspect", "--iface", "eth0", "--duration", "1500ms", "--write", saved).Output()
	if err != nil {
		t.Fatalf("inspect --iface: %v", err)
	}
	want := "multicast-announcement v1 lookup=" + ll.IPv4.String() + ":4160 id=04000000-0000-0000-0000-000000000000 groups=[\"lab\"]"
	if !strings.Contains(string(out), want) {
		t.Fatalf("live output lacks %q:\n%s", want, out)
	}
	back, err := exec.Command(bin, "inspect", "--pcap", saved).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back), want) {
		t.Fatalf("saved capture decodes to:\n%s", back)
	}
}

// One-shot commands keep the standard error for what matters: discover
// and browse on a LAN print no INFO line (the interfaces they serve, as
// the daemon logs them) unless --log-level asks; warnings still show.
func TestOneShotCommandsQuiet(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	client := lab.Host("client")
	client.Attach(lan)
	for _, args := range [][]string{
		{"discover", "--timeout", "500ms"},
		{"browse", "--timeout", "500ms"},
	} {
		var stderr bytes.Buffer
		cmd := client.Command(t.Context(), bin, args...)
		cmd.Stderr = &stderr
		cmd.Run() // nothing found: exit 1
		if strings.Contains(stderr.String(), "level=INFO") {
			t.Errorf("jinid %s printed INFO lines:\n%s", args[0], &stderr)
		}
		stderr.Reset()
		cmd = client.Command(t.Context(), bin, append(args, "--log-level", "info")...)
		cmd.Stderr = &stderr
		cmd.Run()
		if !strings.Contains(stderr.String(), "level=INFO") {
			t.Errorf("jinid %s --log-level info printed no INFO line:\n%s", args[0], &stderr)
		}
	}
}

// The daemon's start says each thing once: its interface table and the
// groups joined were logged twice (the mDNS port's transport said them
// again), and the start line names the public group.
func TestStartLogsEachFactOnce(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw := lab.Host("gw")
	gw.Attach(lan)
	d := jinidtest.LabDaemon(t, bin, gw)
	log := d.Log()
	for _, line := range []string{"msg=interface name=eth0 ", `msg="joined discovery groups" interface=eth0 family=4`} {
		if n := strings.Count(log, line); n != 1 {
			t.Errorf("%q logged %d times at start, want once:\n%s", line, n, log)
		}
	}
	if !strings.Contains(log, "groups=(public)") {
		t.Errorf("the start line does not name the public group:\n%s", log)
	}
}

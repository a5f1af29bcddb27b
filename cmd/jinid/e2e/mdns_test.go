package e2e

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/miekg/dns"

	"github.com/jinid/jinid/announce/dnssd"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// mdnsObserver listens to mDNS (IPv4) in lab host h until the test ends,
// handing on every datagram; its port sends too.
func mdnsObserver(t *testing.T, h *netlab.Host, onPacket func(mcast.Packet)) *mcast.Port {
	t.Helper()
	obs, err := mcast.NewNetlinkHost(mcast.HostConfig{Namespace: h.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { obs.Shutdown(context.Background()) })
	if err := obs.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, err := obs.Open(mcast.PortConfig{Port: 5353, Groups: []netip.Addr{dnssd.MDNSGroupV4}, TTL: 255, OnPacket: onPacket})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mdnsSeen is what an observer on the LAN heard of a jinid's names.
type mdnsSeen struct {
	mu    sync.Mutex
	order []string // "probe NAME", "announce NAME", "goodbye NAME"
}

func (s *mdnsSeen) add(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = append(s.order, what)
}

func (s *mdnsSeen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// The daemon claims its DNS-SD names as RFC 6762 asks: three probes
// before its first announcement, two announcements, a new name when
// another host answers for its own, and a goodbye (TTL 0) when it stops.
func TestMDNSClaimsItsNames(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	gw, obsHost := lab.Host("gw"), lab.Host("obs")
	gw.Attach(lan)
	obsHost.Attach(lan)
	var seen mdnsSeen
	var port atomic.Pointer[mcast.Port]
	// Another host on the LAN that holds the name jinid picks first: it
	// answers every probe for it with records of its own.
	p := mdnsObserver(t, obsHost, func(p mcast.Packet) {
		var m dns.Msg
		if m.Unpack(p.Data) != nil {
			return
		}
		switch {
		case !m.Response && len(m.Ns) > 0:
			name := m.Question[0].Name
			seen.add("probe " + name)
			if port := port.Load(); port != nil && !strings.Contains(name, "-2.") {
				r := new(dns.Msg)
				r.Response, r.Authoritative = true, true
				r.Answer = []dns.RR{&dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET | 1<<15, Ttl: 120},
					Port: 9, Target: "someone-else.local."}}
				b, _ := r.Pack()
				port.SendTo(func(f int) netip.Addr {
					if f == 4 {
						return dnssd.MDNSGroupV4
					}
					return netip.Addr{}
				}, func(mcast.Joined) ([][]byte, error) { return [][]byte{b}, nil })
			}
		case m.Response:
			for _, rr := range m.Answer {
				if srv, ok := rr.(*dns.SRV); ok && srv.Target != "someone-else.local." {
					what := "announce "
					if srv.Hdr.Ttl == 0 {
						what = "goodbye "
					}
					seen.add(what + srv.Hdr.Name)
				}
			}
		}
	})
	port.Store(p)
	d := jinidtest.LabDaemon(t, bin, gw)
	var renamed string
	testenv.Until(t, "two announcements under a new name, after its probes", func() bool {
		n := 0
		for _, s := range seen.list() {
			if name, ok := strings.CutPrefix(s, "announce "); ok && strings.Contains(name, "-2.") {
				renamed, n = name, n+1
			}
		}
		return n >= 2
	})
	order := seen.list()
	// Before the first announcement: the first name probed (and lost),
	// then three probes of the new one; never an announcement of the
	// name another host holds.
	probes := 0
	for _, s := range order {
		if strings.HasPrefix(s, "announce ") {
			break
		}
		if s == "probe "+renamed {
			probes++
		}
	}
	if probes != 3 {
		t.Errorf("%d probes of %s before its first announcement, want 3: %q", probes, renamed, order)
	}
	for _, s := range order {
		if strings.HasPrefix(s, "announce ") && !strings.Contains(s, "-2.") {
			t.Errorf("announced a name another host holds: %q", order)
		}
	}
	d.Cmd.Process.Signal(syscall.SIGTERM)
	testenv.Until(t, "a goodbye when it stops", func() bool {
		for _, s := range seen.list() {
			if s == "goodbye "+renamed {
				return true
			}
		}
		return false
	})
}

// An interface the daemon stops serving (here: a reload that excludes
// it) hears the goodbye of its DNS-SD records, sent from its socket
// before it closes: peers there forget them at once.
func TestMDNSGoodbyeWhenAnInterfaceIsLeft(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	gw, obsHost := lab.Host("gw"), lab.Host("obs")
	gw.Attach(lan1)
	gw.Attach(lan2)
	obsHost.Attach(lan2)
	var seen mdnsSeen
	mdnsObserver(t, obsHost, func(p mcast.Packet) {
		var m dns.Msg
		if m.Unpack(p.Data) != nil || !m.Response {
			return
		}
		for _, rr := range m.Answer {
			if srv, ok := rr.(*dns.SRV); ok {
				seen.add(map[bool]string{true: "goodbye ", false: "announce "}[srv.Hdr.Ttl == 0] + srv.Hdr.Name)
			}
		}
	})
	cfg := filepath.Join(t.TempDir(), "jinid.json")
	os.WriteFile(cfg, []byte(`{"interfaces": ["eth0", "eth1"]}`), 0o644)
	d := jinidtest.LabDaemon(t, bin, gw, "--config", cfg, "--log-level", "debug")
	has := func(prefix string) func() bool {
		return func() bool {
			return slices.ContainsFunc(seen.list(), func(s string) bool { return strings.HasPrefix(s, prefix) })
		}
	}
	testenv.Until(t, "the announcement on the second LAN", has("announce "))
	os.WriteFile(cfg, []byte(`{"interfaces": ["eth0"]}`), 0o644)
	d.Process.Signal(syscall.SIGHUP)
	defer func() {
		if t.Failed() {
			t.Logf("seen: %q\n%s", seen.list(), d.Log())
		}
	}()
	testenv.Until(t, "a goodbye on the LAN the daemon no longer serves", has("goodbye "))
}

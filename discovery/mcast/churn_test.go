package mcast

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// Interfaces come and go under a running transport, a hundred times: a
// VLAN sub-interface added and removed, an address moved from one
// interface to another and back, a bridge's only port leaving and
// rejoining. Each time what is served follows within a second, and
// afterwards the transport holds no more sockets or goroutines than
// before. (Not parallel: the counts are the process's.)
func TestInterfaceChurn(t *testing.T) {
	lab := netlab.New(t)
	lan := lab.LAN()
	h, peer := lab.Host("h"), lab.Host("peer")
	hl := h.Attach(lan)
	peer.Attach(lan)
	sh := func(script string) {
		t.Helper()
		if out, err := h.Command(t.Context(), "sh", "-ec", script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", script, err, out)
		}
	}
	// lan5 and lan6: a veth pair inside h (both ends served), for moving
	// an address between; br-lan with the port lan7 (whose other end,
	// lan7p, stays up), for a port leaving its bridge.
	sh(`ip link add lan5 type veth peer name lan6
ip link set lan5 up; ip link set lan6 up
ip addr add 198.18.50.1/24 dev lan5
ip link add br-lan type bridge; ip link set br-lan up
ip link add lan7 type veth peer name lan7p
ip link set lan7 master br-lan; ip link set lan7 up; ip link set lan7p up
ip addr add 198.18.70.1/24 dev br-lan`)
	n := startNode(t, h, func(c *transportConfig) { c.NoIPv6 = true; c.Include = []string{"eth0*", "lan5", "lan6", "br-lan"} })

	// has reports whether the transport serves IPv4 on name, at addr
	// when addr is valid.
	has := func(name string, addr netip.Addr) bool {
		return slices.ContainsFunc(n.tr.Joined(), func(j Joined) bool {
			return j.Name == name && j.Family == 4 && (!addr.IsValid() || j.Addr == addr)
		})
	}
	var joins []time.Duration // how long each join took
	slowest := map[string]time.Duration{}
	// until waits for what is served to become what want says, and
	// records how long that took.
	until := func(what string, want func() bool) {
		t.Helper()
		start := time.Now()
		testenv.Until(t, what, want)
		if !strings.Contains(what, "left") {
			joins = append(joins, time.Since(start))
		}
		slowest[what] = max(slowest[what], time.Since(start))
	}
	until("everything served at start", func() bool {
		return has("eth0", hl.IPv4) && has("lan5", netip.Addr{}) && has("br-lan", netip.Addr{})
	})
	a50 := netip.MustParseAddr("198.18.50.1")

	// An 802.1Q VLAN where the kernel has them; where it has not (some
	// VM kernels lack the 8021q module), a macvlan sub-interface of eth0
	// of the same name stands in: to the transport both are a new
	// interface on top of eth0.
	subType := "vlan id 10"
	if out, err := h.Command(t.Context(), "ip", "link", "add", "link", "eth0", "name", "eth0.9", "type", "vlan", "id", "9").CombinedOutput(); err != nil {
		t.Logf("no 802.1Q VLANs in this kernel (%s): a macvlan sub-interface stands in for eth0.10", strings.TrimSpace(string(out)))
		subType = "macvlan"
	} else {
		sh(`ip link del eth0.9`)
	}

	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	const cycles = 100
	for i := range cycles {
		switch {
		case i%10 == 9: // the bridge's only port leaves, and comes back
			sh(`ip link set lan7 nomaster`)
			// The kernel tells of a lost carrier up to a second late
			// (linkwatch): a leave, not a join, so not timed.
			until("br-lan left without a port", func() bool { return !has("br-lan", netip.Addr{}) })
			sh(`ip link set lan7 master br-lan`)
			until("br-lan joined with its port back", func() bool { return has("br-lan", netip.Addr{}) })
		case i%2 == 0: // a VLAN comes and goes
			sh(`ip link add link eth0 name eth0.10 type ` + subType + `
ip addr add 198.18.10.1/24 dev eth0.10
ip link set eth0.10 up`)
			until("VLAN eth0.10 joined", func() bool { return has("eth0.10", netip.MustParseAddr("198.18.10.1")) })
			sh(`ip link del eth0.10`)
			until("VLAN eth0.10 left", func() bool { return !has("eth0.10", netip.Addr{}) })
		default: // an address moves to the other interface and back
			sh(`ip addr del 198.18.50.1/24 dev lan5; ip addr add 198.18.50.1/24 dev lan6`)
			until("address moved to lan6", func() bool { return has("lan6", a50) && !has("lan5", netip.Addr{}) })
			sh(`ip addr del 198.18.50.1/24 dev lan6; ip addr add 198.18.50.1/24 dev lan5`)
			until("address moved back to lan5", func() bool { return has("lan5", a50) && !has("lan6", netip.Addr{}) })
		}
	}
	// The last changes' sockets are closed by now; their goroutines end
	// as their reads return.
	testenv.Until(t, fmt.Sprintf("file descriptors and goroutines back to %d and %d after %d cycles", fds, goroutines, cycles), func() bool {
		return openFDs(t) <= fds && runtime.NumGoroutine() <= goroutines
	})
	slices.Sort(joins)
	t.Logf("%d joins followed: median %v, 99th percentile %v, slowest %v; file descriptors %d before and %d after, goroutines %d and %d",
		len(joins), joins[len(joins)/2], joins[len(joins)*99/100], joins[len(joins)-1], fds, openFDs(t), goroutines, runtime.NumGoroutine())
	t.Logf("slowest by kind: %v", slowest) // reported, not asserted: a loaded machine takes longer
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

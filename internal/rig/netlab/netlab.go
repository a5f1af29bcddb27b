// Package netlab builds virtual LANs from Linux network namespaces for
// tests: hosts are namespaces, LANs are bridges, and each host's link into
// a LAN is a veth pair. Real multicast flows between the hosts, and nothing
// leaves the lab: the lab's addresses (198.18.0.0/15 and 2001:db8::/32,
// both reserved for testing) exist only inside its namespaces.
//
// A lab cleans up after itself when the test ends, failed or not, and
// removes what crashed earlier runs left behind. Without CAP_NET_ADMIN the
// test is skipped with one line.
package netlab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/jinid/jinid/internal/namespace"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// namePrefix marks every namespace netlab creates, followed by the owning
// process's PID so stale ones can be recognised.
const namePrefix = "jinidlab"

// Lab is one set of virtual LANs and hosts.
type Lab struct {
	t      testing.TB
	id     string
	bridge string // the namespace holding every LAN's bridge

	mu    sync.Mutex
	lans  int
	ports int
	hosts []*Host
}

// LAN is one broadcast domain: a bridge with IGMP snooping off, so
// multicast floods to every port as on a plain switch.
type LAN struct {
	lab    *Lab
	num    int
	bridge string
	hosts  int
}

// Host is a network namespace with links into LANs.
type Host struct {
	Name  string
	lab   *Lab
	ns    string
	h     netns.NsHandle
	links []*Link
}

// Link is a host's veth into a LAN.
type Link struct {
	Host  *Host
	LAN   *LAN
	Name  string // interface name inside the host: eth0, eth1, ...
	IPv4  netip.Addr
	IPv6  netip.Addr
	peer  string // the bridge-side end
	alive bool
}

// Privileged reports whether this process may build network namespaces,
// and why not.
func Privileged() (bool, string) {
	if _, err := exec.LookPath("ip"); err != nil {
		return false, "the ip command (iproute2) is not installed"
	}
	capEff, err := effectiveCaps()
	if err != nil {
		return false, err.Error()
	}
	const capNetAdmin, capSysAdmin = 12, 21
	if capEff&(1<<capNetAdmin) == 0 || capEff&(1<<capSysAdmin) == 0 {
		return false, "building network namespaces needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run the tests as root)"
	}
	return true, ""
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}

// New returns an empty lab, or skips the test when the process lacks the
// privilege to build one.
func New(t testing.TB) *Lab {
	t.Helper()
	if ok, why := Privileged(); !ok {
		testenv.Missing(t, "netlab: "+why)
	}
	removeStale(t)
	l := &Lab{t: t, id: fmt.Sprintf("%s%d-%s", namePrefix, os.Getpid(), shortID(t))}
	l.bridge = l.id + "-br"
	l.ip("netns", "add", l.bridge)
	t.Cleanup(l.close)
	l.nsShell(l.bridge, "echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad")
	return l
}

var labSeq struct {
	sync.Mutex
	n int
}

// shortID keeps names unique across labs of one process.
func shortID(t testing.TB) string {
	labSeq.Lock()
	defer labSeq.Unlock()
	labSeq.n++
	return strconv.Itoa(labSeq.n)
}

// removeStale deletes namespaces left by netlab processes that are gone.
func removeStale(t testing.TB) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, namePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its owner still runs
		}
		killIn(t, name)
		if err := exec.Command("ip", "netns", "del", name).Run(); err == nil {
			t.Logf("netlab: removed stale namespace %s", name)
		}
	}
}

// killIn kills every process still running in namespace ns: deleting a
// namespace does not end them, and a test's process must not outlive its
// lab (the tests' own cleanups stop theirs first; this is the backstop).
func killIn(t testing.TB, ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				t.Logf("netlab: killed process %d left running in %s", pid, ns)
			}
		}
	}
}

func (l *Lab) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.hosts {
		killIn(l.t, h.ns)
		h.h.Close()
		_ = exec.Command("ip", "netns", "del", h.ns).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", h.ns))
	}
	_ = exec.Command("ip", "netns", "del", l.bridge).Run()
}

// ip runs an ip command and fails the test if it fails.
func (l *Lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("netlab: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

func (l *Lab) nsShell(ns, script string) {
	l.t.Helper()
	if out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", script).CombinedOutput(); err != nil {
		l.t.Fatalf("netlab: in %s: %s: %v: %s", ns, script, err, out)
	}
}

// LAN adds a LAN. LAN n gets 198.18.n.0/24 and 2001:db8:n::/64.
func (l *Lab) LAN() *LAN {
	l.mu.Lock()
	l.lans++
	n := l.lans
	l.mu.Unlock()
	lan := &LAN{lab: l, num: n, bridge: fmt.Sprintf("br%d", n)}
	l.ip("-n", l.bridge, "link", "add", lan.bridge, "type", "bridge", "mcast_snooping", "0")
	l.ip("-n", l.bridge, "link", "set", lan.bridge, "up")
	return lan
}

// Hub makes the LAN's bridge forget every address it learns at once, so
// that it floods every frame to every port, as a hub (or a switch's
// mirror port) does: a host sees the unicast frames between others.
func (lan *LAN) Hub() {
	lan.lab.t.Helper()
	lan.lab.ip("-n", lan.lab.bridge, "link", "set", lan.bridge, "type", "bridge", "ageing_time", "0")
}

// Host adds a host with only its loopback up.
func (l *Lab) Host(name string) *Host {
	l.t.Helper()
	h := &Host{Name: name, lab: l, ns: l.id + "-" + name}
	l.ip("netns", "add", h.ns)
	handle, err := netns.GetFromName(h.ns)
	if err != nil {
		l.t.Fatalf("netlab: opening namespace %s: %v", h.ns, err)
	}
	h.h = handle
	l.mu.Lock()
	l.hosts = append(l.hosts, h)
	l.mu.Unlock()
	l.ip("-n", h.ns, "link", "set", "lo", "up")
	// Addresses usable at once (no duplicate address detection), and a
	// secondary IPv4 address promoted when the primary goes, as most
	// distributions set it.
	l.nsShell(h.ns, "for f in all default; do echo 0 > /proc/sys/net/ipv6/conf/$f/accept_dad; echo 1 > /proc/sys/net/ipv4/conf/$f/promote_secondaries; done")
	return h
}

// Attach links h into lan as the next ethN, with an IPv4 and an IPv6
// address, up.
func (h *Host) Attach(lan *LAN) *Link {
	h.lab.t.Helper()
	return h.attach(lan, true)
}

// AttachLinkLocal links h into lan as the next ethN with no address but
// the IPv6 link-local one the kernel gives it: a LAN with IPv6 only and
// neither a router nor DHCP. IPv4 is left the zero (invalid) address;
// IPv6 is the link-local address, without a zone.
func (h *Host) AttachLinkLocal(lan *LAN) *Link {
	h.lab.t.Helper()
	link := h.attach(lan, false)
	link.IPv6 = link.waitLinkLocal()
	return link
}

// attach makes the veth into lan, with the lab's addresses if addressed,
// and waits for its carrier.
func (h *Host) attach(lan *LAN, addressed bool) *Link {
	l := h.lab
	l.t.Helper()
	l.mu.Lock()
	l.ports++
	peer := fmt.Sprintf("p%d", l.ports)
	lan.hosts++
	hostNum := lan.hosts
	l.mu.Unlock()
	link := &Link{Host: h, LAN: lan, peer: peer, alive: true, Name: fmt.Sprintf("eth%d", len(h.links))}
	l.ip("link", "add", link.Name, "netns", h.ns, "type", "veth", "peer", "name", peer, "netns", l.bridge)
	l.ip("-n", l.bridge, "link", "set", peer, "master", lan.bridge, "up")
	if addressed {
		link.IPv4 = netip.AddrFrom4([4]byte{198, 18, byte(lan.num), byte(hostNum)})
		link.IPv6 = netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::%x", lan.num, hostNum))
		l.ip("-n", h.ns, "addr", "add", link.IPv4.String()+"/24", "dev", link.Name)
		l.ip("-n", h.ns, "addr", "add", link.IPv6.String()+"/64", "dev", link.Name, "nodad")
	}
	l.ip("-n", h.ns, "link", "set", link.Name, "up")
	h.links = append(h.links, link)
	link.waitOperUp()
	return link
}

// waitLinkLocal returns the link's IPv6 link-local address once the
// kernel has given it one.
func (k *Link) waitLinkLocal() netip.Addr {
	l := k.Host.lab
	l.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var found netip.Addr
		err := k.Host.Namespace().Do(func() error {
			ifi, err := net.InterfaceByName(k.Name)
			if err != nil {
				return err
			}
			addrs, err := ifi.Addrs()
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
					found = p.Addr()
				}
			}
			return err
		})
		if found.IsValid() {
			return found
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("netlab: %s in %s has no IPv6 link-local address after 5 s (%v)", k.Name, k.Host.Name, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitOperUp returns once the link has carrier, as a plugged-in cable
// would: a veth's comes a moment after it is set up.
func (k *Link) waitOperUp() {
	l := k.Host.lab
	l.t.Helper()
	nl, err := netlink.NewHandleAt(k.Host.h)
	if err != nil {
		l.t.Fatalf("netlab: %v", err)
	}
	defer nl.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		link, err := nl.LinkByName(k.Name)
		if err == nil && link.Attrs().OperState == netlink.OperUp {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("netlab: %s in %s has no carrier after 5 s (%v)", k.Name, k.Host.Name, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Delete removes the link while the test runs, as unplugging a cable and
// removing the device would.
func (k *Link) Delete() {
	k.Host.lab.ip("-n", k.Host.ns, "link", "del", k.Name)
	k.alive = false
}

// Down sets the link down without deleting it.
func (k *Link) Down() { k.Host.lab.ip("-n", k.Host.ns, "link", "set", k.Name, "down") }

// Up sets the link up and waits for its carrier.
func (k *Link) Up() {
	k.Host.lab.ip("-n", k.Host.ns, "link", "set", k.Name, "up")
	k.waitOperUp()
}

// Forward has h route packets between its links (IPv4 and IPv6), as a
// gateway between segments does.
func (h *Host) Forward() {
	h.lab.t.Helper()
	h.lab.nsShell(h.ns, "echo 1 > /proc/sys/net/ipv4/ip_forward; echo 1 > /proc/sys/net/ipv6/conf/all/forwarding")
}

// Route has h send packets for p through the router via.
func (h *Host) Route(p netip.Prefix, via netip.Addr) {
	h.lab.t.Helper()
	h.lab.ip("-n", h.ns, "route", "add", p.String(), "via", via.String())
}

// Subnets are the IPv4 and IPv6 prefixes of lan's addresses.
func (lan *LAN) Subnets() (v4, v6 netip.Prefix) {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(lan.num), 0}), 24),
		netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x::/64", lan.num))
}

// CutOff has h lose every packet it sends to a, silently, as a firewall
// that drops them does: a route to a through a neighbour on k's LAN
// that does not exist, so nothing is refused and connections hang.
// Only the route is added; the link and everything else go on.
func (h *Host) CutOff(k *Link, a netip.Addr) {
	h.lab.t.Helper()
	nowhere := netip.AddrFrom4([4]byte{198, 18, byte(k.LAN.num), 254})
	h.lab.ip("-n", h.ns, "route", "add", a.String()+"/32", "via", nowhere.String(), "dev", k.Name)
}

// Heal undoes CutOff: h reaches a again.
func (h *Host) Heal(a netip.Addr) {
	h.lab.t.Helper()
	h.lab.ip("-n", h.ns, "route", "del", a.String()+"/32")
}

// Links returns the host's links in the order they were attached.
func (h *Host) Links() []*Link { return h.links }

// Namespace is the host's network namespace, for code that opens sockets
// in it from this process.
func (h *Host) Namespace() namespace.Namespace { return namespace.FromHandle(h.ns, h.h) }

// NetnsName is the name `ip netns` knows the host by.
func (h *Host) NetnsName() string { return h.ns }

// Command returns a command that runs inside the host.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// ReplaceIPv4 gives the link a new IPv4 address in place of its current
// one, as a DHCP renewal with a new lease would.
func (k *Link) ReplaceIPv4(a netip.Addr) {
	l := k.Host.lab
	l.ip("-n", k.Host.ns, "addr", "add", a.String()+"/24", "dev", k.Name)
	l.ip("-n", k.Host.ns, "addr", "del", k.IPv4.String()+"/24", "dev", k.Name)
	k.IPv4 = a
}

// IfIndex returns the index of the host's interface name.
func (h *Host) IfIndex(name string) int {
	h.lab.t.Helper()
	var idx int
	err := h.Namespace().Do(func() error {
		ifi, err := net.InterfaceByName(name)
		if err == nil {
			idx = ifi.Index
		}
		return err
	})
	if err != nil {
		h.lab.t.Fatalf("netlab: %s in %s: %v", name, h.Name, err)
	}
	return idx
}

// SetResolver makes programs run with Command resolve names through the
// DNS server at addr: ip netns exec mounts /etc/netns/NAME/resolv.conf
// over /etc/resolv.conf. Removed with the lab.
func (h *Host) SetResolver(addr netip.Addr) {
	dir := filepath.Join("/etc/netns", h.ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.lab.t.Fatalf("netlab: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver "+addr.String()+"\n"), 0o644); err != nil {
		h.lab.t.Fatalf("netlab: %v", err)
	}
}

// SetHosts gives programs run with Command a hosts file of their own:
// localhost, and each name with its address (a resolver in miniature,
// for names that must resolve to a given address). Removed with the lab.
func (h *Host) SetHosts(names map[string]netip.Addr) {
	dir := filepath.Join("/etc/netns", h.ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.lab.t.Fatalf("netlab: %v", err)
	}
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for name, a := range names {
		fmt.Fprintf(&b, "%s %s\n", a, name)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
		h.lab.t.Fatalf("netlab: %v", err)
	}
}

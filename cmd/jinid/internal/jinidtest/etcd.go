package jinidtest

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/netlab"
)

// StoreEnv, set to "etcd", has every daemon the rig starts keep its
// store in etcd: a one-member cluster of etcd's embeddable server run
// beside it, in its namespace, one per data directory (a daemon started
// again on the same directory finds its store again). The conformance
// suites run again so (cmd/jinid/conformance, TestSuitesOnEtcd).
const StoreEnv = "JINID_TEST_STORE"

// etcds are the clusters started, by data directory: the daemon's
// flags for each.
var etcds struct {
	sync.Mutex
	endpoint map[string][]string
}

// storeArgs are the flags that put a daemon's store where StoreEnv says:
// none for the embedded store.
func storeArgs(t testing.TB, h *netlab.Host, dir string) []string {
	t.Helper()
	if os.Getenv(StoreEnv) != "etcd" {
		return nil
	}
	etcds.Lock()
	defer etcds.Unlock()
	if etcds.endpoint == nil {
		etcds.endpoint = map[string][]string{}
	}
	flags, ok := etcds.endpoint[dir]
	if !ok {
		ep, tls := startEtcdServer(t, h, dir+"-etcd")
		flags = append([]string{"--store", "etcd", "--etcd-endpoints", ep, "--etcd-prefix", "/jinid"}, tls.Flags()...)
		etcds.endpoint[dir] = flags
		t.Cleanup(func() {
			etcds.Lock()
			delete(etcds.endpoint, dir)
			etcds.Unlock()
		})
	}
	return flags
}

// startEtcdServer runs the etcdserver helper in h (this process's
// namespace when nil), its data in dir, until the test ends: TLS with
// client certificates, as docs/cluster.md deploys it.
func startEtcdServer(t testing.TB, h *netlab.Host, dir string) (string, *EtcdTLS) {
	t.Helper()
	client, peer := "127.0.0.1:2379", "127.0.0.1:2380"
	if h == nil {
		client, peer = FreeAddr(t), FreeAddr(t)
	}
	ca := NewCA(t, "etcd")
	cert, key := ca.Issue(t, "etcd-server")
	ccert, ckey := ca.Issue(t, "jinid")
	ep, _ := runEtcdServer(t, h, []string{"-dir", dir, "-client", client, "-peer", peer, "-cert", cert, "-key", key, "-ca", ca.File})
	return ep, &EtcdTLS{CA: ca.File, Cert: ccert, Key: ckey}
}

// EtcdMember is one member of a cluster EtcdCluster started.
type EtcdMember struct {
	Endpoint string
	// TLS is how a client reaches it (nil: plain http).
	TLS   *EtcdTLS
	cmd   *exec.Cmd
	start func() (*exec.Cmd, error) // again, on its data
}

// EtcdFlags are jinid's flags for the cluster of members: its
// endpoints, and TLS.
func EtcdFlags(members []*EtcdMember) []string {
	var eps []string
	for _, m := range members {
		eps = append(eps, m.Endpoint)
	}
	return append([]string{"--etcd-endpoints", strings.Join(eps, ",")}, members[0].TLS.Flags()...)
}

// Kill stops the member at once (SIGKILL), as a box that dies.
func (m *EtcdMember) Kill() { m.cmd.Process.Kill(); m.cmd.Wait() }

// Restart starts a member killed again, on its data (its WAL and
// snapshot: it rejoins as the member it was), and returns once it
// serves (with a quorum).
func (m *EtcdMember) Restart(t testing.TB) {
	t.Helper()
	cmd, err := m.start()
	if cmd != nil {
		m.cmd = cmd // stopped with the others when the test ends
	}
	if err != nil {
		t.Fatalf("restarting etcd member %s: %v", m.Endpoint, err)
	}
}

// EtcdCluster runs an etcd cluster of n members on loopback, each the
// etcdserver helper in a process of its own, until the test ends; its
// clients authenticate by certificate (EtcdMember.TLS).
func EtcdCluster(t testing.TB, n int) []*EtcdMember {
	t.Helper()
	sites := make([]etcdSite, n)
	for i := range sites {
		sites[i] = etcdSite{client: FreeAddr(t), peer: FreeAddr(t)}
	}
	return etcdCluster(t, sites, true)
}

// EtcdClusterOn runs an etcd cluster of one member in each lab host,
// serving clients on ips[i]:2379 (peers on :2380), until the test ends;
// args go to each member (-max-txn-ops N). Its clients authenticate by
// certificate (EtcdMember.TLS), as docs/cluster.md deploys it.
func EtcdClusterOn(t testing.TB, hosts []*netlab.Host, ips []netip.Addr, args ...string) []*EtcdMember {
	t.Helper()
	return etcdCluster(t, labSites(hosts, ips, args), true)
}

// EtcdClusterOnInsecure is EtcdClusterOn over plain http, with no
// authentication: a site that runs etcd so (--etcd-insecure).
func EtcdClusterOnInsecure(t testing.TB, hosts []*netlab.Host, ips []netip.Addr, args ...string) []*EtcdMember {
	t.Helper()
	return etcdCluster(t, labSites(hosts, ips, args), false)
}

func labSites(hosts []*netlab.Host, ips []netip.Addr, args []string) []etcdSite {
	sites := make([]etcdSite, len(hosts))
	for i, h := range hosts {
		sites[i] = etcdSite{h: h, client: netip.AddrPortFrom(ips[i], 2379).String(), peer: netip.AddrPortFrom(ips[i], 2380).String(), args: args}
	}
	return sites
}

// etcdSite is where a member runs (this process's namespace when h is
// nil) and the addresses it serves.
type etcdSite struct {
	h            *netlab.Host
	client, peer string
	args         []string
}

func etcdCluster(t testing.TB, sites []etcdSite, withTLS bool) []*EtcdMember {
	t.Helper()
	bin := build(t, "github.com/jinid/jinid/internal/rig/etcdtest/etcdserver") // here, not in the goroutines
	var initial []string
	for i, s := range sites {
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, s.peer))
	}
	// Client-certificate authentication, as docs/cluster.md deploys
	// etcd: one CA, a server certificate per member, one for jinid.
	var ca *CA
	var clientTLS *EtcdTLS
	tlsArgs := make([][]string, len(sites))
	if withTLS {
		ca = NewCA(t, "etcd")
		cert, key := ca.Issue(t, "jinid")
		clientTLS = &EtcdTLS{CA: ca.File, Cert: cert, Key: key}
		for i, s := range sites {
			ap := netip.MustParseAddrPort(s.client)
			cert, key := ca.Issue(t, fmt.Sprintf("m%d", i), ap.Addr())
			tlsArgs[i] = []string{"-cert", cert, "-key", key, "-ca", ca.File}
		}
	}
	members := make([]*EtcdMember, len(sites))
	errs := make(chan error, len(sites))
	for i, s := range sites {
		args := append([]string{"-dir", t.TempDir(), "-client", s.client, "-peer", s.peer,
			"-name", fmt.Sprintf("m%d", i), "-initial-cluster", strings.Join(initial, ",")}, tlsArgs[i]...)
		args = append(args, s.args...)
		go func() {
			// The members start together: each waits for a quorum.
			ep, cmd, err := startEtcdProcess(t, s.h, args)
			members[i] = &EtcdMember{Endpoint: ep, TLS: clientTLS, cmd: cmd, start: func() (*exec.Cmd, error) {
				_, cmd, err := launchEtcdProcess(bin, s.h, args)
				return cmd, err
			}}
			errs <- err
		}()
	}
	for range sites {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A member started again (Restart) stops with the others, when the
	// test's first cleanups ran: after the daemons using it.
	t.Cleanup(func() {
		for _, m := range members {
			if m != nil && m.cmd != nil {
				m.Kill()
			}
		}
	})
	return members
}

// runEtcdServer runs the etcdserver helper with args and returns its
// client URL once it serves.
func runEtcdServer(t testing.TB, h *netlab.Host, args []string) (string, *exec.Cmd) {
	t.Helper()
	ep, cmd, err := startEtcdProcess(t, h, args)
	if err != nil {
		t.Fatal(err)
	}
	return ep, cmd
}

// startEtcdProcess starts the helper; it is stopped when the test ends.
func startEtcdProcess(t testing.TB, h *netlab.Host, args []string) (string, *exec.Cmd, error) {
	ep, cmd, err := launchEtcdProcess(build(t, "github.com/jinid/jinid/internal/rig/etcdtest/etcdserver"), h, args)
	if cmd != nil {
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	return ep, cmd, err
}

// launchEtcdProcess starts the helper (built already) and returns its
// client URL once it serves; the caller stops it.
func launchEtcdProcess(bin string, h *netlab.Host, args []string) (string, *exec.Cmd, error) {
	cmd := exec.Command(bin, args...)
	if h != nil {
		cmd = h.Command(context.Background(), bin, args...)
	}
	dieWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ready" {
				ready <- f[1]
			}
		}
		close(ready)
	}()
	select {
	case ep, ok := <-ready:
		if !ok {
			return "", cmd, fmt.Errorf("etcdserver ended before serving: %s", stderr.String())
		}
		return ep, cmd, nil
	case <-time.After(60 * time.Second):
		return "", cmd, fmt.Errorf("etcdserver did not serve within 60 s: %s", stderr.String())
	}
}

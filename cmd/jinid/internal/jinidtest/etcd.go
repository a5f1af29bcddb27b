package jinidtest

import (
	"bufio"
	"context"
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

// etcds are the clusters started, by data directory.
var etcds struct {
	sync.Mutex
	endpoint map[string]string
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
		etcds.endpoint = map[string]string{}
	}
	ep, ok := etcds.endpoint[dir]
	if !ok {
		ep = startEtcdServer(t, h, dir+"-etcd")
		etcds.endpoint[dir] = ep
		t.Cleanup(func() {
			etcds.Lock()
			delete(etcds.endpoint, dir)
			etcds.Unlock()
		})
	}
	return []string{"--store", "etcd", "--etcd-endpoints", ep, "--etcd-prefix", "/jinid"}
}

// startEtcdServer runs the etcdserver helper in h (this process's
// namespace when nil), its data in dir, until the test ends.
func startEtcdServer(t testing.TB, h *netlab.Host, dir string) string {
	t.Helper()
	bin := build(t, "github.com/jinid/jinid/internal/rig/etcdtest/etcdserver")
	client, peer := "127.0.0.1:2379", "127.0.0.1:2380"
	if h == nil {
		client, peer = FreeAddr(t), FreeAddr(t)
	}
	args := []string{"-dir", dir, "-client", client, "-peer", peer}
	cmd := exec.Command(bin, args...)
	if h != nil {
		cmd = h.Command(context.Background(), bin, args...)
	}
	dieWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
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
			t.Fatalf("etcdserver ended before serving: %s", stderr.String())
		}
		return ep
	case <-time.After(30 * time.Second):
		t.Fatalf("etcdserver did not serve within 30 s: %s", stderr.String())
	}
	return ""
}

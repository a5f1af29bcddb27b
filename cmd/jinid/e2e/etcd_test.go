package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/etcdtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// Two daemons on one store in etcd: the first holds it and serves; the
// second waits, saying for whom; the first stops and the second takes
// over with everything the first acknowledged (a registration, and its
// lease); a daemon whose etcd is gone refuses writes (503), never
// acknowledging what the cluster did not commit.
func TestStoreInEtcd(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	endpoint, stopEtcd := etcdtest.Start(t)
	flags := []string{"--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", "/jinid-test"}
	a := jinidtest.StartDaemon(t, bin, t.TempDir(), flags...)
	ca := jinidtest.Client(t, a.API)
	ctx := context.Background()
	reg, err := ca.Register(ctx, apitypes.Item{Types: []string{"org.example.Printer"}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}

	// b waits for a.
	waitLine := standby(t, bin, flags)
	waitLine("wait", regexp.MustCompile(`held by another jinid: waiting to take over`))

	a.Stop(t)
	api := waitLine("take-over", regexp.MustCompile(`jinid started.* api=(\S+)`))
	cb := jinidtest.Client(t, api)
	items, _, err := cb.Query(ctx, apitypes.Template{ServiceID: reg.ServiceID}, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("after the take-over: %v %v", items, err)
	}
	if _, _, err := cb.Renew(ctx, reg.Lease.ID, 600_000); err != nil {
		t.Fatalf("renewing the lease a granted: %v", err)
	}

	// etcd gone: not ready, and a write is refused, 503.
	stopEtcd()
	resp, err := http.Get(api + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "etcd") {
		t.Fatalf("readiness with etcd gone: %d %s", resp.StatusCode, body)
	}
	_, err = cb.Register(ctx, apitypes.Item{Types: []string{"org.example.Scanner"}}, 600_000)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("a registration with etcd gone: %v", err)
	}
}

// standby starts a daemon on a store another holds, and returns what
// waits for a line of its log (the last submatch of re).
func standby(t *testing.T, bin string, flags []string) func(what string, re *regexp.Regexp) string {
	dir := t.TempDir()
	b := exec.Command(bin, append([]string{"daemon", "--api-listen", "127.0.0.1:0", "--data-dir", dir, "--no-multicast", "--discovery-port", "0", "--cluster-listen", "127.0.0.1:0",
		"--api-socket", dir + "/api.sock", "--anonymous", "client"}, flags...)...)
	stderr, _ := b.StderrPipe()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Process.Kill(); b.Wait() })
	var mu sync.Mutex
	var log strings.Builder
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	return func(what string, re *regexp.Regexp) string {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					mu.Lock()
					defer mu.Unlock()
					t.Fatalf("the standby ended before %s:\n%s", what, log.String())
				}
				if m := re.FindStringSubmatch(l); m != nil {
					return m[len(m)-1]
				}
			case <-deadline:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("the standby: no %s:\n%s", what, log.String())
			}
		}
	}
}

// The daemon holding the store killed (SIGKILL: no release): the standby
// takes over once the hold's lease (10 s) runs out, with what the first
// acknowledged.
func TestStoreInEtcdTakeoverAfterKill(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	endpoint, _ := etcdtest.Start(t)
	flags := []string{"--store", "etcd", "--etcd-endpoints", endpoint}
	a := jinidtest.StartDaemon(t, bin, t.TempDir(), flags...)
	reg, err := jinidtest.Client(t, a.API).Register(context.Background(), apitypes.Item{Types: []string{"org.example.Printer"}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	waitLine := standby(t, bin, flags)
	waitLine("wait", regexp.MustCompile(`held by another jinid: waiting to take over`))
	a.Kill()
	killed := time.Now()
	api := waitLine("take-over", regexp.MustCompile(`jinid started.* api=(\S+)`))
	t.Logf("the standby serves %s after the holder was killed (the hold's lease: 10 s)", time.Since(killed).Round(10*time.Millisecond))
	items, _, err := jinidtest.Client(t, api).Query(context.Background(), apitypes.Template{ServiceID: reg.ServiceID}, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("after the take-over: %v %v", items, err)
	}
}

// A daemon on a cluster of three etcd members: one member killed,
// nothing acknowledged is lost (a daemon started afresh reads every
// registration back from the two left) and changes go on (two of three
// are a quorum); a second killed, changes are refused (503), not
// acknowledged, and the daemon is not ready.
func TestStoreInEtcdCluster(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	members := jinidtest.EtcdCluster(t, 3)
	flags := append([]string{"--store", "etcd"}, jinidtest.EtcdFlags(members)...)
	d := jinidtest.StartDaemon(t, bin, t.TempDir(), flags...)
	c := jinidtest.Client(t, d.API)
	ctx := context.Background()
	var acked []string
	register := func(n int) {
		t.Helper()
		for range n {
			// A 503 while the members elect a leader is an answer a
			// client tries again after (Retry-After); only what was
			// acknowledged must be there.
			testenv.Until(t, fmt.Sprintf("registration %d acknowledged", len(acked)+1), func() bool {
				r, err := c.Register(ctx, apitypes.Item{Types: []string{"org.example.Printer"}}, 600_000)
				var ae *client.Error
				if err != nil && !(errors.As(err, &ae) && ae.Status == 503) {
					t.Fatalf("after %d registrations: %v", len(acked), err)
				}
				if err == nil {
					acked = append(acked, r.ServiceID)
				}
				return err == nil
			})
		}
	}
	// there says whether every registration acknowledged is there.
	there := func(c *client.Client) error {
		items, _, err := c.Query(ctx, apitypes.Template{Types: []string{"org.example.Printer"}}, 1000)
		if err != nil {
			return err
		}
		for _, id := range acked {
			if !slices.ContainsFunc(items, func(it apitypes.Item) bool { return it.ServiceID == id }) {
				return fmt.Errorf("registration %s acknowledged, not there (%d there)", id, len(items))
			}
		}
		return nil
	}
	register(20)
	members[0].Kill()
	register(20)
	// Read back from the two members left, by a daemon started afresh.
	d.Stop(t)
	d = jinidtest.StartDaemon(t, bin, t.TempDir(), flags...)
	c = jinidtest.Client(t, d.API)
	if err := there(c); err != nil {
		t.Fatalf("after a member died, read by a daemon started afresh: %v", err)
	}
	// Without a quorum: not ready, what is there still read, a change
	// refused (503), never acknowledged; and once its hold can no longer
	// be kept, the daemon stops acting and exits (docs/cluster.md): no
	// one can tell it from a node cut off from a cluster that goes on.
	members[1].Kill()
	resp, err := http.Get(d.API + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("ready without a quorum: %d", resp.StatusCode)
	}
	if err := there(c); err != nil {
		t.Fatalf("without a quorum: %v", err)
	}
	_, err = c.Register(ctx, apitypes.Item{Types: []string{"org.example.Printer"}}, 600_000)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("a registration without a quorum: %v", err)
	}
	testenv.Until(t, "the daemon stopping once its hold cannot be kept", func() bool {
		return strings.Contains(d.Log(), "lost the hold of the store")
	})
}

// Package storetest opens the store a test or benchmark of a service
// works on: the embedded one in a directory, or, with JINID_TEST_STORE=etcd
// in the environment, one in a one-member etcd cluster on loopback (the
// same comparison docs/performance.md makes for the whole daemon).
package storetest

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/etcdtest"
	"github.com/jinid/jinid/services/store"
)

// Env names the environment variable that puts the store in etcd.
const Env = "JINID_TEST_STORE"

// clusters are the etcd members started, by directory: a store opened
// again on the same directory (a restart) finds its data again.
var clusters struct {
	sync.Mutex
	endpoint map[string]string
}

// Open opens the store for dir, closed when tb ends (unless closed
// before).
func Open(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	if os.Getenv(Env) != "etcd" {
		st, err := store.Open(dir)
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
	clusters.Lock()
	if clusters.endpoint == nil {
		clusters.endpoint = map[string]string{}
	}
	ep, ok := clusters.endpoint[dir]
	if !ok {
		ep, _ = etcdtest.Start(tb)
		clusters.endpoint[dir] = ep
		tb.Cleanup(func() {
			clusters.Lock()
			delete(clusters.endpoint, dir)
			clusters.Unlock()
		})
	}
	clusters.Unlock()
	st, err := store.OpenEtcd(tb.Context(), store.EtcdConfig{Endpoints: []string{ep}, Exclusive: true, Node: "test",
		LeaseTTL: 2 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

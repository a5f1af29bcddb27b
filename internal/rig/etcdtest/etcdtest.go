// Package etcdtest runs etcd's own embeddable server in tests: a real
// etcd cluster of one member on loopback, for the store's etcd backend
// and the daemons that keep their store in it.
package etcdtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Start runs a one-member etcd cluster until the test ends, and returns
// its client URL and a function that stops it sooner (as a cluster cut
// off or gone).
func Start(t testing.TB) (endpoint string, stop func()) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	free := func() url.URL {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return url.URL{Scheme: "http", Host: ln.Addr().String()}
	}
	client, peer := free(), free()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		t.Fatal("etcd did not start within 30 s")
	}
	var once sync.Once
	stop = func() { once.Do(e.Close) }
	t.Cleanup(stop)
	return client.String(), stop
}

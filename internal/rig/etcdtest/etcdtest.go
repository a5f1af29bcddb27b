// Package etcdtest runs etcd's own embeddable server in tests: a real
// etcd cluster of one member on loopback, for the store's etcd backend
// and the daemons that keep their store in it.
package etcdtest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Start runs a one-member etcd cluster until the test ends, and returns
// its client URL and a function that stops it sooner (as a cluster cut
// off or gone). Clients reach it through a relay that stop closes first,
// connections and all: etcd's own graceful stop would serve their open
// streams (watches, keep-alives) for seconds more.
func Start(t testing.TB) (endpoint string, stop func()) {
	t.Helper()
	free := func() url.URL {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return url.URL{Scheme: "http", Host: ln.Addr().String()}
	}
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := url.URL{Scheme: "http", Host: front.Addr().String()}
	// etcd binds the ports it is given: one free a moment ago may be
	// another test's by then (they run in parallel). Such a start is
	// tried again on others.
	var e *embed.Etcd
	var client url.URL
	for attempt := 0; ; attempt++ {
		cfg := embed.NewConfig()
		cfg.Dir = t.TempDir()
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		var peer url.URL
		client, peer = free(), free()
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{public}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.Name + "=" + peer.String()
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		// (etcd may wrap the error as text.)
		inUse := errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
		if !inUse || attempt == 4 {
			front.Close()
			t.Fatal(err)
		}
	}
	r := relay(front, client.Host)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		r.close()
		e.Close()
		t.Fatal("etcd did not start within 30 s")
	}
	var once sync.Once
	stop = func() { once.Do(func() { r.close(); e.Close() }) }
	t.Cleanup(stop)
	return public.String(), stop
}

// relayed joins each connection ln accepts to one to addr, until close.
type relayed struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func relay(ln net.Listener, addr string) *relayed {
	r := &relayed{ln: ln, conns: map[net.Conn]struct{}{}}
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			if !r.track(c, up) {
				return
			}
			for _, p := range [][2]net.Conn{{c, up}, {up, c}} {
				r.wg.Go(func() {
					io.Copy(p[0], p[1])
					p[0].Close()
					p[1].Close()
				})
			}
		}
	})
	return r
}

func (r *relayed) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

// close stops the relay: no connection is taken, those taken end.
func (r *relayed) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}

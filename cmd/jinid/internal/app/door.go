//go:build !jinid_omit_etcd

package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/cluster"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/store"
)

// door is a node's API while another node holds the store: the
// cluster's Door (a copy of the registry for the reads, the rest at
// the shard's node or the holder), served on the node's listeners.
type door struct {
	c    *clusterNode
	door *cluster.Door
	srv  *http1.Server
	// stopping ends long polls at once when the door stops.
	stopping *stopSignal
	wg       sync.WaitGroup
	names    []string // the host names the door answers to
}

// startDoor starts the door's copy and serves ln (the API listener,
// not yet TLS-wrapped) and sock (the local socket, if any) with it.
func (c *clusterNode) startDoor(ctx context.Context, ln, sock net.Listener, holder func(context.Context) store.Member) (*door, error) {
	d := c.d
	cd := cluster.NewDoor(cluster.DoorConfig{Node: c.node, Peers: c.peers, Shards: c.shards, Holder: holder, Logger: d.log,
		Lookup: lookup.Config{Logger: d.log.With("service", "lookup", "copy", true), UnicastPort: func() int { return d.cfg.DiscoveryPort },
			PageSize: d.limits.PageSize, MaxPage: d.limits.MaxPage, PageBytes: d.limits.PageBytes, Listings: d.limits.Listings}})
	if err := cd.Start(ctx); err != nil {
		return nil, err
	}
	dr := &door{c: c, door: cd, names: d.namesFor(cd.Registrar().Meta().ServiceID)}
	if d.cfg.TLSCert != "" {
		var err error
		if ln, err = listenTLS(ln, d.cfg.TLSCert, d.cfg.TLSKey); err != nil {
			cd.Shutdown(ctx)
			return nil, err
		}
	}
	guard := access.NewGuard(access.GuardConfig{Tokens: cd.Tokens(), Anonymous: d.cfg.Anonymous, Host: dr.hostAllowed, Logger: d.log})
	// /metrics is this node's own: each node is scraped for its part.
	h := api.New(api.Config{Services: []httpjson.Service{cd.Reads()}, Guard: guard, BodyBytes: int64(d.limits.BodyBytes), Metrics: d.obs.metrics,
		Logger: d.log, Ready: cd.Ready, Fallback: http.HandlerFunc(cd.Forward)})
	dr.stopping = newStopSignal()
	dr.srv = &http1.Server{Handler: h, ConnContext: dr.stopping.connContext(d.connContext), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10, Logger: d.log}
	for _, l := range []net.Listener{ln, sock} {
		if l == nil {
			continue
		}
		dr.wg.Go(func() {
			if err := dr.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				d.log.Warn("serving the API while another node holds the store", "listener", l.Addr().String(), "err", err)
			}
		})
	}
	items, _ := cd.Registrar().Count()
	d.log.Info("serving the API: the registry's reads from this node's copy, the rest at the node holding the shard or the store",
		"api", ln.Addr().String(), "items", items, "revision", cd.Revision(), "staleness", cluster.ReadStaleness)
	return dr, nil
}

// shutdown stops serving (the listener is the daemon's from now on) and
// following.
func (dr *door) shutdown(ctx context.Context) {
	dr.stopping.stop()
	dr.srv.Shutdown(ctx)
	dr.wg.Wait()
	dr.door.Shutdown(ctx)
}

// hostAllowed is the Host check of the door's API (Daemon.hostAllowed):
// this host's addresses and names, and the other nodes' addresses.
func (dr *door) hostAllowed(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("").Unmap()
		return slices.Contains(dr.c.d.apiAddrs.get(), a) ||
			slices.ContainsFunc(dr.c.node.Members(), func(m store.Member) bool { return slices.Contains(m.Addrs, a) })
	}
	return slices.Contains(dr.names, strings.ToLower(strings.TrimSuffix(host, ".")))
}

//go:build !jinid_omit_dnssd

package app

import (
	"context"
	"log/slog"

	"github.com/jinid/jinid/announce/dnssd"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
)

// buildDNSSD adds the DNS-SD (mDNS) advertisement, another handle on the
// multicast host. It is a convenience (Jini discovery works without it),
// so a failure is logged, not fatal.
func (d *Daemon) buildDNSSD() {
	id := d.registrar.Meta().ServiceID
	adv, err := dnssd.NewAdvertiser(dnssd.AdvertiserConfig{ServiceID: id, Name: d.dnssdName(id), Port: d.unicastPort,
		APIURL: d.apiURL, Groups: func() []string { return d.registrar.Meta().Groups }, Host: d.host, Logger: d.log})
	if err != nil {
		d.log.Warn("DNS-SD advertisement off", "err", err)
		d.publishOff = "DNS-SD is off: " + err.Error()
		return
	}
	d.parts.Add("DNS-SD", bestEffort{adv, d.log})
	d.publishSet = func(ps []published) {
		svcs := make([]dnssd.Service, len(ps))
		for i, p := range ps {
			svcs[i] = dnssd.Service{Instance: p.instance, Type: p.typ, HostLabel: p.hostLabel, Addr: p.addr, Port: p.port, TXT: p.txt}
		}
		adv.SetServices(svcs)
	}
}

// dnssdName is the base of the DNS-SD names: the advertiser's own (from
// the ServiceID) for one box; in a cluster, whose nodes share the
// ServiceID and each advertise it on their own segments, the node's too,
// so that two nodes on one segment, or a node taking over, do not
// contend for one name.
func (d *Daemon) dnssdName(id discovery.ServiceID) string {
	if d.cfg.Store != StoreEtcd {
		return ""
	}
	return dnssd.NodeName(id, d.cfg.Etcd.Node)
}

// standbyDNSSD advertises the cluster's lookup service on a waiting
// node's segments, at this node, whose ports forward to the holder; nil
// when DNS-SD is off or cannot start (logged: a convenience, as on the
// holder). The holder alone publishes the static services.
func (d *Daemon) standbyDNSSD(ctx context.Context, host *mcast.Host, id discovery.ServiceID, groups func() []string) lifecycle.Service {
	if d.cfg.NoDNSSD {
		return nil
	}
	adv, err := dnssd.NewAdvertiser(dnssd.AdvertiserConfig{ServiceID: id, Name: d.dnssdName(id),
		Port: func() int { return d.cfg.DiscoveryPort }, APIURL: d.apiURL, Groups: groups, Host: host, Logger: d.log})
	if err == nil {
		err = adv.Start(ctx)
	}
	if err != nil {
		d.log.Warn("standby: DNS-SD advertisement off", "err", err)
		return nil
	}
	return adv
}

// bestEffort starts a convenience: a failure is logged, and the daemon
// runs on without it.
type bestEffort struct {
	lifecycle.Service
	log *slog.Logger
}

func (b bestEffort) Start(ctx context.Context) error {
	if err := b.Service.Start(ctx); err != nil {
		b.log.Warn("DNS-SD advertisement off", "err", err)
	}
	return nil
}

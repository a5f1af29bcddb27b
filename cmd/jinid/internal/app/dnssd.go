//go:build !jinid_omit_dnssd

package app

import (
	"context"
	"log/slog"

	"github.com/jinid/jinid/announce/dnssd"
	"github.com/jinid/jinid/internal/lifecycle"
)

// buildDNSSD adds the DNS-SD (mDNS) advertisement, another handle on the
// multicast host. It is a convenience (Jini discovery works without it),
// so a failure is logged, not fatal.
func (d *Daemon) buildDNSSD() {
	adv, err := dnssd.NewAdvertiser(dnssd.AdvertiserConfig{ServiceID: d.registrar.Meta().ServiceID, Port: d.unicastPort,
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

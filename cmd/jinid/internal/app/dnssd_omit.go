//go:build jinid_omit_dnssd

package app

import (
	"context"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
)

// buildDNSSD says a build without the DNS-SD feature (jinid_omit_dnssd,
// left out of the router profile: miekg/dns would cost 0.45 MB of the
// binary, and a router has an mDNS responder already) advertises nothing
// itself. The OpenWrt package announces _jini._tcp through
// umdns (procd_add_mdns in its init script); elsewhere give the system's
// responder a service file, or run the full build.
func (d *Daemon) buildDNSSD() {
	d.log.Info("DNS-SD: not in this build; the system's mDNS responder announces _jini._tcp (the OpenWrt package registers it with umdns)")
	d.publishOff = "this build leaves DNS-SD out (publish the service with the system's mDNS responder)"
}

// standbyDNSSD: a waiting node of such a build advertises nothing either.
func (d *Daemon) standbyDNSSD(context.Context, *mcast.Host, discovery.ServiceID, func() []string) lifecycle.Service {
	return nil
}

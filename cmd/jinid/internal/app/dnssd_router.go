//go:build jinid_router

package app

// buildDNSSD says the router build has no DNS-SD advertiser of its own:
// miekg/dns would cost 0.45 MB of the binary, and a router has an mDNS
// responder already. The OpenWrt package announces _jini._tcp through
// umdns (procd_add_mdns in its init script); elsewhere give the system's
// responder a service file, or run the full build.
func (d *Daemon) buildDNSSD() {
	d.log.Info("DNS-SD: not in the router build; the system's mDNS responder announces _jini._tcp (the OpenWrt package registers it with umdns)")
}

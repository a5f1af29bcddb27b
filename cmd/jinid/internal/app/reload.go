package app

import (
	"fmt"
	"slices"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
)

// Reload applies what of cfg can change while the daemon runs: the
// lookup service's member groups, the interfaces multicast serves, the
// quotas (leases by kind and client,
// the event mailbox's) and the batch size. It returns what it changed,
// one line each. cfg must have been validated; what else differs from
// the running configuration takes effect at the next start (the caller
// says so).
func (d *Daemon) Reload(cfg Config) ([]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var changed []string
	if cfg.Groups != nil {
		// The registrar keeps its groups sorted, each once.
		old := d.registrar.Meta().Groups
		if !slices.Equal(old, slices.Compact(slices.Sorted(slices.Values(cfg.Groups)))) {
			if err := d.registrar.SetGroups(cfg.Groups); err != nil {
				return changed, fmt.Errorf("member groups: %w", err)
			}
			changed = append(changed, fmt.Sprintf("groups: %s -> %s", discovery.GroupsText(old, ","), discovery.GroupsText(cfg.Groups, ",")))
		}
	}
	limits := cfg.Limits.withDefaults()
	if limits != d.limits {
		d.limitsMu.Lock()
		d.limits = limits
		d.limitsMu.Unlock()
		d.setQuotas(d.obs.grantor)
		d.eachShard(func(sp shardParts) { setQuotas(sp.grantor, sp.store, limits) })
		changed = append(changed, "limits: quotas and batch size applied (connection caps and sizes take effect at the next start)")
	}
	if cfg.MailboxMaxPerRegistration != d.cfg.MailboxMaxPerRegistration || cfg.MailboxMaxEvents != d.cfg.MailboxMaxEvents {
		d.obs.mailbox.SetQuotas(cfg.MailboxMaxPerRegistration, cfg.MailboxMaxEvents)
		d.limitsMu.Lock()
		d.cfg.MailboxMaxPerRegistration, d.cfg.MailboxMaxEvents = cfg.MailboxMaxPerRegistration, cfg.MailboxMaxEvents
		d.limitsMu.Unlock()
		d.eachShard(func(sp shardParts) { sp.mailbox.SetQuotas(cfg.MailboxMaxPerRegistration, cfg.MailboxMaxEvents) })
		changed = append(changed, fmt.Sprintf("mailbox quotas: %d per registration, %d in all (0: the defaults)",
			cfg.MailboxMaxPerRegistration, cfg.MailboxMaxEvents))
	}
	if d.host != nil && (!slices.Equal(cfg.Include, d.cfg.Include) || !slices.Equal(cfg.Exclude, d.cfg.Exclude) ||
		cfg.ExcludeDefaultRoute != d.cfg.ExcludeDefaultRoute) {
		// The transport logs each interface it now serves or leaves.
		d.host.SetSelection(mcast.Selection{Include: cfg.Include, Exclude: cfg.Exclude, ExcludeDefaultRoute: cfg.ExcludeDefaultRoute})
		changed = append(changed, fmt.Sprintf("interfaces: --interfaces %q, --exclude-interfaces %q, --exclude-default-route %v",
			cfg.Include, cfg.Exclude, cfg.ExcludeDefaultRoute))
		d.cfg.Include, d.cfg.Exclude, d.cfg.ExcludeDefaultRoute = cfg.Include, cfg.Exclude, cfg.ExcludeDefaultRoute
	}
	// The static services, read again: a file added, changed or
	// removed since.
	did, errs := d.syncStatic(cfg.ServicesDir, cfg.Services)
	changed = append(changed, did...)
	for _, err := range errs {
		d.log.Warn("a static service is not registered", "err", err)
	}
	d.cfg.ServicesDir, d.cfg.Services = cfg.ServicesDir, cfg.Services
	d.cfg.Groups, d.cfg.Limits = cfg.Groups, cfg.Limits
	d.cfg.MailboxMaxPerRegistration, d.cfg.MailboxMaxEvents = cfg.MailboxMaxPerRegistration, cfg.MailboxMaxEvents
	return changed, nil
}

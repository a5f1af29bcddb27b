//go:build !jinid_omit_java

package app

import (
	"slices"

	"github.com/jinid/jinid/cmd/jinid/internal/joiner"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/outbound"
)

// joinItem is a lookup item as the join manager registers it.
func joinItem(li lookup.Item) reggie.Item {
	it := reggie.Item{ServiceID: li.ServiceID, Types: li.Types, Endpoint: li.Endpoint}
	for _, a := range li.Attributes {
		it.Attributes = append(it.Attributes, reggie.Entry{Type: a.Type, Fields: a.Fields})
	}
	return it
}

// buildJoin makes the join manager, which registers the static services
// that name groups or locators in the other lookup services it
// discovers, over Jini ERI, through the outbound dialer.
func (d *Daemon) buildJoin() error {
	l, err := lineage.JGDMS()
	if err != nil {
		return err
	}
	codec, err := reggie.NewCodec(l)
	if err != nil {
		return err
	}
	cfg := joiner.Config{Self: d.registrar.Meta().ServiceID, Codec: codec, Logger: d.log,
		Dial:                 outbound.Dialer(outbound.Config{Namespace: d.cfg.Namespace, Policy: d.policy}),
		AnnouncementInterval: d.cfg.LDSAnnounceInterval}
	if d.host != nil {
		cfg.Multicast = func() (*group.Multicast, error) {
			return group.NewMulticast(group.MulticastConfig{Host: d.host, Namespace: d.cfg.Namespace,
				Logger: d.log.With("component", "join")})
		}
	}
	j, err := joiner.New(cfg)
	if err != nil {
		return err
	}
	d.parts.Add("the join manager", j)
	makers := map[string]*reggie.ServiceMaker{} // one per own service: items compare equal across Sets
	d.joinSet = func(entries []staticEntry) error {
		var out []joiner.Service
		var groups []string
		var locs []discovery.Locator
		for _, e := range entries {
			out = append(out, joiner.Service{Item: joinItem(e.item), Groups: e.groups, Locators: e.locators})
			groups, locs = append(groups, e.groups...), append(locs, e.locators...)
		}
		// jinid's own services as Java finds them go where the static
		// services go: the lookup services the join manager joins.
		if len(out) > 0 {
			for _, own := range d.javaJoin {
				it := joinItem(own)
				sid := own.ServiceID
				if makers[sid] == nil {
					makers[sid] = &reggie.ServiceMaker{Make: func(host string) ([]byte, error) { return d.javaProxy(sid, host) }}
				}
				it.Java = makers[sid]
				out = append(out, joiner.Service{Item: it, Groups: slices.Compact(slices.Sorted(slices.Values(groups))), Locators: locs})
			}
		}
		return j.Set(out)
	}
	return nil
}

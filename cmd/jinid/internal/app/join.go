//go:build !jinid_omit_java

package app

import (
	"github.com/jinid/jinid/cmd/jinid/internal/joiner"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/outbound"
)

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
	d.joinSet = func(entries []staticEntry) error {
		var out []joiner.Service
		for _, e := range entries {
			it := reggie.Item{ServiceID: e.item.ServiceID, Types: e.item.Types, Endpoint: e.item.Endpoint}
			for _, a := range e.item.Attributes {
				it.Attributes = append(it.Attributes, reggie.Entry{Type: a.Type, Fields: a.Fields})
			}
			out = append(out, joiner.Service{Item: it, Groups: e.groups, Locators: e.locators})
		}
		return j.Set(out)
	}
	return nil
}

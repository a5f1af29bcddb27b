package manager

import (
	"context"
	"fmt"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/locator"
)

// For any stream the engines may send, lookup services with proxies
// jinid cannot read among them (a stand-in, then the real ServiceID),
// and discards asked for now and then, what the manager reports (the
// lines of jinid discover --watch) is consistent: a discovered event
// names a lookup service not held, a changed or discarded one a lookup
// service held, and Discovered lists exactly what the events hold.
func TestEventsAreConsistent(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			f := discoverytest.NewFollower()
			var bad error
			m, err := New(Config{Group: group.Config{Network: discoverytest.NewLAN()},
				Locator: locator.Config{Dial: discoverytest.NewLAN().Dial},
				OnEvent: func(e Event) {
					var err error
					switch e.Kind {
					case discovery.Discovered:
						err = f.Discovered(e.ID)
					case discovery.Discarded:
						err = f.Discarded(e.ID)
					case discovery.Changed:
						if !f.Live[e.ID] {
							err = fmt.Errorf("changed %s, which it does not hold", e.ID)
						}
					default:
						err = fmt.Errorf("event %s reported", e.Kind)
					}
					if err != nil && bad == nil {
						bad = fmt.Errorf("%s %s (reason %q): %w", e.Kind, e.ID, e.Reason, err)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			s := discoverytest.NewScript(seed, 4)
			var steps []string
			for i := range 200 {
				if i%17 == 16 {
					if held := m.Discovered(); len(held) > 0 {
						id := held[int(seed+uint64(i))%len(held)].ID
						m.Discard(id)
						steps = append(steps, "manager discards "+id.String())
						continue
					}
				}
				st := s.Next()
				steps = append(steps, fmt.Sprintf("%s: %s %s (reason %q, stand-in %v)", st.By, st.Event.Kind, st.Event.ID, st.Event.Reason, st.Event.IDIsStandIn()))
				if st.By == "group" {
					m.fromGroup(st.Event)
				} else {
					m.fromLocator(st.Event)
				}
			}
			var ids []discovery.ServiceID
			for _, d := range m.Discovered() {
				ids = append(ids, d.ID)
			}
			m.Shutdown(context.Background()) // every event delivered
			if bad == nil {
				bad = f.Holds(ids)
			}
			if bad != nil {
				t.Fatalf("%v; the engines' events:\n%s", bad, fmt.Sprint(steps))
			}
		})
	}
}

package lds

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/services/lease"
)

// The invariant of the package doc, for any stream the engines may send
// (lookup services whose proxies jinid cannot read among them: a
// stand-in, then the real ServiceID) interleaved with what clients do
// (register, change groups and locators, discard, cancel): for each
// registration, every discarded event names a ServiceID an earlier
// discovered event to it named (and not discarded since), no discovered
// event names one it holds, and getRegistrars names exactly the lookup
// services discovered and not discarded since.
func TestEventsAreConsistent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := openRig(t)
			s := discoverytest.NewScript(seed, 4)
			rnd := rand.New(rand.NewPCG(seed, 1))
			type client struct {
				reg Registration
				f   *discoverytest.Follower
			}
			clients := map[string]*client{}
			var steps []string
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("%s; after:\n%v", fmt.Sprintf(format, args...), steps)
			}
			// follow takes the events a step caused (they are sent once
			// its transaction is on disk, before the step returns) and
			// checks each registration's set.
			follow := func() {
				t.Helper()
				for more := true; more; {
					select {
					case e := <-r.rec.ch:
						c := clients[e.reg]
						if c == nil {
							fail("an event for %s, which is not registered", e.reg)
						}
						follow := c.f.Discovered
						if e.discarded {
							follow = c.f.Discarded
						}
						if err := follow(e.ids...); err != nil {
							fail("registration %s, event %d: %v", e.reg, e.seq, err)
						}
					default:
						more = false
					}
				}
				for id, c := range clients {
					regs, err := r.s.Registrars(id)
					if err != nil {
						fail("getRegistrars %s: %v", id, err)
					}
					var ids []discovery.ServiceID
					for _, ls := range regs {
						ids = append(ids, ls.ID)
					}
					if err := c.f.Holds(ids); err != nil {
						fail("registration %s: getRegistrars %v: %v", id, ids, err)
					}
				}
			}
			someGroups := func() []string {
				if rnd.IntN(5) == 0 {
					return nil // ALL_GROUPS
				}
				var gs []string
				for _, g := range s.Groups {
					if rnd.IntN(3) == 0 {
						gs = append(gs, g)
					}
				}
				return gs
			}
			someLocators := func() []discovery.Locator {
				ls := []discovery.Locator{}
				for _, l := range s.World {
					for _, loc := range l.Locators {
						if rnd.IntN(6) == 0 {
							ls = append(ls, loc)
						}
					}
				}
				return ls
			}
			any := func() *client {
				ids := make([]string, 0, len(clients))
				for id := range clients {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				return clients[ids[rnd.IntN(len(ids))]]
			}
			for range 250 {
				switch n := rnd.IntN(20); {
				case n == 0 || len(clients) == 0:
					groups, locs := someGroups(), someLocators()
					reg, err := r.s.Register(RegisterRequest{Groups: groups, Locators: locs, Listener: listener, Duration: lease.Any})
					if err != nil {
						fail("register: %v", err)
					}
					clients[reg.ID] = &client{reg: reg, f: discoverytest.NewFollower()}
					steps = append(steps, fmt.Sprintf("register %s groups %q locators %v", reg.ID, groups, locs))
				case n == 1:
					c := any()
					groups := someGroups()
					if err := r.s.MutateGroups(c.reg.ID, Set, groups); err != nil {
						fail("set groups: %v", err)
					}
					steps = append(steps, fmt.Sprintf("%s sets groups %q", c.reg.ID, groups))
				case n == 2:
					c := any()
					locs := someLocators()
					if err := r.s.MutateLocators(c.reg.ID, Set, locs); err != nil {
						fail("set locators: %v", err)
					}
					steps = append(steps, fmt.Sprintf("%s sets locators %v", c.reg.ID, locs))
				case n == 3:
					c := any()
					regs, _ := r.s.Registrars(c.reg.ID)
					if len(regs) == 0 {
						continue
					}
					id := regs[rnd.IntN(len(regs))].ID
					if err := r.s.Discard(c.reg.ID, id); err != nil {
						fail("discard: %v", err)
					}
					steps = append(steps, fmt.Sprintf("%s discards %s", c.reg.ID, id))
				case n == 4 && len(clients) > 1:
					c := any()
					follow() // what it was sent before it goes
					if err := r.g.Cancel(c.reg.Lease.ID); err != nil {
						fail("cancel: %v", err)
					}
					delete(clients, c.reg.ID)
					steps = append(steps, fmt.Sprintf("%s cancelled", c.reg.ID))
				default:
					st := s.Next()
					steps = append(steps, fmt.Sprintf("%s: %s %s (reason %q, stand-in %v, groups %q)", st.By, st.Event.Kind, st.Event.ID,
						st.Event.Reason, st.Event.IDIsStandIn(), st.Event.Groups))
					if st.By == "group" {
						r.s.onGroupEvent(st.Event)
					} else {
						r.s.onLocatorEvent(st.Event)
					}
				}
				follow()
			}
		})
	}
}

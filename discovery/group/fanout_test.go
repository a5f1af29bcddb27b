package group

import (
	"slices"
	"testing"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
)

type heard struct {
	anns  []discovery.ServiceID
	resps int
	links [][]string
}

func (h *heard) HandleAnnouncement(a discovery.Announcement, _ string) {
	h.anns = append(h.anns, a.ServiceID)
}
func (h *heard) HandleResponse(*unicast.Response, string) { h.resps++ }
func (h *heard) HandleLinks(served []string)              { h.links = append(h.links, served) }

// A Fanout hands what it takes to each sink added, until removed; a
// sink added later hears the links served at once.
func TestFanout(t *testing.T) {
	f := NewFanout()
	a, b := &heard{}, &heard{}
	removeA := f.Add(a)
	f.HandleLinks([]string{"eth0"})
	f.Add(b)
	f.HandleAnnouncement(discovery.Announcement{ServiceID: discovery.ServiceID{1}}, "eth0")
	f.HandleResponse(&unicast.Response{}, "eth0")
	removeA()
	f.HandleAnnouncement(discovery.Announcement{ServiceID: discovery.ServiceID{2}}, "eth0")
	if len(a.anns) != 1 || a.resps != 1 || len(a.links) != 1 {
		t.Errorf("first sink heard %+v", a)
	}
	if !slices.Equal(b.anns, []discovery.ServiceID{{1}, {2}}) || b.resps != 1 || len(b.links) != 1 || b.links[0][0] != "eth0" {
		t.Errorf("second sink heard %+v", b)
	}
}

package group

import (
	"sync"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
)

// Fanout is a LinkSink that hands what it takes to every sink added to
// it: several discovery engines on one network (the lookup discovery
// services of the shards a node of a cluster holds, which come and go).
// A sink that is not a LinkSink does not hear of links.
type Fanout struct {
	mu    sync.RWMutex
	sinks map[*fanned]struct{}
	links []string // the last served, for a sink added later
}

type fanned struct{ Sink }

// NewFanout returns a Fanout with no sinks.
func NewFanout() *Fanout { return &Fanout{sinks: map[*fanned]struct{}{}} }

// Add has s take what the Fanout takes from now on, until remove. A
// LinkSink is told the interfaces served at once.
func (f *Fanout) Add(s Sink) (remove func()) {
	k := &fanned{s}
	f.mu.Lock()
	f.sinks[k] = struct{}{}
	links := f.links
	f.mu.Unlock()
	if ls, ok := s.(LinkSink); ok && links != nil {
		ls.HandleLinks(links)
	}
	return func() {
		f.mu.Lock()
		delete(f.sinks, k)
		f.mu.Unlock()
	}
}

func (f *Fanout) each(do func(Sink)) {
	f.mu.RLock()
	sinks := make([]Sink, 0, len(f.sinks))
	for k := range f.sinks {
		sinks = append(sinks, k.Sink)
	}
	f.mu.RUnlock()
	for _, s := range sinks {
		do(s)
	}
}

func (f *Fanout) HandleAnnouncement(a discovery.Announcement, iface string) {
	f.each(func(s Sink) { s.HandleAnnouncement(a, iface) })
}

func (f *Fanout) HandleResponse(resp *unicast.Response, iface string) {
	f.each(func(s Sink) { s.HandleResponse(resp, iface) })
}

func (f *Fanout) HandleLinks(served []string) {
	f.mu.Lock()
	f.links = append([]string{}, served...)
	f.mu.Unlock()
	f.each(func(s Sink) {
		if ls, ok := s.(LinkSink); ok {
			ls.HandleLinks(served)
		}
	})
}

var _ LinkSink = (*Fanout)(nil)

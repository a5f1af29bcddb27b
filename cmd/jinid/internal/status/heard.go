package status

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// MaxHeard bounds the lookup services Heard keeps: a LAN flooded with
// forged announcements costs this many entries, no more.
const MaxHeard = 4096

// Heard remembers the lookup services heard announcing, for the status
// page: a lookup service is listed while it keeps announcing, whether or
// not anyone asked the lookup discovery service for its groups.
type Heard struct {
	// Expire: not heard for this long, it is forgotten.
	Expire time.Duration

	mu sync.Mutex
	m  map[string]*heard
}

type heard struct {
	LookupService
	last time.Time
}

// NewHeard returns an empty table forgetting after expire.
func NewHeard(expire time.Duration) *Heard { return &Heard{Expire: expire, m: map[string]*heard{}} }

// Note records an announcement of id at address on iface. One of no
// groups is a goodbye (a lookup service stopping announces none): it is
// forgotten at once.
func (h *Heard) Note(at time.Time, id, address string, groups []string, version int, iface string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(groups) == 0 {
		delete(h.m, id)
		return
	}
	e := h.m[id]
	if e == nil {
		if len(h.m) >= MaxHeard {
			h.expire(at)
			if len(h.m) >= MaxHeard {
				return
			}
		}
		e = &heard{LookupService: LookupService{ServiceID: id, Since: at}}
		h.m[id] = e
	}
	e.last, e.Address, e.Groups = at, address, slices.Clone(groups)
	e.How = "announcement (" + iface + ")"
	if !slices.Contains(e.Versions, version) {
		e.Versions = append(e.Versions, version)
		slices.Sort(e.Versions)
	}
}

// Forget forgets id at once: a lookup service discarded.
func (h *Heard) Forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, id)
}

// expire forgets the silent; the caller holds mu.
func (h *Heard) expire(now time.Time) {
	for id, e := range h.m {
		if now.Sub(e.last) > h.Expire {
			delete(h.m, id)
		}
	}
}

// List returns those heard lately, by ServiceID.
func (h *Heard) List(now time.Time) []LookupService {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire(now)
	out := make([]LookupService, 0, len(h.m))
	for _, e := range h.m {
		ls := e.LookupService
		ls.Groups, ls.Versions = slices.Clone(ls.Groups), slices.Clone(ls.Versions)
		out = append(out, ls)
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool { return out[i].ServiceID < out[j].ServiceID })
	return out
}

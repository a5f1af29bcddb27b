// Package status is what the daemon shows a LAN administrator: the
// status page (GET /), server-rendered from an embedded template with no
// script and no external asset, and the journal of notable events it
// lists.
package status

import (
	"slices"
	"sync"
	"time"
)

// JournalSize is how many notable events the journal keeps.
const JournalSize = 50

// Notable is an event worth an administrator's eye: a lookup service
// discovered or discarded, an event not delivered, a renewal failed.
type Notable struct {
	At   time.Time
	Kind string // "discovered", "discarded", "delivery failed", "renewal failed", ...
	// Text says what, in a line; remote hosts' words never appear in it
	// unescaped (the page escapes everything).
	Text string
}

// Journal keeps the last JournalSize notable events. Its methods may be
// called from any goroutine.
type Journal struct {
	now  func() time.Time
	mu   sync.Mutex
	ring [JournalSize]Notable
	next int // where the next goes
	n    int
}

// NewJournal returns an empty journal stamping events with now.
func NewJournal(now func() time.Time) *Journal { return &Journal{now: now} }

// Add notes an event now.
func (j *Journal) Add(kind, text string) {
	at := j.now()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ring[j.next] = Notable{At: at, Kind: kind, Text: text}
	j.next = (j.next + 1) % JournalSize
	j.n = min(j.n+1, JournalSize)
}

// List returns the events kept, newest first.
func (j *Journal) List() []Notable {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Notable, 0, j.n)
	for i := range j.n {
		out = append(out, j.ring[(j.next-1-i+2*JournalSize)%JournalSize])
	}
	return slices.Clip(out)
}

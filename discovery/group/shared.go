package group

import (
	"context"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery/unicast"
)

// SharedContacts is a Network whose unicast contacts several engines
// share: the lookup discovery services of a cluster's node (one per
// shard it holds) hear each announcement at once, and a lookup service
// new to them is contacted once, not once per engine; each engine gets
// the answer and applies its own rules to it (what it discovers, whom
// it tells). Requests are the Network's.
//
// A contact's answer is shared with the engines that ask while it runs
// and for Linger after it ends; a failure is shared only while it runs
// (an engine asking later tries again). An engine contacts a lookup
// service only when it is new to it (its groups afterwards come from
// the announcements), so an answer a moment old is as good as a fresh
// one.
type SharedContacts struct {
	Network
	// Linger is how long a contact's answer is handed to engines that
	// ask after it ended: 5 s if 0.
	Linger time.Duration

	mu       sync.Mutex
	contacts map[contactKey]*contactCall
	made     int64
}

type contactKey struct {
	host          string
	port, version int
}

type contactCall struct {
	done  chan struct{}
	resp  *unicast.Response
	err   error
	ended time.Time
}

// defaultLinger is SharedContacts' Linger if 0.
const defaultLinger = 5 * time.Second

// Unicast implements Network: the contact with host:port in progress or
// ended within Linger, or a new one.
func (n *SharedContacts) Unicast(ctx context.Context, host string, port, version int) (*unicast.Response, error) {
	key := contactKey{host, port, version}
	now := time.Now()
	linger := n.Linger
	if linger <= 0 {
		linger = defaultLinger
	}
	n.mu.Lock()
	if n.contacts == nil {
		n.contacts = map[contactKey]*contactCall{}
	}
	// Forget the answers past their time (the map holds the lookup
	// services contacted within Linger, and those being contacted).
	for k, c := range n.contacts {
		if !c.ended.IsZero() && (c.err != nil || now.Sub(c.ended) > linger) {
			delete(n.contacts, k)
		}
	}
	c := n.contacts[key]
	if c == nil {
		c = &contactCall{done: make(chan struct{})}
		n.contacts[key] = c
		n.made++
		n.mu.Unlock()
		// The contact outlives the engine that began it (another may
		// wait for it), within that engine's deadline.
		cctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			cctx, cancel = context.WithDeadline(cctx, dl)
		}
		resp, err := n.Network.Unicast(cctx, host, port, version)
		cancel()
		n.mu.Lock()
		c.resp, c.err, c.ended = resp, err, time.Now()
		if err != nil {
			delete(n.contacts, key)
		}
		n.mu.Unlock()
		close(c.done)
		return resp, err
	}
	n.mu.Unlock()
	select {
	case <-c.done:
		return c.resp, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Contacts is how many contacts were made (not shared).
func (n *SharedContacts) Contacts() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.made
}

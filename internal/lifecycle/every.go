package lifecycle

import (
	"context"
	"sync"
	"time"
)

// Every is a Service that calls f every d, from Start until Shutdown,
// which waits for a call under way: the periodic chores (a re-read, a
// flush) of a component, without a loop of their own each.
func Every(d time.Duration, f func()) *Periodic {
	return &Periodic{d: d, f: f}
}

// Periodic is what Every returns.
type Periodic struct {
	d time.Duration
	f func()

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start implements Service.
func (p *Periodic) Start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	p.mu.Lock()
	p.cancel, p.done = cancel, done
	p.mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(p.d)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p.f()
		}
	}()
	return nil
}

// Shutdown implements Service.
func (p *Periodic) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

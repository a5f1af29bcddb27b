// Package clock lets protocol timers run on an injected clock, so tests
// can run hours of lease time in milliseconds.
package clock

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened; it reports whether
	// it stopped it.
	Stop() bool
}

// UntilMilli is the wait from now until at, both in milliseconds since
// the epoch, for a timer (zero when at has passed). ok is false when at
// is further away than a time.Duration reaches (about 292 years): for
// protocol time that is "never", and no timer must be set, since the
// overflowed wait would be negative and fire at once.
func UntilMilli(now, at int64) (d time.Duration, ok bool) {
	if at <= now {
		return 0, true
	}
	if now < 0 && at > math.MaxInt64+now {
		return 0, false // at-now itself would overflow
	}
	diff := at - now
	if diff > math.MaxInt64/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(diff) * time.Millisecond, true
}

// Real is the system clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc implements Clock.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a clock that moves only when told to.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    int
}

type fakeTimer struct {
	c       *Fake
	at      time.Time
	seq     int
	f       func()
	stopped bool
}

// NewFake returns a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now implements Clock.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements Clock.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Pending lists when the timers not yet run or stopped are due, earliest
// first: tests check that nothing is armed that should not be.
func (c *Fake) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, t := range c.timers {
		if !t.stopped {
			out = append(out, t.at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// Skip moves the clock forward by d without running the timers that
// fall due: they run at the next Advance, as a real timer runs late on a
// busy machine. Tests use it to check what holds at the moment of a
// call, whether or not a timer has run yet.
func (c *Fake) Skip(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Advance moves the clock forward by d, running every timer that falls
// due, in order of time, each to completion before the next (unlike the
// real clock, so tests see a deterministic order).
func (c *Fake) Advance(d time.Duration) { c.AdvanceSettling(d, nil) }

// AdvanceSettling is Advance calling settle (when not nil) after each
// timer's function returns, before the next is looked for: a test passes
// a function that waits for the work a timer handed to other goroutines,
// so that the timers that work sets are run in the same advance.
func (c *Fake) AdvanceSettling(d time.Duration, settle func()) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool {
			if !c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].at.Before(c.timers[j].at)
			}
			return c.timers[i].seq < c.timers[j].seq
		})
		var next *fakeTimer
		for len(c.timers) > 0 && c.timers[0].stopped {
			c.timers = c.timers[1:]
		}
		if len(c.timers) > 0 && !c.timers[0].at.After(end) {
			next = c.timers[0]
			c.timers = c.timers[1:]
			next.stopped = true
			if next.at.After(c.now) {
				c.now = next.at
			}
		} else {
			c.now = end
		}
		c.mu.Unlock()
		if next == nil {
			return
		}
		next.f()
		if settle != nil {
			settle()
		}
	}
}

// Runner runs timed callbacks and goroutines on behalf of an owner whose
// Close must wait for them: once Stop is called none starts any more, and
// Stop returns when those running have returned.
type Runner struct {
	c       Clock
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// NewRunner returns a Runner on c.
func NewRunner(c Clock) *Runner { return &Runner{c: c} }

// AfterFunc runs f after d, in the timer's goroutine, unless the runner
// has stopped by then.
func (r *Runner) AfterFunc(d time.Duration, f func()) Timer {
	return r.c.AfterFunc(d, func() {
		if r.enter() {
			defer r.wg.Done()
			f()
		}
	})
}

// Go runs f in a goroutine of its own, which Stop waits for, unless the
// runner has stopped: it reports whether f was started.
func (r *Runner) Go(f func()) bool {
	if !r.enter() {
		return false
	}
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// enter counts one more function running, unless the runner has stopped.
func (r *Runner) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	r.wg.Add(1)
	return true
}

// Stop starts nothing more and waits for what runs.
func (r *Runner) Stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.wg.Wait()
}

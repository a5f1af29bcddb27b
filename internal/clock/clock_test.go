package clock

import (
	"math"
	"testing"
	"time"
)

func TestUntilMilli(t *testing.T) {
	const now = 1_700_000_000_000
	maxMs := int64(math.MaxInt64 / int64(time.Millisecond))
	for _, c := range []struct {
		name   string
		now    int64
		at     int64
		want   time.Duration
		wantOK bool
	}{
		{"past", now, now - 5, 0, true},
		{"now", now, now, 0, true},
		{"a second", now, now + 1000, time.Second, true},
		{"the longest wait", now, now + maxMs, time.Duration(maxMs) * time.Millisecond, true},
		{"just too far", now, now + maxMs + 1, 0, false},
		{"FOREVER", now, math.MaxInt64, 0, false},
		{"negative now, FOREVER", -5, math.MaxInt64, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, ok := UntilMilli(c.now, c.at)
			if d != c.want || ok != c.wantOK {
				t.Fatalf("UntilMilli(%d, %d) = %v, %v; want %v, %v", c.now, c.at, d, ok, c.want, c.wantOK)
			}
			if ok && d < 0 {
				t.Fatalf("negative wait %v", d)
			}
		})
	}
}

func TestAdvanceSettlingRunsTimersSetBySettledWork(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	done := make(chan struct{}, 1)
	var fired []time.Duration
	c.AfterFunc(time.Second, func() {
		fired = append(fired, c.Now().Sub(time.Unix(0, 0)))
		go func() { // work handed to another goroutine sets the next timer
			c.AfterFunc(time.Second, func() { fired = append(fired, c.Now().Sub(time.Unix(0, 0))) })
			done <- struct{}{}
		}()
	})
	settled := 0
	c.AdvanceSettling(3*time.Second, func() {
		if settled == 0 {
			<-done
		}
		settled++
	})
	if len(fired) != 2 || fired[0] != time.Second || fired[1] != 2*time.Second {
		t.Fatalf("fired at %v, want [1s 2s]", fired)
	}
}

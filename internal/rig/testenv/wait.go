package testenv

import (
	"testing"
	"time"
)

// WaitLimit is how long Until waits: far longer than any condition
// takes on a loaded machine, so that a test fails on a fault, not on
// load.
const WaitLimit = 15 * time.Second

// Until waits for cond to hold, looking every millisecond (cond may
// look at anything: a counter, a file, a daemon's answer), and fails the
// test, saying what was awaited, if it has not held within WaitLimit.
// It is the one way tests here wait for a condition: a sleep is for when
// time itself is the subject.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(WaitLimit); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", WaitLimit, what)
		}
	}
}

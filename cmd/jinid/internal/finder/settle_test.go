package finder

import (
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// On a LAN where everything answers at once, a one-shot round ends one
// settle after its last request: long before its timeout. Time is the
// injected clock's, so the test says nothing of wall time.
func TestRoundEndsWhenSettled(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1, h2 := lab.Host("client"), lab.Host("lus1"), lab.Host("lus2")
	client.Attach(lan)
	h1.Attach(lan)
	h2.Attach(lan)
	startLUS(t, h1, 2, 1, "lab")
	startLUS(t, h2, 2, 2, "lab")

	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	start := clk.Now()
	const timeout, settle = 30 * time.Second, time.Second
	f, cancel := newFinder(t.Context(), Config{Groups: []string{"lab"}, Timeout: timeout, Settle: settle, Clock: clk,
		Namespace: client.Namespace(), NoIPv6: true})
	defer cancel()
	if err := f.start(); err != nil {
		t.Fatal(err)
	}
	defer f.stop()

	// Both answer the first request; the only thing left under way is
	// the timer of the second request.
	testenv.Until(t, "both lookup services to answer and every contact to end", func() bool {
		return len(answered(f.results())) == 2 && f.quiet.idle(1)
	})
	clk.Advance(requestInterval - 1)
	if isDone(f) {
		t.Fatal("the round ended before its last request")
	}
	clk.Advance(1) // the second request: nothing new answers it
	testenv.Until(t, "contacts after the second request to end", func() bool { return f.quiet.idle(0) })
	clk.Advance(settle - time.Millisecond)
	if isDone(f) {
		t.Fatal("the round ended before it had been quiet for the settle time")
	}
	clk.Advance(time.Millisecond)
	select {
	case <-f.quiet.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the round did not end one settle after its last request")
	}
	if elapsed := clk.Now().Sub(start); elapsed != requestInterval+settle || elapsed >= timeout {
		t.Fatalf("ended after %s of clock time; want %s (last request + settle), under the %s timeout", elapsed, requestInterval+settle, timeout)
	}
	cancel()
	f.stop()
	if rs := answered(f.results()); len(rs) != 2 {
		t.Fatalf("results %+v; want both lookup services", rs)
	}
}

// Work under way (a dial to a slow locator, say) keeps the round open
// however long it takes; once it ends, so does the round, a settle time
// after the last thing heard.
func TestRoundWaitsForWorkUnderWay(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	q := newQuiet(clk, time.Second)
	q.begin()
	q.start()
	clk.Advance(10 * time.Second)
	if isClosed(q.done) {
		t.Fatal("settled while work was under way")
	}
	q.end()
	clk.Advance(time.Second - 1)
	q.touch() // something new: the settle time starts again
	clk.Advance(time.Second - 1)
	if isClosed(q.done) {
		t.Fatal("settled less than a settle time after the last thing heard")
	}
	clk.Advance(1)
	if !isClosed(q.done) {
		t.Fatal("not settled a settle time after the last thing heard")
	}
}

func isDone(f *finder) bool { return isClosed(f.quiet.done) }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func answered(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Error == "" && r.Kind != "" {
			out = append(out, r)
		}
	}
	return out
}

// Config.Found is handed each lookup service once, as it answers, and
// the round waits for it: browse reads each while the round goes on, and
// the round ends a settle after the last read (browse read them all
// after a fixed round: half as fast again as avahi-browse).
func TestRoundWaitsForFound(t *testing.T) {
	t.Parallel()
	lab := netlab.New(t)
	lan := lab.LAN()
	client, h1 := lab.Host("client"), lab.Host("lus1")
	client.Attach(lan)
	h1.Attach(lan)
	startLUS(t, h1, 2, 1, "lab")

	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	const settle = time.Second
	reading, release := make(chan Result, 4), make(chan struct{})
	f, cancel := newFinder(t.Context(), Config{Groups: []string{"lab"}, Timeout: time.Minute, Settle: settle, Clock: clk,
		Namespace: client.Namespace(), NoIPv6: true, Found: func(r Result) {
			reading <- r
			<-release
		}})
	defer cancel()
	if err := f.start(); err != nil {
		t.Fatal(err)
	}
	defer f.stop()
	var r Result
	select {
	case r = <-reading:
	case <-time.After(testenv.WaitLimit):
		t.Fatal("Found was not called for the lookup service that answered")
	}
	if r.ServiceID == "" || r.Port == 0 || r.Kind == "" {
		t.Fatalf("Found got %+v", r)
	}
	clk.Advance(requestInterval)
	clk.Advance(10 * settle)
	if isDone(f) {
		t.Fatal("the round ended while Found was under way")
	}
	close(release)
	testenv.Until(t, "Found to return", func() bool { return f.quiet.idle(0) })
	clk.Advance(settle)
	select {
	case <-f.quiet.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the round did not end a settle after Found returned")
	}
	if len(reading) != 0 {
		t.Fatalf("Found called again for the same lookup service: %+v", <-reading)
	}
}

package announce

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/rig/testenv"
)

var lan = []netip.Prefix{netip.MustParsePrefix("198.18.1.1/24"), netip.MustParsePrefix("2001:db8:1::1/64")}

func request(src string, port int) (discovery.Request, mcast.Packet) {
	a := netip.MustParseAddr(src)
	return discovery.Request{Version: discovery.ProtocolV2, Host: src, Port: port},
		mcast.Packet{Src: netip.AddrPortFrom(a, 4160), IfName: "eth0", Subnets: lan}
}

// testResponder answers through dial, counting what it was asked.
func testResponder(t *testing.T, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Responder, *atomic.Int64) {
	t.Helper()
	var answered atomic.Int64
	r := NewResponder(ResponderConfig{ServiceID: discovery.ServiceID{1}, Groups: func() []string { return []string{"lab"} },
		Answer: func(c net.Conn) { c.Close(); answered.Add(1) }, Dial: dial, DialTimeout: 100 * time.Millisecond})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return r, &answered
}

func waitCount(t *testing.T, what string, c *atomic.Int64, n int64) {
	t.Helper()
	testenv.Until(t, fmt.Sprintf("%d %s", n, what), func() bool { return c.Load() >= n })
}

// Requests from off the link, or naming an address off it, are dropped:
// a forged source, or a request that jinid connect somewhere for someone.
func TestResponderOffLink(t *testing.T) {
	var dials atomic.Int64
	r, answered := testResponder(t, func(context.Context, string) (net.Conn, error) {
		dials.Add(1)
		c, s := net.Pipe()
		s.Close()
		return c, nil
	})
	req, p := request("10.9.9.9", 20000) // off the link
	r.OnRequest(req, p)
	req, p = request("198.18.1.7", 20000) // on it, but naming an address elsewhere
	req.Host = "192.0.2.80"
	r.OnRequest(req, p)
	req, p = request("198.18.1.7", 20001)
	r.OnRequest(req, p)
	waitCount(t, "answered", answered, 1)
	if r.OffLink.Load() != 2 || dials.Load() != 1 {
		t.Fatalf("off link %d, dials %d; want 2 and 1", r.OffLink.Load(), dials.Load())
	}
}

// A flood of requests from made-up sources on the link costs one
// connect-back per made-up address (each is then left alone), and a real
// requester among them is answered.
func TestResponderSpoofedFlood(t *testing.T) {
	var mu sync.Mutex
	tried := map[string]int{}
	r, answered := testResponder(t, func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		tried[addr]++
		mu.Unlock()
		host, _, _ := net.SplitHostPort(addr)
		if host != "198.18.1.200" { // nobody there
			<-ctx.Done()
			return nil, ctx.Err()
		}
		c, s := net.Pipe()
		s.Close()
		return c, nil
	})
	flood := func(n int) {
		for i := range n {
			req, p := request(fmt.Sprintf("198.18.1.%d", 2+i%150), 30000+i) // made up
			r.OnRequest(req, p)
		}
	}
	// The real requester repeats its request, as clients do, among the
	// flood, until it is answered.
	pace := time.NewTicker(25 * time.Millisecond) // the flood's pace: 20,000 requests a second
	defer pace.Stop()
	for i := 0; answered.Load() == 0; i++ {
		if i == 200 {
			t.Fatalf("the real requester not answered after %d tries", i)
		}
		flood(500)
		req, p := request("198.18.1.200", 4444+i)
		r.OnRequest(req, p)
		<-pace.C
	}
	// Every made-up address: tried at most once more, whatever the rate.
	for range 3 {
		flood(5000)
	}
	mu.Lock()
	defer mu.Unlock()
	perAddr := map[string]int{}
	for addr, n := range tried {
		host, _, _ := net.SplitHostPort(addr)
		perAddr[host] += n
	}
	for host, n := range perAddr {
		if n > 2 {
			t.Errorf("made-up address %s tried %d times", host, n)
		}
	}
	t.Logf("%d connect-backs tried; suspect %d, busy %d", len(tried), r.Suspect.Load(), r.Busy.Load())
}

// Sources answered before are served first, each source gets one turn
// at a time however many requests it has waiting, and none has two
// connect-backs under way at once.
func TestFairQueue(t *testing.T) {
	var q fairQueue
	q.init()
	a, b, known := netip.MustParseAddr("198.18.1.2"), netip.MustParseAddr("198.18.1.3"), netip.MustParseAddr("198.18.1.4")
	q.push(job{src: a, addr: "a1"}, false, 10, 2)
	q.push(job{src: a, addr: "a2"}, false, 10, 2)
	if q.push(job{src: a, addr: "a3"}, false, 10, 2) {
		t.Fatal("a third job of one source was queued")
	}
	q.push(job{src: b, addr: "b1"}, false, 10, 2)
	q.push(job{src: known, addr: "k1"}, true, 10, 2)
	var got []string
	var busy []netip.Addr // popped, not done yet
	for {
		j, ok := q.pop()
		if !ok {
			if len(busy) == 0 {
				break
			}
			// A worker ends its connect-back, and takes the next.
			q.done(busy[0])
			busy = busy[1:]
			continue
		}
		if slices.Contains(busy, j.src) {
			t.Fatalf("%s popped while its source's last connect-back is under way", j.addr)
		}
		busy = append(busy, j.src)
		got = append(got, j.addr)
	}
	if fmt.Sprint(got) != "[k1 a1 b1 a2]" {
		t.Fatalf("order %v, want [k1 a1 b1 a2]", got)
	}
	for i := range 3 {
		q.push(job{src: netip.AddrFrom4([4]byte{198, 18, 1, byte(10 + i)})}, false, 2, 2)
	}
	if q.n != 2 {
		t.Fatalf("%d jobs queued with a bound of 2", q.n)
	}
}

// A request refused for want of room makes the lookup service announce
// itself instead, on the interface and family the request came in on: at
// once, or if it just did there, once the interval has passed (one
// announcement for all refused there meanwhile). Another link gets its
// own at once.
func TestResponderOverloadedAnnounces(t *testing.T) {
	var mu sync.Mutex
	shouts := map[link]int{}
	var total atomic.Int64
	block := make(chan struct{})
	defer close(block)
	r := NewResponder(ResponderConfig{ServiceID: discovery.ServiceID{1}, Groups: func() []string { return []string{"lab"} },
		Answer: func(c net.Conn) { c.Close() }, MaxAnswers: 1, MaxPending: 2, OverloadAnnounceEvery: 50 * time.Millisecond,
		Dial: func(context.Context, string) (net.Conn, error) { <-block; return nil, net.ErrClosed },
		Overloaded: func(ifIndex, family int) {
			mu.Lock()
			shouts[link{ifIndex, family}]++
			mu.Unlock()
			total.Add(1)
		}})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	on := func(ifIndex, family int, src string) {
		req, p := request(src, 30000)
		p.IfIndex, p.Family = ifIndex, family
		r.OnRequest(req, p)
	}
	for i := range 50 {
		on(2, 4, fmt.Sprintf("198.18.1.%d", 2+i))
	}
	on(3, 6, "2001:db8:1::9")
	if r.Busy.Load() < 40 || total.Load() != 2 {
		t.Fatalf("busy %d, announcements asked %d; want most refused, and one announcement on each link", r.Busy.Load(), total.Load())
	}
	// Those refused after the first announcement get one of their own,
	// on their link only.
	waitCount(t, "announcements", &total, 3)
	time.Sleep(150 * time.Millisecond) // no refusal since: no fourth (a check of absence)
	mu.Lock()
	defer mu.Unlock()
	if want := map[link]int{{2, 4}: 2, {3, 6}: 1}; fmt.Sprint(shouts) != fmt.Sprint(want) {
		t.Fatalf("announcements asked by link %v, want %v", shouts, want)
	}
}

// reachable dials a requester that is there (and hangs up at once).
func reachable(context.Context, string) (net.Conn, error) {
	c, s := net.Pipe()
	s.Close()
	return c, nil
}

// Honest requesters starting together are all answered: twenty
// discovery clients on four hosts, each asking in both versions (a
// connect-back port each), are within the sources' budgets and the
// queue, and nothing is refused.
func TestResponderHonestBurst(t *testing.T) {
	var shouts atomic.Int64
	var answered atomic.Int64
	r := NewResponder(ResponderConfig{ServiceID: discovery.ServiceID{1}, Groups: func() []string { return []string{"lab"} },
		Answer:     func(c net.Conn) { c.Close(); answered.Add(1) },
		Dial:       reachable,
		Overloaded: func(int, int) { shouts.Add(1) }})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	n := 0
	for host := range 4 {
		for _, src := range []string{fmt.Sprintf("198.18.1.%d", 10+host), fmt.Sprintf("2001:db8:1::%d", 10+host)} {
			for client := range 5 {
				for version := range 2 {
					req, p := request(src, 40000+2*client+version)
					r.OnRequest(req, p)
					n++
				}
			}
		}
	}
	waitCount(t, "answered", &answered, int64(n))
	if r.Busy.Load() != 0 || shouts.Load() != 0 {
		t.Fatalf("%d of %d refused (%d announcements instead), want none", r.Busy.Load(), n, shouts.Load())
	}
}

// A source over its budget is refused, and the lookup service announces
// itself on its link instead: a requester refused for any reason hears
// of the lookup service within the announcement interval.
func TestResponderOverBudgetAnnounces(t *testing.T) {
	var shouts atomic.Int64
	r := NewResponder(ResponderConfig{ServiceID: discovery.ServiceID{1}, Groups: func() []string { return []string{"lab"} },
		Answer: func(c net.Conn) { c.Close() }, PerSourceBurst: 2, PerSourceRate: 0.001,
		Dial:       reachable,
		Overloaded: func(int, int) { shouts.Add(1) }})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	for i := range 3 {
		req, p := request("198.18.1.7", 30000+i)
		r.OnRequest(req, p)
	}
	if r.Busy.Load() != 1 || shouts.Load() != 1 {
		t.Fatalf("busy %d, announcements %d; want the third refused and an announcement", r.Busy.Load(), shouts.Load())
	}
}

// An address that keeps failing is left alone longer each time (up to 16
// times), each period drawn within a quarter of itself.
func TestSuspectEscalates(t *testing.T) {
	r := NewResponder(ResponderConfig{ServiceID: discovery.ServiceID{1}, Groups: func() []string { return nil }})
	a := netip.MustParseAddr("198.18.1.9")
	now := time.Unix(1_000_000, 0)
	for strike, want := range []time.Duration{1, 2, 4, 8, 16, 16} {
		r.suspectLocked(a, now)
		got := r.suspect[a].until.Sub(now)
		if lo, hi := want*time.Minute, want*time.Minute*5/4; got < lo || got > hi {
			t.Fatalf("strike %d: suspect for %v, want %v to %v", strike+1, got, lo, hi)
		}
		now = r.suspect[a].until // tried again as soon as allowed, and failed
	}
	r.suspectLocked(a, now.Add(17*16*time.Minute)) // long forgotten: a fresh start
	if got := r.suspect[a].until.Sub(now.Add(17 * 16 * time.Minute)); got > time.Minute*5/4 {
		t.Fatalf("after a long good spell suspect for %v, want a minute", got)
	}
}

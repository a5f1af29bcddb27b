package dnssd

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// The advertiser's LAN in these tests: one interface, 192.0.2.1/24.
var (
	lanAddr   = netip.MustParseAddr("192.0.2.1")
	lanSubnet = netip.MustParsePrefix("192.0.2.0/24")
	neighbour = netip.MustParseAddrPort("192.0.2.9:5353")
)

// fakePort is the advertiser's mDNS port on one interface: it keeps what
// is sent, and hands each multicast to onSend (another host's reaction).
type fakePort struct {
	mu      sync.Mutex
	multi   []dns.Msg // sent to the group
	replies []dns.Msg // answers by SendReply, to the group or an asker
	to      []netip.AddrPort
	onSend  func(m dns.Msg)
}

var lanJoined = mcast.Joined{Index: 1, Name: "lan0", Family: 4, Addr: lanAddr}

func (p *fakePort) SendTo(dst func(int) netip.Addr, build func(mcast.Joined) ([][]byte, error)) error {
	bs, err := build(lanJoined)
	if err != nil {
		return err
	}
	for _, b := range bs {
		var m dns.Msg
		if err := m.Unpack(b); err != nil {
			return err
		}
		p.mu.Lock()
		p.multi = append(p.multi, m)
		on := p.onSend
		p.mu.Unlock()
		if on != nil {
			on(m)
		}
	}
	return nil
}

func (p *fakePort) SendReply(_, _ int, dst netip.AddrPort, b []byte) error {
	var m dns.Msg
	if err := m.Unpack(b); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replies = append(p.replies, m)
	p.to = append(p.to, dst)
	return nil
}

func (p *fakePort) Joined() []mcast.Joined    { return []mcast.Joined{lanJoined} }
func (p *fakePort) IsLocal(a netip.Addr) bool { return a == lanAddr }
func (p *fakePort) Close() error              { return nil }

// count counts the multicasts that are probes (queries with an
// authority section) or announcements (responses with a TTL).
func (p *fakePort) count() (probes, announcements int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.multi {
		switch {
		case !m.Response && len(m.Ns) > 0:
			probes++
		case m.Response && len(m.Answer) > 0 && m.Answer[0].Header().Ttl > 0:
			announcements++
		}
	}
	return probes, announcements
}

func (p *fakePort) answers() ([]dns.Msg, []netip.AddrPort) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]dns.Msg(nil), p.replies...), append([]netip.AddrPort(nil), p.to...)
}

// infoLines counts the log lines at Info and above.
type infoLines struct {
	slog.Handler
	n *atomic.Int64
}

func (h infoLines) Enabled(context.Context, slog.Level) bool { return true }
func (h infoLines) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		h.n.Add(1)
	}
	return nil
}
func (h infoLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h infoLines) WithGroup(string) slog.Handler      { return h }

// testAdvertiser starts an advertiser named jinid-test on a fake port,
// on clk; logged counts its log lines at Info. made, if set, is handed
// the advertiser before it starts (a fake host answering its first
// probe needs it then).
func testAdvertiser(t *testing.T, clk *clock.Fake, fp *fakePort, made ...func(*Advertiser)) (a *Advertiser, logged *atomic.Int64) {
	t.Helper()
	logged = new(atomic.Int64)
	cfg := AdvertiserConfig{ServiceID: discovery.ServiceID{1, 2, 3, 4}, Port: func() int { return 4160 },
		Groups: func() []string { return []string{""} }, Clock: clk, Logger: slog.New(infoLines{n: logged})}
	a = newAdvertiser(cfg, "jinid-test", func(mcast.PortConfig) (port, error) { return fp, nil })
	for _, f := range made {
		f(a)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	return a, logged
}

// claim runs clk until a's names are claimed and announced twice.
func claim(t *testing.T, clk *clock.Fake, fp *fakePort) {
	t.Helper()
	testenv.Until(t, "the names claimed and announced twice", func() bool {
		if _, n := fp.count(); n >= 2 {
			return true
		}
		if len(clk.Pending()) > 0 {
			clk.Advance(probeInterval)
		}
		return false
	})
}

// packet is m as heard from src on the fake port's interface.
func packet(t *testing.T, m *dns.Msg, src netip.AddrPort) mcast.Packet {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return mcast.Packet{Data: b, Src: src, Dst: MDNSGroupV4, IfIndex: 1, IfName: "lan0", Family: 4, Subnets: []netip.Prefix{lanSubnet}}
}

func srvOf(name, target string, port uint16) *dns.SRV {
	return &dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET | 1<<15, Ttl: 120}, Port: port, Target: target}
}

// A host that answers each probe with a conflict (RFC 6762 §8.1): after
// 15 conflicts within 10 s, each attempt waits 5 s. Over 30 s: about 20
// probes, each new name logged once, not a storm of hundreds of
// thousands (as before: no back-off).
func TestConflictStormBacksOff(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	fp := &fakePort{}
	var adv atomic.Pointer[Advertiser]
	fp.onSend = func(m dns.Msg) {
		if m.Response || len(m.Ns) == 0 {
			return
		}
		r := new(dns.Msg)
		r.Response, r.Authoritative = true, true
		r.Answer = []dns.RR{srvOf(m.Question[0].Name, "someone-else.local.", 9)}
		adv.Load().handle(packet(t, r, neighbour))
	}
	a, logged := testAdvertiser(t, clk, fp, adv.Store)
	start := clk.Now()
	for clk.Now().Sub(start) < 30*time.Second {
		testenv.Until(t, "the advertiser waiting on its clock (or a storm)", func() bool {
			probes, _ := fp.count()
			return len(clk.Pending()) > 0 || probes > 1000
		})
		if probes, _ := fp.count(); probes > 1000 {
			t.Fatalf("%d probes within %v of spoofed conflicts", probes, clk.Now().Sub(start))
		}
		clk.Advance(probeInterval)
	}
	probes, _ := fp.count()
	// 15 attempts at once, then one every 5 s.
	if want := conflictBurst + 6; probes > want {
		t.Errorf("%d probes in 30 s of conflicts, want at most %d", probes, want)
	}
	if n := logged.Load(); n > int64(probes) {
		t.Errorf("%d log lines for %d renames: each new name is logged once", n, probes)
	}
	if _, host := a.Names(); host == "jinid-test.local." {
		t.Error("never renamed")
	}
}

// 2,000 queries in a burst get one multicast answer; a second later,
// one more (§6: a record at most once a second per interface). A probe
// for a name of ours is answered every 250 ms (the name defended), and
// a record the asker knows with half its TTL left is not sent (§7.1).
func TestQueryFloodAnsweredOncePerSecond(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	fp := &fakePort{}
	a, _ := testAdvertiser(t, clk, fp)
	claim(t, clk, fp)
	instance, _ := a.Names()
	q := new(dns.Msg)
	q.SetQuestion(instance, dns.TypeSRV)
	q.RecursionDesired = false
	answered := func() int { m, _ := fp.answers(); return len(m) }

	clk.Advance(recordInterval) // past the announcements
	for range 2000 {
		a.handle(packet(t, q, neighbour))
	}
	if n := answered(); n != 1 {
		t.Fatalf("2,000 queries got %d multicast answers, want 1", n)
	}
	clk.Advance(recordInterval / 2)
	a.handle(packet(t, q, neighbour))
	if n := answered(); n != 1 {
		t.Fatalf("a query half a second later answered again (%d answers)", n)
	}
	clk.Advance(recordInterval / 2)
	a.handle(packet(t, q, neighbour))
	if n := answered(); n != 2 {
		t.Fatalf("a query a second later not answered (%d answers)", n)
	}

	// A probe for our name: defended every 250 ms.
	probe := new(dns.Msg)
	probe.SetQuestion(instance, dns.TypeANY)
	probe.Ns = []dns.RR{srvOf(instance, "intruder.local.", 9)}
	clk.Advance(defendInterval)
	a.handle(packet(t, probe, neighbour))
	if n := answered(); n != 3 {
		t.Fatalf("a probe for our name 250 ms after an answer not answered (%d answers)", n)
	}
	if _, host := a.Names(); host != "jinid-test.local." {
		t.Fatalf("a probe (a query) taken for a conflict: renamed to %s", host)
	}

	// Known answers: the SRV listed with its full TTL is not sent again;
	// listed with less than half, it is.
	clk.Advance(recordInterval)
	answers, _ := fp.answers()
	srv := answers[0].Answer[0]
	ka := q.Copy()
	ka.Answer = []dns.RR{dns.Copy(srv)}
	a.handle(packet(t, ka, neighbour))
	if n := answered(); n != 3 {
		t.Fatalf("a query that knows the answer answered (%d answers)", n)
	}
	ka.Answer[0].Header().Ttl = srv.Header().Ttl/2 - 1
	a.handle(packet(t, ka, neighbour))
	if n := answered(); n != 4 {
		t.Fatalf("a query whose known answer is half expired not answered (%d answers)", n)
	}
}

// A query from off the interface's link gets no answer, multicast or
// legacy unicast (§11: jinid is no reflector); legacy unicast from a
// neighbour is answered, straight to it.
func TestOffLinkQueriesIgnored(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	fp := &fakePort{}
	a, _ := testAdvertiser(t, clk, fp)
	claim(t, clk, fp)
	clk.Advance(recordInterval)
	instance, _ := a.Names()
	q := new(dns.Msg)
	q.SetQuestion(instance, dns.TypeSRV)
	for _, src := range []string{"10.9.9.9:5353", "10.9.9.9:40000", "198.51.100.7:5353"} {
		a.handle(packet(t, q, netip.MustParseAddrPort(src)))
	}
	if m, to := fp.answers(); len(m) != 0 {
		t.Fatalf("off-link queries answered: to %v", to)
	}
	legacy := netip.MustParseAddrPort("192.0.2.9:40000")
	a.handle(packet(t, q, legacy))
	if m, to := fp.answers(); len(m) != 1 || to[0] != legacy || m[0].Id != q.Id {
		t.Fatalf("legacy unicast from a neighbour: answers %d to %v", len(m), to)
	}
}

// Only a record that truly conflicts makes a rename (§9): the same name,
// type and class with other data, in a response. A record of another
// type under our name, a query's known answer, our own record heard
// back: none does.
func TestConflictRules(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	fp := &fakePort{}
	a, _ := testAdvertiser(t, clk, fp)
	claim(t, clk, fp)
	instance, host := a.Names()
	response := func(rrs ...dns.RR) *dns.Msg {
		m := new(dns.Msg)
		m.Response, m.Authoritative = true, true
		m.Answer = rrs
		return m
	}
	hinfo := &dns.HINFO{Hdr: dns.RR_Header{Name: host, Rrtype: dns.TypeHINFO, Class: dns.ClassINET, Ttl: 120}, Cpu: "x", Os: "y"}
	nsec := &dns.NSEC{Hdr: dns.RR_Header{Name: instance, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: 120}, NextDomain: instance}
	ownA := &dns.A{Hdr: dns.RR_Header{Name: host, Rrtype: dns.TypeA, Class: dns.ClassINET | 1<<15, Ttl: 120}, A: lanAddr.AsSlice()}
	knownQuery := new(dns.Msg)
	knownQuery.SetQuestion(instance, dns.TypeSRV)
	knownQuery.Answer = []dns.RR{srvOf(instance, "someone-else.local.", 9)}
	for name, m := range map[string]*dns.Msg{
		"an HINFO of our host name":                    response(hinfo),
		"an NSEC of our instance name":                 response(nsec),
		"our own A record":                             response(ownA),
		"a conflicting SRV in a query's known answers": knownQuery,
	} {
		a.handle(packet(t, m, neighbour))
		if _, h := a.Names(); h != host {
			t.Fatalf("%s taken for a conflict: renamed to %s", name, h)
		}
	}
	otherA := &dns.A{Hdr: dns.RR_Header{Name: host, Rrtype: dns.TypeA, Class: dns.ClassINET | 1<<15, Ttl: 120}, A: []byte{192, 0, 2, 77}}
	a.handle(packet(t, response(otherA), neighbour))
	testenv.Until(t, "renamed after another host's A record for our host name", func() bool {
		_, h := a.Names()
		return h == "jinid-test-2.local."
	})
}

// Two hosts probing for the same name at once (§8.2): the one whose
// proposed records are lexicographically later goes on; the other waits
// a second and probes again, under the same name.
func TestSimultaneousProbeTieBreak(t *testing.T) {
	// Sorted, our records for the instance name begin with its TXT,
	// whose first string is "txtvers=1" (its data begins with a length
	// of 9): a TXT whose first string is longer is later, a shorter one
	// earlier.
	for _, tc := range []struct {
		name      string
		txt       string
		wantDefer bool
	}{
		{"theirs later: we defer", strings.Repeat("z", 20), true},
		{"ours later: we go on", "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			fp := &fakePort{}
			var adv atomic.Pointer[Advertiser]
			var once sync.Once
			fp.onSend = func(m dns.Msg) {
				if m.Response || len(m.Ns) == 0 {
					return
				}
				once.Do(func() {
					probe := new(dns.Msg)
					probe.SetQuestion(m.Question[0].Name, dns.TypeANY)
					probe.Ns = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: m.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 120},
						Txt: []string{tc.txt}}}
					adv.Load().handle(packet(t, probe, neighbour))
				})
			}
			a, _ := testAdvertiser(t, clk, fp, adv.Store)
			claim(t, clk, fp)
			probes, _ := fp.count()
			// Deferring: the first probe, then three after the second's wait.
			want := 3
			if tc.wantDefer {
				want = 4
			}
			if probes != want {
				t.Errorf("%d probes before the names were claimed, want %d", probes, want)
			}
			if _, h := a.Names(); h != "jinid-test.local." {
				t.Errorf("renamed to %s", h)
			}
		})
	}
}

func TestCompareRecords(t *testing.T) {
	a := []dns.RR{srvOf("x.local.", "a.local.", 1)}
	b := []dns.RR{srvOf("x.local.", "a.local.", 2)}
	if compareRecords(a, b) >= 0 || compareRecords(b, a) <= 0 || compareRecords(a, a) != 0 {
		t.Error("SRV records not ordered by their data")
	}
	txt := &dns.TXT{Hdr: dns.RR_Header{Name: "x.local.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 1}, Txt: []string{"a"}}
	if compareRecords([]dns.RR{txt}, append([]dns.RR{txt}, a...)) >= 0 {
		t.Error("a set that runs out first is not the earlier")
	}
	// Sorted by type first: a TXT (16) comes before an SRV (33).
	if compareRecords([]dns.RR{txt}, a) >= 0 {
		t.Error("records not ordered by type")
	}
	if !strings.Contains(recordKey(a[0]), "x.local.") {
		t.Error(recordKey(a[0]))
	}
}

// FuzzHandle: no message, however crafted, panics the responder or
// makes it answer more than once a second per record.
func FuzzHandle(f *testing.F) {
	q := new(dns.Msg)
	q.SetQuestion("jinid-test._jini._tcp.local.", dns.TypeANY)
	b, _ := q.Pack()
	f.Add(b, uint16(5353))
	r := new(dns.Msg)
	r.Response = true
	r.Answer = []dns.RR{srvOf("jinid-test._jini._tcp.local.", "x.local.", 1)}
	b, _ = r.Pack()
	f.Add(b, uint16(5353))
	f.Fuzz(func(t *testing.T, data []byte, srcPort uint16) {
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		fp := &fakePort{}
		cfg := AdvertiserConfig{ServiceID: discovery.ServiceID{1}, Port: func() int { return 4160 }, Groups: func() []string { return nil },
			Clock: clk, Logger: slog.New(slog.DiscardHandler)}
		a := newAdvertiser(cfg, "jinid-test", nil)
		a.port, a.claimed = fp, true
		p := mcast.Packet{Data: data, Src: netip.AddrPortFrom(neighbour.Addr(), srcPort), IfIndex: 1, Family: 4, Subnets: []netip.Prefix{lanSubnet}}
		a.handle(p)
		a.handle(p)
		if m, _ := fp.answers(); len(m) > 1 && srcPort == mdnsPort {
			t.Fatalf("the same query answered twice by multicast at once")
		}
	})
}

// Package dnssd advertises the lookup service over DNS-SD (mDNS) as
// _jini._tcp.local. It is apart from announce because miekg/dns fills
// tables of every record type at init in whatever binary imports it
// (0.45 MB of the mips daemon): the router build does without it and
// leaves mDNS to the system's responder (OpenWrt's umdns).
package dnssd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
)

// The times of RFC 6762: three probes 250 ms apart before a name is
// used (§8.1), two announcements a second apart once it is (§8.3), and a
// second's wait after losing a simultaneous probe (§8.2). After 15
// conflicts within 10 s, each new attempt waits 5 s (§8.1): a host that
// answers every probe with a conflict costs a few packets a second, not
// a storm. A record is multicast on an interface at most once a second
// (every 250 ms to defend a name against a probe, §6).
const (
	probeInterval    = 250 * time.Millisecond
	probes           = 3
	announceInterval = time.Second
	announcements    = 2
	maxRenames       = 100
	lostTieWait      = time.Second
	conflictBurst    = 15
	conflictWindow   = 10 * time.Second
	conflictBackoff  = 5 * time.Second
	recordInterval   = time.Second
	defendInterval   = 250 * time.Millisecond
	// maxSent bounds the record of when each record was last multicast
	// on each interface (records are ours: it grows only with
	// interfaces coming and going).
	maxSent = 1024
)

// DNS-SD names.
const (
	ServiceType = "_jini._tcp.local."
	servicesDNS = "_services._dns-sd._udp.local."
	mdnsPort    = 5353
)

// The mDNS groups.
var (
	MDNSGroupV4 = netip.AddrFrom4([4]byte{224, 0, 0, 251})
	MDNSGroupV6 = netip.MustParseAddr("ff02::fb")
)

// AdvertiserConfig configures DNS-SD advertising.
type AdvertiserConfig struct {
	ServiceID discovery.ServiceID
	Port      func() int // unicast discovery port
	// APIURL is the API's base URL for a peer on the interface with
	// address local, "" for none it can reach.
	APIURL func(local netip.Addr) string
	Groups func() []string
	// Host is the namespace's multicast host: mDNS takes its port 5353
	// there, on the interfaces Jini discovery serves.
	Host   *mcast.Host
	Logger *slog.Logger
	// Clock runs the probes and announcements (default: real time).
	Clock clock.Clock
	// Name is the base of the instance and host names: one DNS label
	// (letters, digits, hyphens). Empty means jinid-<the ServiceID's
	// first 8 hex digits>; the nodes of a cluster, which share one
	// ServiceID, each add their own (NodeName).
	Name string
}

// maxName leaves room in a 63-byte label for the suffix a rename adds
// ("-12").
const maxName = 59

// NodeName is the base name of a cluster's node: jinid-<the ServiceID's
// first 8 hex digits>-<node>, the node's name made a DNS label (lower
// case; anything but letters, digits and hyphens a hyphen), cut to fit.
func NodeName(id discovery.ServiceID, node string) string {
	b := []byte("jinid-" + id.String()[:8] + "-")
	for _, c := range []byte(strings.ToLower(node)) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b = append(b, c)
		} else {
			b = append(b, '-')
		}
	}
	return strings.TrimRight(string(b[:min(len(b), maxName)]), "-")
}

// validName says whether name can be the base of the advertiser's names.
func validName(name string) error {
	if name == "" || len(name) > maxName || name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("mDNS name %q: want 1 to %d letters, digits or inner hyphens", name, maxName)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("mDNS name %q: %q is not a letter, digit or hyphen", name, c)
		}
	}
	return nil
}

// Service is another service published beside the lookup service: a
// static service with an endpoint, under a DNS-SD type of its own, so
// that avahi-browse users see it.
type Service struct {
	// Instance is its instance name ("lobby"), Type its DNS-SD type
	// ("_ipp._tcp"), HostLabel the host name its address is published
	// under ("lobby" for lobby.local).
	Instance, Type, HostLabel string
	Addr                      netip.Addr
	Port                      int
	TXT                       []string
}

// extra is a Service as claimed: its names now (renamed on a conflict).
type extra struct {
	Service
	renames        int
	instance, host string
}

func (e *extra) setNames() {
	inst, host := e.Instance, e.HostLabel
	if e.renames > 0 {
		n := strconv.Itoa(e.renames + 1)
		inst, host = inst+" ("+n+")", host+"-"+n
	}
	e.instance = escapeLabel(inst) + "." + e.Type + ".local."
	e.host = escapeLabel(host) + ".local."
}

// escapeLabel is a name as one DNS label in miekg/dns's text form: dots
// and spaces, which a DNS-SD instance name may have, escaped.
func escapeLabel(s string) string {
	r := strings.NewReplacer(".", `\.`, " ", `\ `, `\`, `\\`, "(", `\(`, ")", `\)`, ";", `\;`, `"`, `\"`)
	return r.Replace(s)
}

// port is what the advertiser needs of its mDNS port (a *mcast.Port; a
// test's fake).
type port interface {
	SendTo(dst func(family int) netip.Addr, build func(mcast.Joined) ([][]byte, error)) error
	SendReply(ifIndex, family int, dst netip.AddrPort, b []byte) error
	Joined() []mcast.Joined
	IsLocal(netip.Addr) bool
	Close() error
}

// Advertiser claims its names as RFC 6762 asks (probing, renaming on a
// conflict, announcing), then answers mDNS queries for the lookup
// service.
type Advertiser struct {
	cfg     AdvertiserConfig
	open    func(mcast.PortConfig) (port, error)
	port    port
	base    string // jinid-<ServiceID's first 8 hex digits>, or Name
	stopped atomic.Bool

	mu         sync.Mutex
	instance   string // <name>._jini._tcp.local.
	host       string // <name>.local.
	claimed    bool   // probed: it answers and announces
	renames    int
	conflicted bool          // another host claims a name of ours
	conflict   chan struct{} // poked on a conflict, or a change of interfaces
	extras     []*extra
	reprobe    bool // the services changed: claim the names again
	// lostNames are the names of ours another host claimed, lower case:
	// the ones a rename changes.
	lostNames map[string]bool
	// lostTie: another host probing for a name of ours at the same time
	// won the tie-break (§8.2): wait a second and probe again.
	lostTie bool
	// conflictTimes are the last conflicts' times (conflictBurst at
	// most), for §8.1's rate limit; slow, that a burst of them came,
	// and attempts wait until none came for conflictWindow.
	conflictTimes []time.Time
	slow          bool
	// sent is when each record was last multicast on each interface.
	sent map[sentKey]time.Time
	// renamedTo are the names a rename was logged for (once each).
	renamedTo map[string]bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewAdvertiser prepares DNS-SD advertising; Start begins it. The
// instance and host names carry the ServiceID, so several lookup services
// on one LAN (or one host) never clash.
func NewAdvertiser(cfg AdvertiserConfig) (*Advertiser, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	name := cmp.Or(cfg.Name, "jinid-"+cfg.ServiceID.String()[:8])
	if err := validName(name); err != nil {
		return nil, err
	}
	if cfg.Host == nil {
		return nil, errors.New("mDNS: AdvertiserConfig.Host is required")
	}
	return newAdvertiser(cfg, name, func(pc mcast.PortConfig) (port, error) { return cfg.Host.Open(pc) }), nil
}

func newAdvertiser(cfg AdvertiserConfig, name string, open func(mcast.PortConfig) (port, error)) *Advertiser {
	a := &Advertiser{cfg: cfg, open: open, base: name, conflict: make(chan struct{}, 1),
		sent: map[sentKey]time.Time{}, renamedTo: map[string]bool{}}
	a.setName(name)
	return a
}

func (a *Advertiser) setName(name string) {
	a.instance, a.host = name+"."+ServiceType, name+".local."
}

// Names are the instance and host names the advertiser uses now.
func (a *Advertiser) Names() (instance, host string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.instance, a.host
}

// SetServices sets the other services published: those gone get their
// goodbye, and the names are claimed again (probes, announcements) with
// the new ones.
func (a *Advertiser) SetServices(services []Service) {
	a.mu.Lock()
	old := a.extras
	byKey := map[string]*extra{}
	for _, e := range old {
		byKey[e.Type+"\x00"+e.Instance] = e
	}
	var now []*extra
	changed := len(services) != len(old)
	for _, sv := range services {
		k := sv.Type + "\x00" + sv.Instance
		e := byKey[k]
		if e == nil || !reflect.DeepEqual(e.Service, sv) {
			e = &extra{Service: sv}
			e.setNames()
			changed = true
		} else {
			delete(byKey, k) // kept as is
		}
		now = append(now, e)
	}
	if !changed {
		a.mu.Unlock()
		return
	}
	var gone []*extra
	for _, e := range byKey {
		gone = append(gone, e)
	}
	a.extras = now
	claimed := a.claimed
	a.reprobe = true
	a.mu.Unlock()
	if claimed && len(gone) > 0 && a.port != nil {
		a.goodbye(gone)
	}
	a.poke()
}

// goodbye says a service's records are gone (TTL 0).
func (a *Advertiser) goodbye(gone []*extra) {
	err := a.port.SendTo(mdnsGroup, func(j mcast.Joined) ([][]byte, error) {
		m := new(dns.Msg)
		m.Response, m.Authoritative = true, true
		for _, e := range gone {
			m.Answer = append(m.Answer, e.records(j, 0, false)...)
		}
		b, err := m.Pack()
		return [][]byte{b}, err
	})
	if err != nil {
		a.cfg.Logger.Debug("mDNS goodbye of a service removed", "err", err)
	}
}

// Start joins the mDNS group and begins claiming the names: probes,
// then announcements; it answers queries once they are claimed.
func (a *Advertiser) Start(context.Context) error {
	port, err := a.open(mcast.PortConfig{Port: mdnsPort, Groups: []netip.Addr{MDNSGroupV4, MDNSGroupV6}, TTL: 255,
		OnPacket: a.handle, OnChange: a.poke, OnLeave: a.leave})
	if err != nil {
		return fmt.Errorf("mDNS: %w", err)
	}
	a.port = port
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(1)
	go a.run(ctx)
	return nil
}

// Shutdown says goodbye (records with TTL 0) if the names were claimed,
// and stops answering.
func (a *Advertiser) Shutdown(context.Context) error {
	if a.port == nil || a.stopped.Swap(true) {
		return nil
	}
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	claimed := a.claimed
	a.mu.Unlock()
	if claimed {
		a.announce(0)
	}
	return a.port.Close()
}

// leave says goodbye on an interface no longer served (its address
// went, it was excluded), from its socket before it closes: peers there
// forget the records now, not when their TTL ends.
func (a *Advertiser) leave(j mcast.Joined, send func(netip.AddrPort, []byte) error) {
	a.mu.Lock()
	claimed := a.claimed
	a.mu.Unlock()
	if !claimed || a.stopped.Load() {
		return
	}
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	m.Answer = a.records(j, 0, true)
	b, err := m.Pack()
	if err == nil {
		err = send(netip.AddrPortFrom(mdnsGroup(j.Family), mdnsPort), b)
	}
	if err != nil {
		a.cfg.Logger.Debug("mDNS goodbye on an interface left", "interface", j.Name, "err", err)
	}
}

// poke wakes the claimer: a conflict, or the served interfaces changed.
func (a *Advertiser) poke() {
	select {
	case a.conflict <- struct{}{}:
	default:
	}
}

// run claims the names and keeps them: probe, announce, and on a
// conflict take the next name (jinid-1a2b3c4d-2, -3, ...) and begin
// again; when the served interfaces change, announce again.
func (a *Advertiser) run(ctx context.Context) {
	defer a.wg.Done()
	for {
		if d := a.backoff(); d > 0 && !a.sleep(ctx, d) {
			return
		}
		if !a.probe(ctx) {
			if ctx.Err() != nil {
				return
			}
			a.restart(ctx)
			continue
		}
		a.mu.Lock()
		a.claimed = true
		a.mu.Unlock()
		if !a.announceClaimed(ctx) {
			if ctx.Err() != nil {
				return
			}
			a.restart(ctx)
			continue
		}
		// Claimed: wait for a conflict or a change of interfaces.
		select {
		case <-ctx.Done():
			return
		case <-a.conflict:
			// Announce again on what is served now; a conflict seen
			// while claimed is handled by handle marking it.
			if a.lost() {
				a.rename()
			}
		}
	}
}

// probe sends the probes and says whether no one else claims the
// names meanwhile.
func (a *Advertiser) probe(ctx context.Context) bool {
	a.drain()
	for range probes {
		a.sendProbe()
		if !a.wait(ctx, probeInterval) {
			return false
		}
	}
	return true
}

// announceClaimed announces the records twice, a second apart.
func (a *Advertiser) announceClaimed(ctx context.Context) bool {
	for i := range announcements {
		a.announce(120)
		if i < announcements-1 && !a.wait(ctx, announceInterval) {
			return false
		}
	}
	return true
}

// wait waits d; false if ctx ended or someone else claims the names.
func (a *Advertiser) wait(ctx context.Context, d time.Duration) bool {
	// What was heard before the wait began (an answer to the probe just
	// sent, handled at once) cuts it as surely as what comes during it;
	// so does what is heard as the wait ends (select picks at random
	// among ready cases).
	cut := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.conflicted || a.reprobe || a.lostTie
	}
	if cut() {
		return false
	}
	done := make(chan struct{})
	t := a.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-done:
			return !cut()
		case <-a.conflict:
			if cut() {
				return false
			}
		}
	}
}

// restart follows a claim cut short: by a conflict, which renames what
// was lost, by a simultaneous probe that won the tie-break, after which
// the same names are probed again a second later, or by a change of the
// services, which claims the names again as they are.
func (a *Advertiser) restart(ctx context.Context) {
	a.mu.Lock()
	a.reprobe = false
	tie := a.lostTie
	a.lostTie = false
	a.mu.Unlock()
	if a.lost() {
		a.rename()
		return
	}
	if tie {
		a.sleep(ctx, lostTieWait)
	}
}

// backoff is how long to wait before the next attempt to claim the
// names: conflictBackoff once conflictBurst conflicts came within
// conflictWindow (RFC 6762 §8.1), else nothing.
//
// Once slow, it stays so until conflictWindow passes without a
// conflict: read to the letter (15 within any 10 s), the rule would let
// a host that answers every probe have a burst of 15 every 10 s.
func (a *Advertiser) backoff() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.cfg.Clock.Now()
	n := len(a.conflictTimes)
	switch {
	case n > 0 && now.Sub(a.conflictTimes[n-1]) >= conflictWindow:
		a.slow, a.conflictTimes = false, nil
	case n == conflictBurst && now.Sub(a.conflictTimes[0]) < conflictWindow:
		a.slow = true
	}
	if a.slow {
		return conflictBackoff
	}
	return 0
}

// sleep waits d on the advertiser's clock, whatever is heard meanwhile;
// false if ctx ended.
func (a *Advertiser) sleep(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	t := a.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-done:
		return true
	}
}

// lost says whether a conflict was seen (and forgets it).
func (a *Advertiser) lost() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.conflicted
	a.conflicted = false
	return l
}

// drain forgets pokes and conflicts from before this claim.
func (a *Advertiser) drain() {
	select {
	case <-a.conflict:
	default:
	}
	a.lost()
	a.mu.Lock()
	a.reprobe, a.lostNames, a.lostTie = false, nil, false
	a.mu.Unlock()
}

// rename takes the next name, jinid-1a2b3c4d-2, -3, ... (RFC 6763's
// "Name (2)", as host names allow), and gives up answering until it is
// claimed.
func (a *Advertiser) rename() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.claimed = false
	lost := a.lostNames
	a.lostNames = nil
	extraLost := false
	for _, e := range a.extras {
		if lost[strings.ToLower(e.instance)] || lost[strings.ToLower(e.host)] {
			extraLost = true
			e.renames = e.renames%maxRenames + 1
			e.setNames()
			if a.firstRename(e.instance) {
				a.cfg.Logger.Info("mDNS name of a static service in use on the LAN; renamed", "name", e.instance)
			}
		}
	}
	if extraLost && !lost[strings.ToLower(a.instance)] && !lost[strings.ToLower(a.host)] {
		return
	}
	a.renames = a.renames%maxRenames + 1
	name := a.base + "-" + strconv.Itoa(a.renames+1)
	if a.firstRename(name) {
		a.cfg.Logger.Info("mDNS name in use on the LAN; renamed", "name", name)
	}
	a.setName(name)
}

// firstRename says whether a rename to name is the first: each is
// logged once (a host claiming every name jinid tries would otherwise
// fill the log). Called with mu held.
func (a *Advertiser) firstRename(name string) bool {
	if a.renamedTo[name] {
		return false
	}
	if len(a.renamedTo) >= 4*maxRenames {
		clear(a.renamedTo)
	}
	a.renamedTo[name] = true
	return true
}

// markConflict records that another host claims a name of ours.
func (a *Advertiser) markConflict(name string) {
	a.mu.Lock()
	if len(a.conflictTimes) == conflictBurst {
		a.conflictTimes = a.conflictTimes[1:]
	}
	a.conflictTimes = append(a.conflictTimes, a.cfg.Clock.Now())
	a.conflicted = true
	if a.lostNames == nil {
		a.lostNames = map[string]bool{}
	}
	a.lostNames[strings.ToLower(name)] = true
	a.mu.Unlock()
	a.poke()
}

// sendProbe sends one probe on every served interface: a query for the
// names, with the records it would claim in its authority section
// (§8.1).
func (a *Advertiser) sendProbe() {
	err := a.port.SendTo(mdnsGroup, func(j mcast.Joined) ([][]byte, error) {
		rrs := a.records(j, 120, false)
		instance, host := a.Names()
		m := new(dns.Msg)
		m.Question = []dns.Question{{Name: instance, Qtype: dns.TypeANY, Qclass: dns.ClassINET}, {Name: host, Qtype: dns.TypeANY, Qclass: dns.ClassINET}}
		a.mu.Lock()
		for _, e := range a.extras {
			m.Question = append(m.Question, dns.Question{Name: e.instance, Qtype: dns.TypeANY, Qclass: dns.ClassINET},
				dns.Question{Name: e.host, Qtype: dns.TypeANY, Qclass: dns.ClassINET})
		}
		a.mu.Unlock()
		for _, rr := range rrs {
			if h := rr.Header(); h.Rrtype != dns.TypePTR {
				m.Ns = append(m.Ns, rr)
			}
		}
		b, err := m.Pack()
		return [][]byte{b}, err
	})
	if err != nil {
		a.cfg.Logger.Debug("mDNS probe", "err", err)
	}
}

var _ lifecycle.Service = (*Advertiser)(nil)

func (a *Advertiser) announce(ttl uint32) {
	err := a.port.SendTo(mdnsGroup, func(j mcast.Joined) ([][]byte, error) {
		m := new(dns.Msg)
		m.Response, m.Authoritative = true, true
		m.Answer = a.due(j, a.records(j, ttl, true), 0) // all of them, noted as multicast now
		b, err := m.Pack()
		return [][]byte{b}, err
	})
	if err != nil {
		a.cfg.Logger.Debug("mDNS announcement", "err", err)
	}
}

func mdnsGroup(family int) netip.Addr {
	if family == 4 {
		return MDNSGroupV4
	}
	return MDNSGroupV6
}

// records are the service's: PTR, SRV, TXT and the interface's address.
func (a *Advertiser) records(j mcast.Joined, ttl uint32, all bool) []dns.RR {
	hdr := func(name string, t uint16, unique bool) dns.RR_Header {
		class := uint16(dns.ClassINET)
		if unique {
			class |= 1 << 15 // cache-flush: these records are ours alone
		}
		return dns.RR_Header{Name: name, Rrtype: t, Class: class, Ttl: ttl}
	}
	instance, host := a.Names()
	groups := a.cfg.Groups()
	txt := []string{"txtvers=1", "serviceID=" + a.cfg.ServiceID.String(), "groups=" + strings.Join(groups, ",")}
	if a.cfg.APIURL != nil {
		if u := a.cfg.APIURL(j.Addr); u != "" {
			txt = append(txt, "api="+u+"/")
		}
	}
	rrs := []dns.RR{
		&dns.PTR{Hdr: hdr(ServiceType, dns.TypePTR, false), Ptr: instance},
		&dns.SRV{Hdr: hdr(instance, dns.TypeSRV, true), Port: uint16(a.cfg.Port()), Target: host},
		&dns.TXT{Hdr: hdr(instance, dns.TypeTXT, true), Txt: txt},
	}
	if j.Addr.Is4() {
		rrs = append(rrs, &dns.A{Hdr: hdr(host, dns.TypeA, true), A: j.Addr.AsSlice()})
	} else {
		rrs = append(rrs, &dns.AAAA{Hdr: hdr(host, dns.TypeAAAA, true), AAAA: j.Addr.AsSlice()})
	}
	a.mu.Lock()
	extras := slices.Clone(a.extras)
	a.mu.Unlock()
	for _, e := range extras {
		rrs = append(rrs, e.records(j, ttl, all)...)
	}
	if !all {
		return rrs
	}
	return append(rrs, &dns.PTR{Hdr: hdr(servicesDNS, dns.TypePTR, false), Ptr: ServiceType})
}

// records are a service's: PTR, SRV, TXT, its address, and with all its
// type's PTR for the enumeration of types.
func (e *extra) records(j mcast.Joined, ttl uint32, all bool) []dns.RR {
	hdr := func(name string, t uint16, unique bool) dns.RR_Header {
		class := uint16(dns.ClassINET)
		if unique {
			class |= 1 << 15
		}
		return dns.RR_Header{Name: name, Rrtype: t, Class: class, Ttl: ttl}
	}
	typ := e.Type + ".local."
	txt := e.TXT
	if len(txt) == 0 {
		txt = []string{""}
	}
	rrs := []dns.RR{
		&dns.PTR{Hdr: hdr(typ, dns.TypePTR, false), Ptr: e.instance},
		&dns.SRV{Hdr: hdr(e.instance, dns.TypeSRV, true), Port: uint16(e.Port), Target: e.host},
		&dns.TXT{Hdr: hdr(e.instance, dns.TypeTXT, true), Txt: txt},
	}
	if e.Addr.Is4() {
		rrs = append(rrs, &dns.A{Hdr: hdr(e.host, dns.TypeA, true), A: e.Addr.AsSlice()})
	} else {
		rrs = append(rrs, &dns.AAAA{Hdr: hdr(e.host, dns.TypeAAAA, true), AAAA: e.Addr.AsSlice()})
	}
	if all {
		rrs = append(rrs, &dns.PTR{Hdr: hdr(servicesDNS, dns.TypePTR, false), Ptr: typ})
	}
	return rrs
}

// handle takes an mDNS message heard on a served interface: a response
// claiming a name of ours, a probe for one while we probe, or a query
// to answer. What a host off the interface's link sent is ignored (RFC
// 6762 §11): an answer to it would go through a router, a reflector for
// whoever forged the source.
func (a *Advertiser) handle(p mcast.Packet) {
	if !p.OnLink(p.Src.Addr()) {
		return
	}
	var q dns.Msg
	if err := q.Unpack(p.Data); err != nil || q.Opcode != dns.OpcodeQuery {
		return
	}
	if q.Response {
		// Another host's record that truly conflicts with one of ours
		// (§9): the name is taken.
		for _, rr := range append(slices.Clip(q.Answer), q.Extra...) {
			if a.conflicts(rr) {
				a.markConflict(rr.Header().Name)
				return
			}
		}
		return
	}
	var j mcast.Joined
	for _, x := range a.port.Joined() {
		if x.Index == p.IfIndex && x.Family == p.Family {
			j = x
		}
	}
	if !j.Addr.IsValid() {
		return
	}
	a.mu.Lock()
	claimed := a.claimed
	a.mu.Unlock()
	if !claimed {
		// Another host probing for a name we are probing for too: the
		// tie-break of §8.2 says who goes on.
		if a.losesTie(&q, j) {
			a.mu.Lock()
			a.lostTie = true
			a.mu.Unlock()
			a.poke()
		}
		return
	}
	a.answer(&q, p, j)
}

// answer answers query q, heard in p on interface j: by multicast, each
// record at most once a second on the interface (every 250 ms for a
// probe, to defend the name), none the asker listed as known with at
// least half its TTL left (§7.1); or straight to the asker when it asked
// from a port other than 5353 (a "legacy" one-shot resolver, §6.7).
func (a *Advertiser) answer(q *dns.Msg, p mcast.Packet, j mcast.Joined) {
	all := a.records(j, 120, false)
	var answers, extra []dns.RR
	for _, qs := range q.Question {
		name := strings.ToLower(qs.Name)
		for _, rr := range all {
			h := rr.Header()
			if strings.ToLower(h.Name) == name && (qs.Qtype == h.Rrtype || qs.Qtype == dns.TypeANY) && !containsRR(answers, rr) {
				answers = append(answers, rr)
			}
		}
		if name == servicesDNS && (qs.Qtype == dns.TypePTR || qs.Qtype == dns.TypeANY) {
			types := []string{ServiceType}
			a.mu.Lock()
			for _, e := range a.extras {
				if t := e.Type + ".local."; !slices.Contains(types, t) {
					types = append(types, t)
				}
			}
			a.mu.Unlock()
			for _, t := range types {
				answers = append(answers, &dns.PTR{Hdr: dns.RR_Header{Name: servicesDNS, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 4500}, Ptr: t})
			}
		}
	}
	legacy := p.Src.Port() != mdnsPort
	if !legacy {
		answers = slices.DeleteFunc(answers, func(rr dns.RR) bool { return known(q.Answer, rr) })
	}
	if len(answers) == 0 {
		return
	}
	for _, rr := range all {
		if !containsRR(answers, rr) && !known(q.Answer, rr) {
			extra = append(extra, rr)
		}
	}
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	dst := netip.AddrPortFrom(mdnsGroup(p.Family), mdnsPort)
	if legacy {
		// Same ID, the question echoed, short TTLs, straight back.
		m.Id, m.Question = q.Id, q.Question
		for _, rr := range append(slices.Clip(answers), extra...) {
			rr.Header().Ttl = min(rr.Header().Ttl, 10)
			rr.Header().Class &^= 1 << 15
		}
		dst = p.Src
	} else {
		every := recordInterval
		if len(q.Ns) > 0 {
			every = defendInterval
		}
		answers = a.due(j, answers, every)
		if len(answers) == 0 {
			return
		}
		extra = a.due(j, extra, recordInterval)
	}
	m.Answer, m.Extra = answers, extra
	b, err := m.Pack()
	if err != nil {
		return
	}
	if err := a.port.SendReply(p.IfIndex, p.Family, dst, b); err != nil {
		a.cfg.Logger.Debug("mDNS answer", "to", dst, "err", err)
	}
}

// sentKey is a record multicast on an interface.
type sentKey struct {
	index, family int
	record        string
}

// due keeps of rrs those not multicast on interface j within every, and
// notes them as multicast now.
func (a *Advertiser) due(j mcast.Joined, rrs []dns.RR, every time.Duration) []dns.RR {
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sent) >= maxSent {
		for k, at := range a.sent {
			if now.Sub(at) >= recordInterval {
				delete(a.sent, k)
			}
		}
	}
	var out []dns.RR
	for _, rr := range rrs {
		k := sentKey{j.Index, j.Family, recordKey(rr)}
		if at, ok := a.sent[k]; ok && now.Sub(at) < every {
			continue
		}
		if len(a.sent) < maxSent {
			a.sent[k] = now
		}
		out = append(out, rr)
	}
	return out
}

// recordKey names a record by its name, type and data.
func recordKey(rr dns.RR) string {
	c := dns.Copy(rr)
	c.Header().Ttl, c.Header().Class = 0, dns.ClassINET
	c.Header().Name = strings.ToLower(c.Header().Name)
	return c.String()
}

// known says the asker listed rr among the answers it knows, with at
// least half its TTL left (§7.1).
func known(knownAnswers []dns.RR, rr dns.RR) bool {
	for _, k := range knownAnswers {
		if k.Header().Ttl >= rr.Header().Ttl/2 && sameRData(k, rr) {
			return true
		}
	}
	return false
}

// conflicts says rr, heard in another host's response, conflicts with a
// record of ours (§9): the same name, type and class as one we alone may
// have (SRV and TXT of an instance, A and AAAA of a host), with other
// data. Records of other types, the shared PTRs, and our own records
// heard back do not.
func (a *Advertiser) conflicts(rr dns.RR) bool {
	h := rr.Header()
	if h.Class&^(1<<15) != dns.ClassINET {
		return false
	}
	var names []string
	switch h.Rrtype {
	case dns.TypeSRV, dns.TypeTXT:
		names = a.instances()
	case dns.TypeA, dns.TypeAAAA:
		names = a.hosts()
	default:
		return false
	}
	n := strings.ToLower(h.Name)
	return slices.ContainsFunc(names, func(x string) bool { return strings.ToLower(x) == n }) && !a.ours(rr)
}

// instances and hosts are the instance and host names we claim now.
func (a *Advertiser) instances() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []string{a.instance}
	for _, e := range a.extras {
		out = append(out, e.instance)
	}
	return out
}

func (a *Advertiser) hosts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []string{a.host}
	for _, e := range a.extras {
		out = append(out, e.host)
	}
	return out
}

// losesTie says whether query q, heard on interface j while we probe,
// is another host's probe for a name we probe for that wins the
// tie-break of §8.2: its proposed records (the authority section) for
// the name, sorted, compared with ours as bytes (class, type, data),
// are lexicographically later. Our own probes heard back tie, and lose
// nothing.
func (a *Advertiser) losesTie(q *dns.Msg, j mcast.Joined) bool {
	if len(q.Ns) == 0 {
		return false
	}
	mine := a.records(j, 120, false)
	for _, qs := range q.Question {
		name := strings.ToLower(qs.Name)
		theirs := namedRecords(q.Ns, name)
		if len(theirs) == 0 || !slices.ContainsFunc(theirs, func(rr dns.RR) bool { return !a.ours(rr) }) {
			continue
		}
		ours := namedRecords(mine, name)
		if len(ours) > 0 && compareRecords(ours, theirs) < 0 {
			return true
		}
	}
	return false
}

// namedRecords are those of rrs named name (lower case).
func namedRecords(rrs []dns.RR, name string) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if strings.ToLower(rr.Header().Name) == name && rr.Header().Rrtype != dns.TypePTR {
			out = append(out, rr)
		}
	}
	return out
}

// compareRecords compares two sets of records as §8.2 asks: each sorted
// by class, type and data, then pairwise; the first that differ decide,
// and a set that runs out first is the earlier.
func compareRecords(x, y []dns.RR) int {
	bx, by := sortedRData(x), sortedRData(y)
	for i := range min(len(bx), len(by)) {
		if c := bytes.Compare(bx[i], by[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(bx), len(by))
}

// sortedRData are the records as class, type and data bytes (the cache
// flush bit off, names uncompressed), sorted.
func sortedRData(rrs []dns.RR) [][]byte {
	var out [][]byte
	for _, rr := range rrs {
		c := dns.Copy(rr)
		h := c.Header()
		h.Class &^= 1 << 15
		buf := make([]byte, dns.Len(c)+16)
		off, err := dns.PackRR(c, buf, 0, nil, false)
		if err != nil {
			continue
		}
		nameLen, err := dns.PackDomainName(h.Name, make([]byte, 256), 0, nil, false)
		if err != nil || nameLen+10 > off {
			continue
		}
		// class, type, then the data (the TTL and length left out).
		b := append(binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, h.Class), h.Rrtype), buf[nameLen+10:off]...)
		out = append(out, b)
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// ours says rr is one of this advertiser's own records, heard back from
// any interface it serves (the same SRV, a TXT of this ServiceID, an
// address of one of its interfaces).
func (a *Advertiser) ours(rr dns.RR) bool {
	_, host := a.Names()
	a.mu.Lock()
	extras := slices.Clone(a.extras)
	a.mu.Unlock()
	for _, e := range extras {
		for _, mine := range e.records(mcast.Joined{}, 0, false) {
			if sameRData(mine, rr) {
				return true
			}
		}
	}
	switch r := rr.(type) {
	case *dns.SRV:
		return strings.EqualFold(r.Target, host) && int(r.Port) == a.cfg.Port()
	case *dns.TXT:
		return slices.Contains(r.Txt, "serviceID="+a.cfg.ServiceID.String())
	case *dns.A:
		return a.isOwnAddr(r.A)
	case *dns.AAAA:
		return a.isOwnAddr(r.AAAA)
	}
	return false // NSEC and anything else: not what jinid says
}

// sameRData says two records are the same but for TTL and class.
func sameRData(a, b dns.RR) bool {
	ha, hb := *a.Header(), *b.Header()
	if ha.Rrtype != hb.Rrtype || !strings.EqualFold(ha.Name, hb.Name) {
		return false
	}
	ca, cb := dns.Copy(a), dns.Copy(b)
	ca.Header().Ttl, cb.Header().Ttl = 0, 0
	ca.Header().Class, cb.Header().Class = dns.ClassINET, dns.ClassINET
	return dns.IsDuplicate(ca, cb)
}

func (a *Advertiser) isOwnAddr(ip []byte) bool {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	// Any address of the host, not only of the interfaces served: an
	// announcement of ours sent on an interface being left can still be
	// heard back once it is no longer listed as served.
	return a.port.IsLocal(addr)
}

func containsRR(rrs []dns.RR, rr dns.RR) bool {
	for _, x := range rrs {
		if x == rr {
			return true
		}
	}
	return false
}

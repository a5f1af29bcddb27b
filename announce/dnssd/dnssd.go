// Package dnssd advertises the lookup service over DNS-SD (mDNS) as
// _jini._tcp.local. It is apart from announce because miekg/dns fills
// tables of every record type at init in whatever binary imports it
// (0.45 MB of the mips daemon): the router build does without it and
// leaves mDNS to the system's responder (OpenWrt's umdns).
package dnssd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/lifecycle"
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
}

// Advertiser answers mDNS queries for the lookup service.
type Advertiser struct {
	cfg      AdvertiserConfig
	port     *mcast.Port
	instance string // <name>._jini._tcp.local.
	host     string // <name>.local.
	stopped  atomic.Bool
}

// NewAdvertiser prepares DNS-SD advertising; Start begins it. The
// instance and host names carry the ServiceID, so several lookup services
// on one LAN (or one host) never clash.
func NewAdvertiser(cfg AdvertiserConfig) (*Advertiser, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	name := "jinid-" + cfg.ServiceID.String()[:8]
	if cfg.Host == nil {
		return nil, errors.New("mDNS: AdvertiserConfig.Host is required")
	}
	return &Advertiser{cfg: cfg, instance: name + "." + ServiceType, host: name + ".local."}, nil
}

// Start joins the mDNS group and announces the service once.
func (a *Advertiser) Start(context.Context) error {
	port, err := a.cfg.Host.Open(mcast.PortConfig{Port: mdnsPort, Groups: []netip.Addr{MDNSGroupV4, MDNSGroupV6}, TTL: 255,
		OnPacket: a.handle})
	if err != nil {
		return fmt.Errorf("mDNS: %w", err)
	}
	a.port = port
	a.announce(120)
	return nil
}

// Shutdown says goodbye (records with TTL 0) and stops answering.
func (a *Advertiser) Shutdown(context.Context) error {
	if a.port == nil || a.stopped.Swap(true) {
		return nil
	}
	a.announce(0)
	return a.port.Close()
}

var _ lifecycle.Service = (*Advertiser)(nil)

func (a *Advertiser) announce(ttl uint32) {
	err := a.port.SendTo(mdnsGroup, func(j mcast.Joined) ([][]byte, error) {
		m := new(dns.Msg)
		m.Response, m.Authoritative = true, true
		m.Answer = a.records(j, ttl, true)
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
	groups := a.cfg.Groups()
	txt := []string{"txtvers=1", "serviceID=" + a.cfg.ServiceID.String(), "groups=" + strings.Join(groups, ",")}
	if a.cfg.APIURL != nil {
		if u := a.cfg.APIURL(j.Addr); u != "" {
			txt = append(txt, "api="+u+"/")
		}
	}
	rrs := []dns.RR{
		&dns.PTR{Hdr: hdr(ServiceType, dns.TypePTR, false), Ptr: a.instance},
		&dns.SRV{Hdr: hdr(a.instance, dns.TypeSRV, true), Port: uint16(a.cfg.Port()), Target: a.host},
		&dns.TXT{Hdr: hdr(a.instance, dns.TypeTXT, true), Txt: txt},
	}
	if j.Addr.Is4() {
		rrs = append(rrs, &dns.A{Hdr: hdr(a.host, dns.TypeA, true), A: j.Addr.AsSlice()})
	} else {
		rrs = append(rrs, &dns.AAAA{Hdr: hdr(a.host, dns.TypeAAAA, true), AAAA: j.Addr.AsSlice()})
	}
	if !all {
		return rrs
	}
	return append(rrs, &dns.PTR{Hdr: hdr(servicesDNS, dns.TypePTR, false), Ptr: ServiceType})
}

// handle answers a query about the service, on the interface it came in
// on: by multicast, or straight to the asker when it asked from a port
// other than 5353 (a "legacy" one-shot resolver).
func (a *Advertiser) handle(p mcast.Packet) {
	var q dns.Msg
	if err := q.Unpack(p.Data); err != nil || q.Response || q.Opcode != dns.OpcodeQuery {
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
	all := a.records(j, 120, false)
	var answers, extra []dns.RR
	for _, qs := range q.Question {
		name := strings.ToLower(qs.Name)
		for _, rr := range all {
			h := rr.Header()
			if strings.ToLower(h.Name) == name && (qs.Qtype == h.Rrtype || qs.Qtype == dns.TypeANY) {
				answers = append(answers, rr)
			}
		}
		if name == servicesDNS && (qs.Qtype == dns.TypePTR || qs.Qtype == dns.TypeANY) {
			answers = append(answers, &dns.PTR{Hdr: dns.RR_Header{Name: servicesDNS, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 4500}, Ptr: ServiceType})
		}
	}
	if len(answers) == 0 {
		return
	}
	for _, rr := range all {
		if !containsRR(answers, rr) {
			extra = append(extra, rr)
		}
	}
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	m.Answer, m.Extra = answers, extra
	dst := netip.AddrPortFrom(mdnsGroup(p.Family), mdnsPort)
	if p.Src.Port() != mdnsPort {
		// Legacy unicast (RFC 6762 §6.7): same ID, the question echoed,
		// short TTLs, straight back.
		m.Id, m.Question = q.Id, q.Question
		for _, rr := range append(m.Answer, m.Extra...) {
			rr.Header().Ttl = min(rr.Header().Ttl, 10)
			rr.Header().Class &^= 1 << 15
		}
		dst = p.Src
	}
	b, err := m.Pack()
	if err != nil {
		return
	}
	if err := a.port.SendReply(p.IfIndex, p.Family, dst, b); err != nil {
		a.cfg.Logger.Debug("mDNS answer", "to", dst, "err", err)
	}
}

func containsRR(rrs []dns.RR, rr dns.RR) bool {
	for _, x := range rrs {
		if x == rr {
			return true
		}
	}
	return false
}

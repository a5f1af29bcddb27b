package finder

import (
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"github.com/jinid/jinid/announce/dnssd"
	"github.com/jinid/jinid/discovery"
)

// ViaDNSSD: found by browsing _jini._tcp.local over mDNS.
const ViaDNSSD = "dns-sd"

// browse asks every served IPv4 interface for _jini._tcp.local from a
// port of its own (a one-shot mDNS query: answers come straight back),
// and runs unicast discovery with each lookup service the answers name.
func (f *finder) browse() error {
	var pc net.PacketConn
	if err := f.cfg.Namespace.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", ":0")
		return err
	}); err != nil {
		return err
	}
	f.closers = append(f.closers, func() { pc.Close() })
	p := ipv4.NewPacketConn(pc)
	q := new(dns.Msg)
	q.SetQuestion(dnssd.ServiceType, dns.TypePTR)
	query, err := q.Pack()
	if err != nil {
		return err
	}
	ask := func() {
		for _, j := range f.mc.Joined() {
			if j.Family != 4 {
				continue
			}
			if err := p.SetMulticastInterface(&net.Interface{Index: j.Index, Name: j.Name}); err != nil {
				continue
			}
			dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(dnssd.MDNSGroupV4, 5353))
			if _, err := pc.WriteTo(query, dst); err != nil {
				f.log.Debug("mDNS query", "interface", j.Name, "err", err)
			}
		}
	}
	f.goBusy(func() {
		ask()
		select { // once more, for answers lost the first time
		case <-time.After(time.Second):
			ask()
		case <-f.ctx.Done():
		}
	})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		srv := map[string]*dns.SRV{}
		addr := map[string]netip.Addr{}
		ids := map[string]string{}
		tried := map[string]bool{}
		buf := make([]byte, 9000)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:n]) != nil || !m.Response {
				continue
			}
			for _, rr := range append(m.Answer, m.Extra...) {
				name := strings.ToLower(rr.Header().Name)
				switch r := rr.(type) {
				case *dns.SRV:
					srv[name] = r
				case *dns.A:
					if a, ok := netip.AddrFromSlice(r.A); ok {
						addr[name] = a.Unmap()
					}
				case *dns.TXT:
					for _, kv := range r.Txt {
						if v, ok := strings.CutPrefix(kv, "serviceID="); ok {
							if _, err := discovery.ParseServiceID(v); err == nil {
								ids[name] = v
							}
						}
					}
				}
			}
			for inst, s := range srv {
				a, ok := addr[strings.ToLower(s.Target)]
				if !ok || tried[inst] {
					continue
				}
				tried[inst] = true
				id := ids[inst]
				f.goBusy(func() {
					resp, err := f.mc.Unicast(f.ctx, a.String(), int(s.Port), discovery.ProtocolV2)
					if err != nil {
						f.fail(a.String(), int(s.Port), id, ViaDNSSD, f.linkOf(a.String()), err)
						return
					}
					f.found(resp, id, ViaDNSSD, f.linkOf(resp.Host))
				})
			}
		}
	}()
	return nil
}

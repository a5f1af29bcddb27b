package inspect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/tcpassembly"
	"golang.org/x/net/bpf"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/java/jeri"
)

// Limits that keep a capture of hostile traffic from holding unbounded
// memory.
const (
	// maxStreamBytes: more than a unicast response may be is not kept.
	maxStreamBytes = unicast.DefaultMaxResponseSize + 1
	// maxReplyEndpoints: how many multicast requesters' reply addresses
	// are remembered, to recognise the lookup services' connect-backs.
	maxReplyEndpoints = 4096
	// maxOpenExchanges: TCP exchanges waiting for their other half.
	maxOpenExchanges = 4096
	// DefaultMemory is the memory budget of what the open TCP
	// exchanges keep (SetMemory): 256 one-way streams of 1 MiB each
	// toward port 4160 took a capture to 775 MB before there was one.
	DefaultMemory = 32 << 20
)

// Decoder turns packets into Records. It is not safe for concurrent use:
// feed it from one goroutine.
type Decoder struct {
	emit      func(Record)
	assembler *tcpassembly.Assembler
	// replyTo holds the host:port that multicast requests asked to be
	// called back on: TCP connections there are unicast discovery too,
	// whatever the port.
	replyTo map[netip.AddrPort]struct{}
	// jeri holds the Jini ERI endpoints Java registrar proxies named:
	// TCP connections there are Jini ERI calls.
	jeri map[netip.AddrPort]struct{}
	// methods names method hashes; made on first use.
	methods map[int64]string
	// watching counts the open connections to Jini ERI endpoints whose
	// calls are followed, to learn listeners from notify calls.
	watching int
	// exchanges pairs the two directions of each TCP connection.
	exchanges map[exchangeKey]*exchange
	// flushing collects exchanges that end during a flush, so they can be
	// emitted in time order rather than the assembler's.
	flushing bool
	flushed  []*exchange
	// memory is the budget of the bytes the open exchanges' halves
	// keep, kept what they keep now.
	memory, kept int

	// frame is the number of the packet being decoded; start the first
	// packet's time.
	frame int
	start time.Time
	// held are the records waiting for exchanges that began before them
	// (order.go); wm the first frame of the earliest open exchange.
	held    held
	seq     int
	wm      int
	wmDirty bool
	stats   Stats
	// lookupPorts are the unicast ports lookup services announced, by
	// host: a version 1 response a lookup service sent on connecting
	// back to a requester does not say it.
	lookupPorts map[string]int
	// zone is added to link-local IPv6 addresses (the interface a live
	// capture is on).
	zone string
	// frameAt are the frames of the TCP segments handed to the assembler,
	// by timestamp (what it gives back with the bytes), the oldest
	// forgotten past maxFrameTimes.
	frameAt    map[time.Time]int
	frameOrder []time.Time
	// firstSeg is the frame of each TCP direction's first segment with
	// data: a segment that arrives before the one it follows (out of
	// order) still marks where its message began.
	firstSeg map[[2]netip.AddrPort]segAt
	// filterExpr, for a capture file, is a capture filter run in user
	// space (filter, once compiled for the file's link): what it refuses
	// is as if never captured.
	filterExpr string
	filter     *bpf.VM
	filterLink layers.LinkType // what filter was compiled for
	filterSet  bool
}

// SetCaptureFilter has a capture file's frames pass a capture filter, as
// the kernel passes a live capture's.
func (d *Decoder) SetCaptureFilter(expr string) { d.filterExpr = expr }

// compileFilter compiles the capture filter for a file's link type.
func (d *Decoder) compileFilter(lt layers.LinkType) error {
	if d.filterExpr == "" || d.filterSet && d.filterLink == lt {
		return nil
	}
	d.filterLink, d.filterSet = lt, true
	link := LinkEthernet
	switch lt {
	case layers.LinkTypeEthernet:
	case layers.LinkTypeLinuxSLL:
		link = LinkSLL
	default:
		return fmt.Errorf("a capture filter applies to Ethernet and Linux cooked captures; this one is of link type %s (use -Y)", lt)
	}
	prog, err := CompileCaptureFilter(d.filterExpr, link)
	if err != nil {
		return err
	}
	if d.filter, err = bpf.NewVM(prog); err != nil {
		return fmt.Errorf("the capture filter: %w", err)
	}
	return nil
}

// maxFrameTimes bounds the segment times remembered for frame numbers.
const maxFrameTimes = 1 << 16

// segment notes a TCP segment's frame by its timestamp.
func (d *Decoder) segment(ts time.Time) {
	if _, ok := d.frameAt[ts]; ok {
		return // the first segment of that instant keeps it
	}
	if len(d.frameOrder) >= maxFrameTimes {
		delete(d.frameAt, d.frameOrder[0])
		d.frameOrder = d.frameOrder[1:]
	}
	d.frameAt[ts] = d.frame
	d.frameOrder = append(d.frameOrder, ts)
}

// flowKey names one direction of a TCP connection.
func flowKey(src, dst gopacket.Endpoint, sport, dport uint16) [2]netip.AddrPort {
	s, _ := netip.AddrFromSlice(src.Raw())
	d, _ := netip.AddrFromSlice(dst.Raw())
	return [2]netip.AddrPort{netip.AddrPortFrom(s.Unmap(), sport), netip.AddrPortFrom(d.Unmap(), dport)}
}

// segAt is where a segment was: its frame and time.
type segAt struct {
	frame int
	ts    time.Time
}

// noteFirstSeg remembers the frame of a direction's first data.
func (d *Decoder) noteFirstSeg(nl gopacket.NetworkLayer, sport, dport uint16, ts time.Time) {
	src, dst := nl.NetworkFlow().Endpoints()
	k := flowKey(src, dst, sport, dport)
	if _, ok := d.firstSeg[k]; ok {
		return
	}
	if len(d.firstSeg) >= 2*maxOpenExchanges {
		clear(d.firstSeg)
	}
	d.firstSeg[k] = segAt{d.frame, ts}
}

// frameOf is the frame of the segment seen at ts, or the current one.
func (d *Decoder) frameOf(ts time.Time) int {
	if f, ok := d.frameAt[ts]; ok {
		return f
	}
	return d.frame
}

// NewDecoder returns a Decoder that hands every record to emit.
func NewDecoder(emit func(Record)) *Decoder {
	d := &Decoder{
		emit:        emit,
		replyTo:     make(map[netip.AddrPort]struct{}),
		jeri:        make(map[netip.AddrPort]struct{}),
		exchanges:   make(map[exchangeKey]*exchange),
		lookupPorts: make(map[string]int),
		frameAt:     make(map[time.Time]int),
		firstSeg:    make(map[[2]netip.AddrPort]segAt),
		wm:          math.MaxInt,
		memory:      DefaultMemory,
	}
	a := tcpassembly.NewAssembler(tcpassembly.NewStreamPool(d))
	a.MaxBufferedPagesTotal = 4096
	a.MaxBufferedPagesPerConnection = 64
	d.assembler = a
	return d
}

// SetMemory sets the budget of the bytes the open TCP exchanges keep
// (DefaultMemory): past it, the oldest exchanges are decoded as they
// stand, and what still does not fit is not kept (Stats says how much).
func (d *Decoder) SetMemory(n int) { d.memory = max(n, maxStreamBytes) }

// makeRoom frees room for n more bytes of exchange cur within the
// budget, decoding the oldest other open exchanges as they stand; false
// if it cannot.
func (d *Decoder) makeRoom(n int, cur *exchange) bool {
	for d.kept+n > d.memory {
		var oldest *exchange
		var key exchangeKey
		for k, x := range d.exchanges {
			if x != cur && x.kept() > 0 && (oldest == nil || x.start().Before(oldest.start())) {
				oldest, key = x, k
			}
		}
		if oldest == nil {
			return false
		}
		delete(d.exchanges, key)
		d.ended(oldest)
		d.stats.Early++
		d.finish(oldest)
	}
	return true
}

// chunkBytes is what the budget counts for a chunk's arrival time.
const chunkBytes = int(unsafe.Sizeof(chunkTime{}))

// free lets go of what a decoded exchange kept.
func (d *Decoder) free(x *exchange) {
	for _, h := range x.halves {
		if h != nil {
			d.kept -= h.data.Cap() + len(h.chunks)*chunkBytes
			h.data, h.chunks = bytes.Buffer{}, nil
		}
	}
}

// Packet decodes one captured packet; packets that are not discovery
// traffic are ignored.
func (d *Decoder) Packet(p gopacket.Packet) {
	// A frame is numbered as the file numbers it, whether a capture
	// filter passes it or not, as tshark's frame numbers are the file's
	// whatever it shows (it was numbered among those passed). Times are
	// relative to the file's first frame, as tshark's are.
	d.frame++
	ts := p.Metadata().Timestamp
	if d.start.IsZero() {
		d.start = ts
	}
	if d.filter != nil {
		if n, err := d.filter.Run(p.Data()); err != nil || n == 0 {
			return
		}
	}
	d.stats.Packets++
	nl := p.NetworkLayer()
	if nl == nil {
		return
	}
	switch tl := p.TransportLayer().(type) {
	case *layers.UDP:
		if tl.DstPort == discovery.Port || tl.SrcPort == discovery.Port {
			d.udp(nl, tl, ts)
		}
	case *layers.TCP:
		if d.isDiscoveryTCP(nl, tl) {
			if len(tl.Payload) > 0 {
				d.segment(ts)
				d.noteFirstSeg(nl, uint16(tl.SrcPort), uint16(tl.DstPort), ts)
			}
			d.assembler.AssembleWithTimestamp(nl.NetworkFlow(), tl, ts)
		}
	}
}

// Flush decodes what is left of TCP exchanges, at the end of a capture.
func (d *Decoder) Flush() {
	d.flushing = true
	d.assembler.FlushAll()
	d.flushing = false
	d.finishOpen()
	d.releaseAll()
}

// finishOpen emits every exchange still open or collected during a flush,
// oldest first.
func (d *Decoder) finishOpen() {
	xs := d.flushed
	d.flushed = nil
	for k, x := range d.exchanges {
		delete(d.exchanges, k)
		d.ended(x)
		xs = append(xs, x)
	}
	slices.SortFunc(xs, func(a, b *exchange) int { return a.start().Compare(b.start()) })
	for _, x := range xs {
		d.finish(x)
	}
}

// FlushOlderThan decodes TCP exchanges idle since before t, for live
// capture.
func (d *Decoder) FlushOlderThan(t time.Time) {
	d.assembler.FlushOlderThan(t)
	d.release()
}

// SetZone names the interface a live capture is on: link-local IPv6
// addresses are shown with it (fe80::1%eth0), as one would dial them.
func (d *Decoder) SetZone(iface string) { d.zone = iface }

// host is an endpoint's address as text, with the zone of a link-local
// IPv6 one when the interface is known.
func (d *Decoder) host(ep gopacket.Endpoint) string {
	a, ok := netip.AddrFromSlice(ep.Raw())
	if !ok {
		return ep.String()
	}
	a = a.Unmap()
	if d.zone != "" && a.Is6() && (a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast()) {
		a = a.WithZone(d.zone)
	}
	return a.String()
}

func (d *Decoder) addrPort(ep gopacket.Endpoint, port uint16) string {
	return net.JoinHostPort(d.host(ep), strconv.Itoa(int(port)))
}

func (d *Decoder) udp(nl gopacket.NetworkLayer, u *layers.UDP, ts time.Time) {
	src, dst := nl.NetworkFlow().Endpoints()
	r := Record{
		Frame:       d.frame,
		Time:        ts,
		Source:      d.addrPort(src, uint16(u.SrcPort)),
		Destination: d.addrPort(dst, uint16(u.DstPort)),
		Transport:   "udp",
		Length:      len(u.Payload),
	}
	dstAddr, _ := netip.AddrFromSlice(dst.Raw())
	decodeMulticast(&r, u.Payload, d.host(src), dstAddr.Unmap())
	switch f := r.Fields.(type) {
	case *RequestFields:
		d.rememberReplyTo(f.Host, f.Port)
	case *AnnouncementFields:
		d.rememberLookupPort(f.Host, f.Port)
	}
	d.out(r)
}

// decodeMulticast fills r from a multicast payload. Version 1 packets do
// not say whether they are requests or announcements: the group they were
// sent to does.
func decodeMulticast(r *Record, payload []byte, srcHost string, dst netip.Addr) {
	isRequest := false
	v, err := discovery.PacketVersion(payload)
	switch {
	case err != nil:
		r.Kind, r.Error = KindUnknown, err.Error()
		return
	case v == discovery.ProtocolV2:
		isRequest, err = discovery.IsRequest(payload)
		if err != nil {
			r.Kind, r.Version, r.Error = KindUnknown, v, err.Error()
			return
		}
		if len(payload) >= 13 {
			r.FormatID = fmt.Sprintf("%016x", payload[5:13])
		}
	case v == discovery.ProtocolV1:
		isRequest = dst == discovery.RequestGroupV4 || dst == discovery.RequestGroupV6
		if !isRequest && dst != discovery.AnnouncementGroupV4 && dst != discovery.AnnouncementGroupV6 {
			// Sent to neither group: whichever decodes.
			if _, err := discovery.DecodeAnnouncement(payload); err != nil {
				isRequest = true
			}
		}
	default:
		r.Kind, r.Error = KindUnknown, fmt.Sprintf("unsupported discovery protocol version %d", v)
		return
	}
	r.Version = v
	if isRequest {
		r.Kind = KindMulticastRequest
		q, err := discovery.DecodeRequest(payload)
		if err != nil {
			r.Error = err.Error()
			return
		}
		host := q.Host
		if v == discovery.ProtocolV1 {
			host = srcHost
		}
		r.Fields = &RequestFields{Host: host, Port: q.Port, Groups: nonNil(q.Groups), KnownServiceIDs: idStrings(q.Known)}
		return
	}
	r.Kind = KindMulticastAnnouncement
	a, err := discovery.DecodeAnnouncement(payload)
	if err != nil {
		r.Error = err.Error()
		return
	}
	f := &AnnouncementFields{Host: a.Host, Port: a.Port, ServiceID: a.ServiceID.String(), Groups: nonNil(a.Groups)}
	if v == discovery.ProtocolV2 {
		f.Sequence = &a.Sequence
	}
	r.Fields = f
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func idStrings(ids []discovery.ServiceID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// rememberLookupPort notes the unicast port a lookup service announced.
func (d *Decoder) rememberLookupPort(host string, port int) {
	if len(d.lookupPorts) >= maxReplyEndpoints {
		clear(d.lookupPorts)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		d.lookupPorts[a.Unmap().WithZone("").String()] = port
	}
}

func (d *Decoder) rememberReplyTo(host string, port int) {
	addr, err := netip.ParseAddr(host)
	if err != nil || port <= 0 || port > 0xFFFF {
		return
	}
	if len(d.replyTo) >= maxReplyEndpoints {
		clear(d.replyTo) // a flood of requests: start over rather than grow
	}
	d.replyTo[netip.AddrPortFrom(addr.Unmap(), uint16(port))] = struct{}{}
}

// connectedBack says whether a response half went to a multicast
// requester's reply port: the lookup service connected to it.
func (d *Decoder) connectedBack(h *half) bool {
	ap, err := netip.ParseAddrPort(h.dst)
	if err != nil {
		return false
	}
	_, ok := d.replyTo[netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())]
	return ok
}

func (d *Decoder) isDiscoveryTCP(nl gopacket.NetworkLayer, t *layers.TCP) bool {
	if t.SrcPort == discovery.Port || t.DstPort == discovery.Port {
		return true
	}
	src, dst := nl.NetworkFlow().Endpoints()
	for _, ep := range []struct {
		ip   gopacket.Endpoint
		port layers.TCPPort
	}{{src, t.SrcPort}, {dst, t.DstPort}} {
		addr, ok := netip.AddrFromSlice(ep.ip.Raw())
		if !ok {
			continue
		}
		ap := netip.AddrPortFrom(addr.Unmap(), uint16(ep.port))
		if _, ok := d.replyTo[ap]; ok {
			return true
		}
		if _, ok := d.jeri[ap]; ok {
			return true
		}
	}
	return false
}

// TCP exchanges --------------------------------------------------------

// exchangeKey names a connection the same way from both directions.
type exchangeKey struct{ a, b string }

func keyOf(src, dst string) exchangeKey {
	if src < dst {
		return exchangeKey{src, dst}
	}
	return exchangeKey{dst, src}
}

// exchange is one TCP connection's two halves. The half that speaks first
// is the unicast client (it sends the request), whichever side connected:
// when a lookup service answers a multicast request it connects to the
// requester, and the requester still speaks first.
type exchange struct {
	halves   [2]*half
	finished bool
}

// startFrame is the frame of the exchange's first byte, 0 if none yet.
func (x *exchange) startFrame() int {
	f := 0
	for _, h := range x.halves {
		if h != nil && h.firstFrame > 0 && (f == 0 || h.firstFrame < f) {
			f = h.firstFrame
		}
	}
	return f
}

// kept is what the exchange's buffers hold.
func (x *exchange) kept() int {
	n := 0
	for _, h := range x.halves {
		if h != nil {
			n += h.data.Cap() + len(h.chunks)*chunkBytes
		}
	}
	return n
}

// start is when the exchange's first byte was seen.
func (x *exchange) start() time.Time {
	var t time.Time
	for _, h := range x.halves {
		if h != nil && !h.first.IsZero() && (t.IsZero() || h.first.Before(t)) {
			t = h.first
		}
	}
	return t
}

type half struct {
	flow       [2]netip.AddrPort
	src, dst   string
	srcHost    string
	srcPort    int
	first      time.Time // when its first byte was seen; zero if none
	firstFrame int       // the frame of its first byte; 0 if none
	chunks     []chunkTime
	data       bytes.Buffer
	truncated  bool
	done       bool
}

// New implements tcpassembly.StreamFactory.
func (d *Decoder) New(netFlow, tcpFlow gopacket.Flow) tcpassembly.Stream {
	srcIP, dstIP := netFlow.Endpoints()
	srcPort, dstPort := tcpFlow.Endpoints()
	sp, _ := strconv.Atoi(srcPort.String())
	dp, _ := strconv.Atoi(dstPort.String())
	h := &half{
		flow:    flowKey(srcIP, dstIP, uint16(sp), uint16(dp)),
		src:     net.JoinHostPort(d.host(srcIP), srcPort.String()),
		dst:     net.JoinHostPort(d.host(dstIP), dstPort.String()),
		srcHost: d.host(srcIP),
		srcPort: sp,
	}
	k := keyOf(h.src, h.dst)
	x := d.exchanges[k]
	if x == nil || (x.halves[0] != nil && x.halves[1] != nil) {
		if len(d.exchanges) >= maxOpenExchanges {
			// Called from inside the assembler: decode what the open
			// exchanges hold without asking the assembler to flush.
			d.finishOpen()
		}
		x = &exchange{}
		d.exchanges[k] = x
	}
	if x.halves[0] == nil {
		x.halves[0] = h
	} else {
		x.halves[1] = h
	}
	st := &stream{d: d, x: x, h: h, key: k}
	if ip, ok := netip.AddrFromSlice(dstIP.Raw()); ok {
		dp, _ := strconv.Atoi(dstPort.String())
		if _, ok := d.jeri[netip.AddrPortFrom(ip.Unmap(), uint16(dp))]; ok {
			st.watch = d.startWatch()
		}
	}
	return st
}

type stream struct {
	d   *Decoder
	x   *exchange
	h   *half
	key exchangeKey
	// watch follows the calls of a client's half to a Jini ERI endpoint;
	// nil for other halves.
	watch *callWatch
}

func (s *stream) Reassembled(rs []tcpassembly.Reassembly) {
	for _, r := range rs {
		if s.watch != nil {
			if r.Skip != 0 {
				// Bytes were lost: the calls after them cannot be framed.
				s.d.stopWatch(s.watch)
			}
			s.d.watchCalls(s.watch, r.Bytes)
		}
		if len(r.Bytes) == 0 {
			continue
		}
		frame := s.d.frameOf(r.Seen)
		if s.h.first.IsZero() {
			first, at := frame, r.Seen
			if f, ok := s.d.firstSeg[s.h.flow]; ok {
				if f.frame < first {
					first, at = f.frame, f.ts
				}
				delete(s.d.firstSeg, s.h.flow)
			}
			s.h.first, s.h.firstFrame = at, first
			s.d.started(first)
		}
		if s.x.finished {
			// Decoded already, to make room: the rest is not kept.
			s.d.stats.Dropped += len(r.Bytes)
			continue
		}
		take := min(len(r.Bytes), max(maxStreamBytes-s.h.data.Len(), 0))
		// The budget counts the buffers' capacity, grown here (not by
		// bytes.Buffer's doubling, which overshoots) at most to a
		// stream's bound.
		l, c := s.h.data.Len(), s.h.data.Cap()
		grown := c
		if l+take > c {
			grown = min(max(2*c, l+take, 4096), maxStreamBytes)
		}
		chunk := 0
		if len(s.h.chunks) < maxChunkTimes {
			chunk = chunkBytes
		}
		if take > 0 && !s.d.makeRoom(grown-c+chunk, s.x) {
			take = 0
		}
		if take < len(r.Bytes) {
			s.h.truncated = true
			s.d.stats.Dropped += len(r.Bytes) - take
		}
		if take == 0 {
			continue
		}
		if grown > c {
			b := make([]byte, l, grown)
			copy(b, s.h.data.Bytes())
			s.h.data = *bytes.NewBuffer(b)
			s.d.kept += grown - c
		}
		s.h.noteChunk(r.Seen, frame)
		s.d.kept += chunk
		s.h.data.Write(r.Bytes[:take])
	}
}

func (s *stream) ReassemblyComplete() {
	s.d.stopWatch(s.watch)
	s.h.done = true
	for _, h := range s.x.halves {
		if h == nil || !h.done {
			return
		}
	}
	if s.d.exchanges[s.key] == s.x {
		delete(s.d.exchanges, s.key)
		s.d.ended(s.x)
	}
	if s.d.flushing {
		s.d.flushed = append(s.d.flushed, s.x)
		return
	}
	s.d.finish(s.x)
	s.d.release()
}

// finish decodes an exchange and emits its request and response.
func (d *Decoder) finish(x *exchange) {
	if x.finished {
		return
	}
	x.finished = true
	defer d.free(x)
	client, server := x.halves[0], x.halves[1]
	if client == nil || client.first.IsZero() || (server != nil && !server.first.IsZero() && server.first.Before(client.first)) {
		client, server = server, client
	}
	if heard := client; heard != nil && !heard.first.IsZero() && (server == nil || server.first.IsZero()) &&
		(heard.srcPort == discovery.Port || d.connectedBack(heard)) {
		// One side heard only (a capture begun mid-exchange): the
		// lookup service's side, by its port, is the response, as the
		// dissector tells it (it was decoded as a request).
		client, server = server, client
	}
	if client != nil && jeri.IsMux(client.data.Bytes()) {
		d.decodeJERI(client, server)
		return
	}
	var version int
	if client == nil || client.first.IsZero() || server == nil || server.first.IsZero() {
		d.stats.Incomplete++
	}
	if client != nil && !client.first.IsZero() {
		r := Record{Frame: client.firstFrame, Time: client.first, Source: client.src, Destination: client.dst, Transport: "tcp", Kind: KindUnicastRequest, Length: client.data.Len()}
		q, err := unicast.ReadRequest(bytes.NewReader(client.data.Bytes()))
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Version, version = q.Version, q.Version
			f := &UnicastRequestFields{}
			for _, id := range q.Formats {
				f.ProposedFormats = append(f.ProposedFormats, fmt.Sprintf("%016x", uint64(id)))
			}
			r.Fields = f
		}
		d.hold(r)
	}
	if server != nil && !server.first.IsZero() {
		r, proxy := d.decodeResponse(server, version)
		if proxy != nil {
			d.learnJERI(proxy)
		}
		d.hold(r)
	}
}

// decodeResponse decodes a unicast response, and returns the marshalled
// registrar proxy of a Java one (jinid's serving Java clients included).
func (d *Decoder) decodeResponse(h *half, requested int) (Record, []byte) {
	r := Record{Frame: h.firstFrame, Time: h.first, Source: h.src, Destination: h.dst, Transport: "tcp", Kind: KindUnicastResponse, Length: h.data.Len()}
	p, err := unicast.ReadResponse(bytes.NewReader(h.data.Bytes()), unicast.DefaultMaxResponseSize)
	if p != nil {
		r.Version = p.Version
		if p.Version == discovery.ProtocolV2 {
			r.FormatID = fmt.Sprintf("%016x", uint64(p.Format))
		}
	}
	switch {
	case errors.Is(err, unicast.ErrNoFormat):
		r.Error = "the lookup service accepted none of the proposed formats"
		return r, nil
	case err != nil:
		r.Error = err.Error()
		if h.truncated {
			r.Error += fmt.Sprintf(" (stream cut at %d bytes)", maxStreamBytes)
		}
		return r, nil
	}
	if requested != 0 && requested != p.Version {
		r.Error = fmt.Sprintf("response is protocol version %d to a version %d request", p.Version, requested)
	}
	if p.Version == discovery.ProtocolV1 {
		// Version 1 does not say: the responder's address, and its port
		// unless it connected back to a requester (from a port of no
		// meaning), when its announcements tell it.
		p.Host, p.Port = h.srcHost, h.srcPort
		if d.connectedBack(h) {
			p.Port = d.lookupPorts[strings.Split(h.srcHost, "%")[0]]
		}
	}
	f := &UnicastResponseFields{Host: p.Host, Port: p.Port, Groups: nonNil(p.Groups),
		Registrar: RegistrarField{Kind: "java", Size: len(p.Registrar.Marshalled)}}
	if sid := p.Registrar.ServiceID; !sid.IsZero() {
		f.Registrar.ServiceID = sid.String()
	}
	if d := p.Registrar.Descriptor; d != nil {
		f.Registrar.Kind, f.Registrar.ServiceID, f.Registrar.APIURL = "jinid", d.ServiceID.String(), d.APIURL
	}
	r.Fields = f
	return r, p.Registrar.Marshalled
}

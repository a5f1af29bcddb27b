package inspect

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
)

// KindJERICall is a Jini ERI call: a Java client calling a lookup
// service's registrar, or a lookup service calling a Java listener.
const KindJERICall = "jeri-call"

// maxJERIEndpoints bounds the Jini ERI endpoints learnt from proxies.
const maxJERIEndpoints = 1024

// JERICallFields are the decoded fields of one Jini ERI call: the mux
// session, the object called, the method by name (or hash, when it is
// not one jinid knows) and how the call ended.
type JERICallFields struct {
	Session int    `json:"session"`
	Object  string `json:"object"`
	Method  string `json:"method"`
	// Status is return, throw, no-such-object, version-mismatch, or
	// unanswered (the capture ends first).
	Status    string `json:"status"`
	Exception string `json:"exception,omitempty"`
	Message   string `json:"message,omitempty"`
	// ReplyLength is the reply's bytes.
	ReplyLength int `json:"replyLength"`
	// LatencyMicros is the time from the call's first byte to its
	// reply's, in microseconds (0 when unanswered).
	LatencyMicros int64 `json:"latencyMicros,omitempty"`
}

// methodNames names the method hashes of the registrar (the JGDMS
// lineage jinid serves) and of a Java event listener.
func methodNames() map[int64]string {
	names := map[int64]string{lineage.MethodHash("notify", "(Lnet/jini/core/event/RemoteEvent;)V"): "RemoteEventListener.notify"}
	if l, err := lineage.JGDMS(); err == nil {
		for _, h := range l.Hashes() {
			k, _ := l.Method(h)
			names[h] = "Registrar." + k
		}
	}
	return names
}

// learnJERI remembers where a Java registrar proxy says its registrar
// is, so the connections there are decoded as Jini ERI.
func (d *Decoder) learnJERI(proxy []byte) {
	v, err := javaio.Decode(proxy)
	if err != nil {
		return
	}
	c, ok := v.(*javaio.Object)
	if !ok {
		return
	}
	ob, _ := c.Get("objBytes")
	a, ok := ob.(*javaio.Array)
	if !ok {
		return
	}
	v, err = javaio.Decode(a.Prim)
	if err != nil {
		return
	}
	d.learnEndpoint(findTCPEndpoint(v, 0))
}

// learnEndpoint remembers a TcpEndpoint as one where Jini ERI is spoken.
func (d *Decoder) learnEndpoint(ep *javaio.Object) {
	if ep == nil {
		return
	}
	host, _ := ep.Get("host")
	port, _ := ep.Get("port")
	h, _ := host.(string)
	p, _ := port.(int32)
	addr, err := netip.ParseAddr(h)
	if err != nil || p <= 0 || p > 0xFFFF {
		return
	}
	if len(d.jeri) >= maxJERIEndpoints {
		clear(d.jeri)
	}
	d.jeri[netip.AddrPortFrom(addr.Unmap(), uint16(p))] = struct{}{}
}

// findTCPEndpoint finds the first TcpEndpoint in a proxy's graph.
func findTCPEndpoint(v javaio.Value, depth int) *javaio.Object {
	o, ok := v.(*javaio.Object)
	if !ok || depth > 8 {
		return nil
	}
	if o.Class.IsA("net.jini.jeri.tcp.TcpEndpoint") {
		return o
	}
	for _, cd := range o.Data {
		for _, f := range cd.Fields {
			if ep := findTCPEndpoint(f, depth+1); ep != nil {
				return ep
			}
		}
	}
	return nil
}

// decodeJERI emits one record per call of a captured Jini ERI
// connection: the client's half and the server's.
func (d *Decoder) decodeJERI(client, server *half) {
	_, cf, cerr := jeri.Frames(client.data.Bytes())
	var sf []jeri.Frame
	var serr error
	if server != nil {
		_, sf, serr = jeri.Frames(server.data.Bytes())
	}
	requests := sessions(cf, client)
	replies := sessions(sf, server)
	for _, q := range requests {
		r := Record{Frame: q.frame, Time: q.at, Source: client.src, Destination: client.dst, Transport: "tcp", Kind: KindJERICall, Length: len(q.data)}
		f := &JERICallFields{Session: int(q.session), Status: "unanswered"}
		if len(q.data) < 18 {
			r.Error = fmt.Sprintf("a call of %d bytes has no object identifier", len(q.data))
		} else {
			f.Object = jeri.Uuid(q.data[:16]).String()
			f.Method = d.method(q.data[18:])
		}
		// The reply is the next one on the same session.
		for i, p := range replies {
			if p.session == q.session && !p.used && !p.at.Before(q.at) {
				replies[i].used = true
				f.ReplyLength = len(p.data)
				f.LatencyMicros = p.at.Sub(q.at).Microseconds()
				f.Status, f.Exception, f.Message = replyStatus(p.data)
				break
			}
		}
		r.Fields = f
		d.hold(r)
	}
	for _, e := range []struct {
		err error
		h   *half
	}{{cerr, client}, {serr, server}} {
		if e.err != nil && e.h != nil {
			d.hold(Record{Frame: e.h.firstFrame, Time: e.h.first, Source: e.h.src, Destination: e.h.dst, Transport: "tcp", Kind: KindJERICall,
				Length: e.h.data.Len(), Error: "mux: " + e.err.Error()})
		}
	}
}

type muxSession struct {
	session byte
	at      time.Time
	frame   int
	data    []byte
	used    bool
}

// sessions collects each session's data up to its end of file, in order.
func sessions(frames []jeri.Frame, h *half) []muxSession {
	open := map[byte]*muxSession{}
	var out []muxSession
	for _, f := range frames {
		if !f.Data() {
			continue
		}
		s := open[f.Session]
		if s == nil {
			at, frame := h.at(f.Offset)
			s = &muxSession{session: f.Session, at: at, frame: frame}
			open[f.Session] = s
		}
		s.data = append(s.data, f.Body...)
		if f.EOF() {
			out = append(out, *s)
			delete(open, f.Session)
		}
	}
	return out
}

func (d *Decoder) method(stream []byte) string {
	dec, err := javaio.NewDecoder(stream)
	if err != nil {
		return "?"
	}
	h, err := dec.ReadLong()
	if err != nil {
		return "?"
	}
	if d.methods == nil {
		d.methods = methodNames()
	}
	if name, ok := d.methods[h]; ok {
		return name
	}
	return fmt.Sprintf("%016x", uint64(h))
}

// replyStatus reads how a call ended.
func replyStatus(b []byte) (status, exception, message string) {
	switch {
	case len(b) == 1 && b[0] == 0:
		return "no-such-object", "", ""
	case len(b) < 2 || b[0] != 1:
		return "malformed", "", ""
	case b[1] == 1:
		return "return", "", ""
	case b[1] == 2:
		v, err := javaio.Decode(b[2:])
		if o, ok := v.(*javaio.Object); err == nil && ok {
			m, _ := o.Get("detailMessage")
			s, _ := m.(string)
			if len(s) > 200 {
				s = s[:200]
			}
			return "throw", o.Class.Name, s
		}
		return "throw", "", ""
	}
	return "version-mismatch", "", ""
}

// at is when, and in which frame, the byte at offset of a half was seen.
func (h *half) at(offset int) (time.Time, int) {
	t, f := h.first, h.firstFrame
	for _, c := range h.chunks {
		if c.offset > offset {
			break
		}
		t, f = c.seen, c.frame
	}
	return t, f
}

type chunkTime struct {
	offset int
	seen   time.Time
	frame  int
}

// maxChunkTimes bounds the arrival times kept per half.
const maxChunkTimes = 4096

func (h *half) noteChunk(seen time.Time, frame int) {
	if len(h.chunks) < maxChunkTimes {
		h.chunks = append(h.chunks, chunkTime{h.data.Len(), seen, frame})
	}
}

// isJERI reports whether a TCP segment is to or from a learnt Jini ERI
// endpoint.
func (d *Decoder) isJERI(src, dst netip.AddrPort) bool {
	_, a := d.jeri[src]
	_, b := d.jeri[dst]
	return a || b
}

// callWatch follows what a client sends to a learnt Jini ERI endpoint,
// as the assembler hands it over (in order, each byte once, retransmitted
// and reordered segments already sorted out), so that a notify call's
// listener is known before the lookup service calls it back: the
// listener's connection is then decoded too. Only notify calls are held
// until they end; other calls are let go once their method is read.
type callWatch struct {
	buf    []byte // a frame not yet whole
	header bool
	open   map[byte][]byte // each session's call so far
	ignore map[byte]bool   // sessions whose call is not a notify
	opened int             // bytes in open
	done   bool
}

// What the call watches hold: a notify call's template and listener are
// a few kilobytes; a capture with more than maxWatched connections open
// to registrars at once is not followed for the rest.
const (
	maxWatchedBytes = 256 << 10
	maxWatched      = 64
	// callPrefix is what precedes a call's object stream: the version
	// and integrity bytes and the object's Uuid.
	callPrefix = 18
	// methodBytes is enough of a call to read its method hash.
	methodBytes = callPrefix + 4 + 2 + 8
)

// startWatch returns a call watch for a new connection to a Jini ERI
// endpoint, or nil when maxWatched are already open.
func (d *Decoder) startWatch() *callWatch {
	if d.watching >= maxWatched {
		return nil
	}
	d.watching++
	return &callWatch{open: map[byte][]byte{}, ignore: map[byte]bool{}}
}

// stopWatch lets go of what a watch holds.
func (d *Decoder) stopWatch(w *callWatch) {
	if w == nil || w.done {
		return
	}
	w.done, w.buf, w.open, w.ignore = true, nil, nil, nil
	d.watching--
}

// watchCalls parses the next bytes a client sent.
func (d *Decoder) watchCalls(w *callWatch, b []byte) {
	if w.done {
		return
	}
	w.buf = append(w.buf, b...)
	if !w.header {
		if len(w.buf) < jeri.HeaderLen {
			return
		}
		if !jeri.IsMux(w.buf) {
			d.stopWatch(w)
			return
		}
		w.buf, w.header = w.buf[jeri.HeaderLen:], true
	}
	for {
		f, n, ok := jeri.NextFrame(w.buf)
		if !ok {
			break
		}
		w.buf = w.buf[n:]
		if !f.Data() {
			continue
		}
		s := f.Session
		if !w.ignore[s] {
			w.open[s] = append(w.open[s], f.Body...)
			w.opened += len(f.Body)
		}
		if q := w.open[s]; len(q) >= methodBytes || f.EOF() {
			m := d.method(q[min(callPrefix, len(q)):])
			switch {
			case m != "Registrar.notify/5" && m != "Registrar.notiFy/5":
				w.ignore[s] = true
			case f.EOF():
				d.learnListener(q[callPrefix:])
			default:
				continue
			}
			delete(w.open, s)
			w.opened -= len(q)
		}
		if f.EOF() {
			delete(w.ignore, s)
		}
	}
	// What is held: a frame not yet whole, and notify calls not yet ended.
	if len(w.buf)+w.opened > maxWatchedBytes {
		d.stopWatch(w)
	}
}

// learnListener remembers the endpoint of the listener a notify call
// registers.
func (d *Decoder) learnListener(stream []byte) {
	dec, err := javaio.NewDecoder(stream)
	if err != nil {
		return
	}
	if _, err := dec.ReadLong(); err != nil {
		return
	}
	if _, err := dec.ReadObject(); err != nil { // the template
		return
	}
	if _, err := dec.ReadInt(); err != nil { // the transitions
		return
	}
	l, err := dec.ReadObject()
	if err != nil {
		return
	}
	d.learnEndpoint(findTCPEndpoint(l, 0))
}

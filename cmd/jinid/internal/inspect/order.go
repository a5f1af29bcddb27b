package inspect

import (
	"container/heap"
	"math"
	"strconv"
	"strings"
)

// Records come out in the order of the packets they begin in (frame
// order, as tshark prints): a UDP message at once, unless a TCP exchange
// that began earlier is still open; an exchange's messages when it ends,
// each at its first packet's place. Records wait in a heap until no open
// exchange began before them; at most maxHeld wait, after which the
// oldest goes out regardless (a connection held open for hours would
// hold the rest back otherwise).
const maxHeld = 1 << 16

// held is the heap of records waiting, by frame then arrival.
type held []heldRecord

type heldRecord struct {
	r   Record
	seq int
}

func (h held) Len() int { return len(h) }
func (h held) Less(i, j int) bool {
	if h[i].r.Frame != h[j].r.Frame {
		return h[i].r.Frame < h[j].r.Frame
	}
	return h[i].seq < h[j].seq
}
func (h held) Swap(i, j int)    { h[i], h[j] = h[j], h[i] }
func (h *held) Push(x any)      { *h = append(*h, x.(heldRecord)) }
func (h *held) Pop() any        { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }
func (h held) peek() Record     { return h[0].r }
func (d *Decoder) out(r Record) { d.hold(r); d.release() }

// hold queues a record.
func (d *Decoder) hold(r Record) {
	d.seq++
	heap.Push(&d.held, heldRecord{r: r, seq: d.seq})
}

// release hands on the records no open exchange can come before.
func (d *Decoder) release() {
	wm := d.watermark()
	for d.held.Len() > 0 && (d.held.peek().Frame < wm || d.held.Len() > maxHeld) {
		d.deliver(heap.Pop(&d.held).(heldRecord).r)
	}
}

// releaseAll hands on every record held: the capture ended.
func (d *Decoder) releaseAll() {
	for d.held.Len() > 0 {
		d.deliver(heap.Pop(&d.held).(heldRecord).r)
	}
}

// deliver stamps a record's relative time, counts it and emits it.
func (d *Decoder) deliver(r Record) {
	if !d.start.IsZero() {
		r.Relative = r.Time.Sub(d.start).Seconds()
	}
	d.stats.count(r)
	d.emit(r)
}

// watermark is the first frame of the earliest exchange still open (that
// has data): no record before it can come any more. It is kept, and
// worked out again only when the exchange that set it ends.
func (d *Decoder) watermark() int {
	if !d.wmDirty {
		return d.wm
	}
	d.wm, d.wmDirty = math.MaxInt, false
	for _, x := range d.exchanges {
		if f := x.startFrame(); f > 0 && f < d.wm {
			d.wm = f
		}
	}
	return d.wm
}

// started notes an exchange's first data, at frame.
func (d *Decoder) started(frame int) {
	if !d.wmDirty && frame < d.wm {
		d.wm = frame
	}
}

// ended notes an exchange leaving the open ones.
func (d *Decoder) ended(x *exchange) {
	if f := x.startFrame(); f > 0 && f <= d.wm {
		d.wmDirty = true
	}
}

// Stats are what a capture held, for the summary at its end.
type Stats struct {
	// Packets: every packet read (discovery or not).
	Packets int
	// Decoded counts the messages decoded, by kind and version
	// ("multicast-announcement v2").
	Decoded map[string]int
	// Malformed counts the messages that did not decode, by reason (the
	// error up to its first colon).
	Malformed map[string]int
	// Incomplete counts TCP exchanges with a half missing (a request
	// without a response, a call without a reply) when the capture ended.
	Incomplete int
	// Early counts the TCP exchanges decoded before their end to keep
	// within the memory budget; Dropped the TCP bytes not kept (past
	// the budget, or past a stream's 1 MiB).
	Early, Dropped int
}

func (s *Stats) count(r Record) {
	if r.Error != "" {
		if s.Malformed == nil {
			s.Malformed = map[string]int{}
		}
		reason, _, _ := strings.Cut(r.Error, ":")
		s.Malformed[r.Kind+": "+reason]++
		return
	}
	if s.Decoded == nil {
		s.Decoded = map[string]int{}
	}
	k := r.Kind
	if r.Version != 0 {
		k += " v" + strconv.Itoa(r.Version)
	}
	s.Decoded[k]++
	if f, ok := r.Fields.(*JERICallFields); ok && f.Status == "unanswered" {
		s.Incomplete++
	}
}

// Stats returns what the decoder has seen so far.
func (d *Decoder) Stats() Stats { return d.stats }

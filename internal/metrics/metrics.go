// Package metrics is jinid's Prometheus registry: metric families with
// their help text and label names, counters and gauges, classic "le"
// histograms, gauges read at scrape time, the Go runtime's and the
// process's own metrics, and the text exposition with HELP and TYPE for
// every family.
//
// It is written here rather than on a metrics library: client_golang
// links protobuf (whose reflection stops the linker from dropping unused
// methods anywhere: 2 MB of the mips daemon), and VictoriaMetrics/metrics,
// used before, compiles a regular expression at init, which links the
// regexp packages: 0.2 MB of a daemon whose budget is 8 MB
// (docs/performance.md). The text format is small and this package's
// tests pin it.
//
// A nil *Registry is valid and counts nothing, as are the metrics it
// returns, so a component built without one (in its own tests) needs no
// checks.
package metrics

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry holds metric families; families are made while the daemon
// is built, series whenever they are first counted.
type Registry struct {
	mu   sync.Mutex
	fams map[string]*family
}

// family is one metric's name, help, type and label names, and its
// series: in set for counters and gauges, in hist for histograms, or
// produced by read at scrape time.
type family struct {
	name, help, typ string
	labels          []string
	set             *seriesSet // counters and gauges
	hist            *Histogram
	read            func(emit func(v float64, values ...string))
}

// New returns an empty registry.
func New() *Registry { return &Registry{fams: map[string]*family{}} }

// validName reports whether name is jinid_ and a lower-case snake-case
// word that ends in a letter or digit; validLabel whether name is a
// lower-case snake-case label. (Loops, not regular expressions: the
// regexp packages would cost the mips daemon 0.18 MB for these two.)
func validName(name string) bool {
	rest, ok := strings.CutPrefix(name, "jinid_")
	return ok && validLabel(rest) && !strings.HasSuffix(rest, "_")
}

func validLabel(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := range len(name) {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// add registers a family, or returns the one registered under its name
// with the same definition (sameFamily). A bad or repeated name, no help text or a bad
// label is a programming error: it panics, as a duplicate HTTP route
// does.
func (r *Registry) add(f *family) *family {
	if !validName(f.name) {
		panic(fmt.Sprintf("metrics: %q is not a jinid_ metric name", f.name))
	}
	if strings.TrimSpace(f.help) == "" {
		panic(fmt.Sprintf("metrics: %s has no help text", f.name))
	}
	for _, l := range f.labels {
		if !validLabel(l) || l == "le" {
			panic(fmt.Sprintf("metrics: %s: bad label name %q", f.name, l))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, dup := r.fams[f.name]; dup {
		if !sameFamily(old, f) {
			panic(fmt.Sprintf("metrics: %s registered twice", f.name))
		}
		return old
	}
	r.fams[f.name] = f
	return f
}

// sameFamily says whether f defines what old does, as several instances
// of one part do (a service run for each shard of a cluster's work):
// they count into one family. A gauge read by a function is one
// instance's alone.
func sameFamily(old, f *family) bool {
	if old.typ != f.typ || old.help != f.help || !slices.Equal(old.labels, f.labels) || old.set == nil && old.hist == nil {
		return false
	}
	if old.hist != nil || f.hist != nil {
		return old.hist != nil && f.hist != nil && slices.Equal(old.hist.buckets, f.hist.buckets)
	}
	return true
}

// Counter is a family of counters, one series per label values.
type Counter struct{ f *family }

// Counter registers a counter family; by Prometheus rules its name ends
// in _total.
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	if r == nil {
		return nil
	}
	if !strings.HasSuffix(name, "_total") {
		panic(fmt.Sprintf("metrics: counter %s does not end in _total", name))
	}
	return &Counter{r.add(&family{name: name, help: help, typ: "counter", labels: labels, set: &seriesSet{}})}
}

// Add adds n to the series of the label values (one per label, in
// order).
func (c *Counter) Add(n int, values ...string) {
	if c != nil {
		c.f.set.get(c.f.series(values)).Add(uint64(n))
	}
}

// Inc adds one to the series of the label values.
func (c *Counter) Inc(values ...string) { c.Add(1, values...) }

// Add adds d to the series of the label values: a gauge several
// instances of one part move together (requests in flight).
func (g *Gauge) Add(d float64, values ...string) {
	if g == nil {
		return
	}
	v := g.f.set.get(g.f.series(values))
	for {
		old := v.Load()
		if v.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Get is the series' value (tests).
func (c *Counter) Get(values ...string) uint64 {
	if c == nil {
		return 0
	}
	return c.f.set.get(c.f.series(values)).Load()
}

// Gauge is a family of gauges set as things change.
type Gauge struct{ f *family }

// Gauge registers a gauge family.
func (r *Registry) Gauge(name, help string, labels ...string) *Gauge {
	if r == nil {
		return nil
	}
	return &Gauge{r.add(&family{name: name, help: help, typ: "gauge", labels: labels, set: &seriesSet{float: true}})}
}

// Set sets the series of the label values to v.
func (g *Gauge) Set(v float64, values ...string) {
	if g != nil {
		g.f.set.get(g.f.series(values)).Store(math.Float64bits(v))
	}
}

// Get is the series' value (tests).
func (g *Gauge) Get(values ...string) float64 {
	if g == nil {
		return 0
	}
	return math.Float64frombits(g.f.set.get(g.f.series(values)).Load())
}

// GaugeFunc registers a gauge family whose series read calls emit for
// at each scrape: counts the daemon keeps anyway (registrations, the
// store's size) need no bookkeeping of their own. read must not block.
func (r *Registry) GaugeFunc(name, help string, labels []string, read func(emit func(v float64, values ...string))) {
	if r == nil {
		return
	}
	r.add(&family{name: name, help: help, typ: "gauge", labels: labels, read: read})
}

// seriesSet holds a counter or gauge family's series by name and
// labels: counts, or float64 bits for a gauge.
type seriesSet struct {
	float  bool
	mu     sync.Mutex
	series map[string]*atomic.Uint64
}

func (s *seriesSet) get(key string) *atomic.Uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.series[key]
	if v == nil {
		if s.series == nil {
			s.series = map[string]*atomic.Uint64{}
		}
		v = new(atomic.Uint64)
		s.series[key] = v
	}
	return v
}

// write writes the series in name order.
func (s *seriesSet) write(w io.Writer) {
	s.mu.Lock()
	keys := slices.Sorted(maps.Keys(s.series))
	vals := make([]uint64, len(keys))
	for i, k := range keys {
		vals[i] = s.series[k].Load()
	}
	s.mu.Unlock()
	for i, k := range keys {
		if s.float {
			fmt.Fprintf(w, "%s %s\n", k, formatFloat(math.Float64frombits(vals[i])))
		} else {
			fmt.Fprintf(w, "%s %d\n", k, vals[i])
		}
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// series is the name with its labels, as the exposition writes it.
func (f *family) series(values []string) string {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s takes labels %v, given %d values", f.name, f.labels, len(values)))
	}
	return f.name + labelSet(f.labels, values, "")
}

// labelSet writes {a="x",b="y"} (nothing without labels), escaping
// values as the text format says, and le last if given.
func labelSet(names, values []string, le string) string {
	if len(names) == 0 && le == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteString(`="`)
		b.WriteString(escape(values[i]))
		b.WriteByte('"')
	}
	if le != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`le="`)
		b.WriteString(le)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escape(v string) string { return escaper.Replace(v) }

// Histogram is a family of classic Prometheus histograms (cumulative
// "le" buckets, _sum and _count), one per label values.
type Histogram struct {
	f       *family
	buckets []float64
	mu      sync.Mutex
	series  map[string]*histSeries
}

type histSeries struct {
	values []string
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

// Histogram registers a histogram family with the given upper bounds
// (ascending; +Inf is implied).
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) *Histogram {
	if r == nil {
		return nil
	}
	if !slices.IsSorted(buckets) || len(buckets) == 0 {
		panic(fmt.Sprintf("metrics: %s: buckets must be given in ascending order", name))
	}
	h := &Histogram{buckets: slices.Clone(buckets), series: map[string]*histSeries{}}
	h.f = &family{name: name, help: help, typ: "histogram", labels: labels, hist: h}
	return r.add(h.f).hist
}

// Observe records v in the series of the label values.
func (h *Histogram) Observe(v float64, values ...string) {
	if h == nil {
		return
	}
	key := h.f.series(values)
	h.mu.Lock()
	s := h.series[key]
	if s == nil {
		s = &histSeries{values: slices.Clone(values), counts: make([]atomic.Uint64, len(h.buckets)+1)}
		h.series[key] = s
	}
	h.mu.Unlock()
	i, _ := slices.BinarySearch(h.buckets, v)
	s.counts[i].Add(1)
	for {
		old := s.sum.Load()
		if s.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	s.count.Add(1)
}

// Count is how many values the series has recorded (tests).
func (h *Histogram) Count(values ...string) uint64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.series[h.f.series(values)]; s != nil {
		return s.count.Load()
	}
	return 0
}

func (h *Histogram) write(w io.Writer) {
	h.mu.Lock()
	keys := slices.Sorted(maps.Keys(h.series))
	all := make([]*histSeries, len(keys))
	for i, k := range keys {
		all[i] = h.series[k]
	}
	h.mu.Unlock()
	for _, s := range all {
		var cum uint64
		for i := range s.counts {
			cum += s.counts[i].Load()
			le := "+Inf"
			if i < len(h.buckets) {
				le = strconv.FormatFloat(h.buckets[i], 'g', -1, 64)
			}
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.f.name, labelSet(h.f.labels, s.values, le), cum)
		}
		labels := labelSet(h.f.labels, s.values, "")
		fmt.Fprintf(w, "%s_sum%s %s\n", h.f.name, labels, strconv.FormatFloat(math.Float64frombits(s.sum.Load()), 'g', -1, 64))
		fmt.Fprintf(w, "%s_count%s %d\n", h.f.name, labels, s.count.Load())
	}
}

// WritePrometheus writes every family in the text exposition format,
// each with its HELP and TYPE, in name order, then the Go runtime's and
// the process's own (go_*, process_*).
func (r *Registry) WritePrometheus(w io.Writer) {
	if r == nil {
		return
	}
	r.mu.Lock()
	fams := make([]*family, 0, len(r.fams))
	for _, f := range r.fams {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	for _, f := range fams {
		fmt.Fprintf(&buf, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
		switch {
		case f.hist != nil:
			f.hist.write(&buf)
		case f.read != nil:
			f.read(func(v float64, values ...string) {
				if len(values) != len(f.labels) {
					return
				}
				fmt.Fprintf(&buf, "%s%s %s\n", f.name, labelSet(f.labels, values, ""), strconv.FormatFloat(v, 'g', -1, 64))
			})
		default:
			f.set.write(&buf)
		}
	}
	writeRuntime(&buf)
	writeProcess(&buf)
	w.Write(buf.Bytes())
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeHelp(h string) string { return helpEscaper.Replace(h) }

// Handler serves the exposition (GET /metrics).
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		r.WritePrometheus(w)
	})
}

// Families lists every family as "name type: help" in name order, for
// the test that pins names and help text.
func (r *Registry) Families() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.fams {
		l := ""
		if len(f.labels) > 0 {
			l = "{" + strings.Join(f.labels, ",") + "}"
		}
		out = append(out, fmt.Sprintf("%s%s %s: %s", f.name, l, f.typ, f.help))
	}
	slices.Sort(out)
	return out
}

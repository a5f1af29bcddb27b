package metrics

import (
	"strings"
	"testing"
)

func TestExposition(t *testing.T) {
	r := New()
	c := r.Counter("jinid_things_total", "Things, by kind.", "kind")
	g := r.Gauge("jinid_level", "A level.")
	h := r.Histogram("jinid_wait_seconds", "Waits.", []float64{0.1, 1}, "outcome")
	r.GaugeFunc("jinid_items", "Items, by service.", []string{"service"}, func(emit func(float64, ...string)) {
		emit(3, "lookup")
		emit(1, `a"b\c`)
	})
	c.Inc("x")
	c.Add(2, "x")
	g.Set(1.5)
	h.Observe(0.05, "ok")
	h.Observe(0.5, "ok")
	h.Observe(7, "ok")
	var b strings.Builder
	r.WritePrometheus(&b)
	got := b.String()
	want := `# HELP jinid_items Items, by service.
# TYPE jinid_items gauge
jinid_items{service="lookup"} 3
jinid_items{service="a\"b\\c"} 1
# HELP jinid_level A level.
# TYPE jinid_level gauge
jinid_level 1.5
# HELP jinid_things_total Things, by kind.
# TYPE jinid_things_total counter
jinid_things_total{kind="x"} 3
# HELP jinid_wait_seconds Waits.
# TYPE jinid_wait_seconds histogram
jinid_wait_seconds_bucket{outcome="ok",le="0.1"} 1
jinid_wait_seconds_bucket{outcome="ok",le="1"} 2
jinid_wait_seconds_bucket{outcome="ok",le="+Inf"} 3
jinid_wait_seconds_sum{outcome="ok"} 7.55
jinid_wait_seconds_count{outcome="ok"} 3
`
	if !strings.HasPrefix(got, want) {
		t.Fatalf("exposition:\n%s\nwant it to begin with:\n%s", got, want)
	}
	if !strings.Contains(got, "\ngo_goroutines ") || !strings.Contains(got, "\nprocess_resident_memory_bytes ") {
		t.Error("the runtime's and process's metrics are missing")
	}
}

func TestNilCountsNothing(t *testing.T) {
	var r *Registry
	r.Counter("jinid_x_total", "X.").Inc()
	r.Gauge("jinid_y", "Y.").Set(1)
	r.Histogram("jinid_z_seconds", "Z.", []float64{1}).Observe(1)
	r.GaugeFunc("jinid_w", "W.", nil, nil)
	r.WritePrometheus(&strings.Builder{})
}

func TestRegistrationMistakesPanic(t *testing.T) {
	for name, f := range map[string]func(r *Registry){
		"no prefix":           func(r *Registry) { r.Gauge("things", "T.") },
		"no help":             func(r *Registry) { r.Gauge("jinid_things", " ") },
		"no _total":           func(r *Registry) { r.Counter("jinid_things", "T.") },
		"twice, another help": func(r *Registry) { r.Gauge("jinid_a", "A."); r.Gauge("jinid_a", "Another A.") },
		"twice, another type": func(r *Registry) { r.Gauge("jinid_a_total", "A."); r.Counter("jinid_a_total", "A.") },
		"twice, other labels": func(r *Registry) { r.Gauge("jinid_a", "A.", "x"); r.Gauge("jinid_a", "A.", "y") },
		"twice, other buckets": func(r *Registry) {
			r.Histogram("jinid_h_seconds", "H.", []float64{1})
			r.Histogram("jinid_h_seconds", "H.", []float64{2})
		},
		"twice, a func": func(r *Registry) { r.GaugeFunc("jinid_a", "A.", nil, nil); r.GaugeFunc("jinid_a", "A.", nil, nil) },
		"bad label":     func(r *Registry) { r.Gauge("jinid_a", "A.", "Kind") },
		"label count":   func(r *Registry) { r.Gauge("jinid_a", "A.", "kind").Set(1) },
		"bad buckets":   func(r *Registry) { r.Histogram("jinid_h_seconds", "H.", []float64{2, 1}) },
		"le as label":   func(r *Registry) { r.Histogram("jinid_h_seconds", "H.", []float64{1}, "le") },
		"upper case":    func(r *Registry) { r.Gauge("jinid_A", "A.") },
		"ends with _":   func(r *Registry) { r.Gauge("jinid_a_", "A.") },
		"digit first":   func(r *Registry) { r.Gauge("jinid_1a", "A.") },
		"prefix only":   func(r *Registry) { r.Gauge("jinid_", "A.") },
		"dash":          func(r *Registry) { r.Gauge("jinid_a-b", "A.") },
		"label dash":    func(r *Registry) { r.Gauge("jinid_a", "A.", "a-b") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(New())
		})
	}
}

// Several instances of one part (a service run for each shard of a
// cluster's work) count into one family.
func TestSameFamilyShared(t *testing.T) {
	r := New()
	r.Counter("jinid_calls_total", "Calls.", "kind").Inc("a")
	r.Counter("jinid_calls_total", "Calls.", "kind").Inc("a")
	r.Histogram("jinid_h_seconds", "H.", []float64{1}).Observe(0.5)
	r.Histogram("jinid_h_seconds", "H.", []float64{1}).Observe(0.5)
	var b strings.Builder
	r.WritePrometheus(&b)
	for _, want := range []string{`jinid_calls_total{kind="a"} 2`, `jinid_h_seconds_count 2`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %s in:\n%s", want, b.String())
		}
	}
}

// TestParseStat: the command may hold spaces and parentheses; the
// fields are counted from the last ')'.
func TestParseStat(t *testing.T) {
	line := "4242 (jinid (x) y) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 75 0 0 20 0 9 0 123456 12345678 3210 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	got, err := parseStat([]byte(line))
	want := stat{utime: 250, stime: 75, threads: 9, start: 123456, vsize: 12345678, rss: 3210}
	if err != nil || got != want {
		t.Fatalf("parseStat = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "4242 jinid S 1", "4242 (jinid) S 1 2 3", strings.Replace(line, " 250 ", " x ", 1)} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%.30q): no error", bad)
		}
	}
}

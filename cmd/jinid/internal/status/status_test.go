package status

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestJournalKeepsTheLast50NewestFirst(t *testing.T) {
	at := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	j := NewJournal(func() time.Time { at = at.Add(time.Second); return at })
	if len(j.List()) != 0 {
		t.Fatal("a new journal lists events")
	}
	for i := range 120 {
		j.Add("k", fmt.Sprint(i))
	}
	l := j.List()
	if len(l) != JournalSize || l[0].Text != "119" || l[JournalSize-1].Text != "70" || !l[0].At.After(l[1].At) {
		t.Fatalf("journal after 120 events: %d, first %+v, last %+v", len(l), l[0], l[len(l)-1])
	}
}

func TestHeardForgetsTheSilentAndIsBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	h := NewHeard(time.Minute)
	h.Note(t0, "b", "10.0.0.2:4160", []string{""}, 2, "eth0")
	h.Note(t0, "a", "10.0.0.1:4160", []string{"lab"}, 1, "eth0")
	h.Note(t0.Add(30*time.Second), "a", "10.0.0.1:4160", []string{"lab"}, 2, "eth0")
	l := h.List(t0.Add(70 * time.Second))
	if len(l) != 1 || l[0].ServiceID != "a" || fmt.Sprint(l[0].Versions) != "[1 2]" || !l[0].Since.Equal(t0) {
		t.Fatalf("heard: %+v", l)
	}
	for i := range MaxHeard + 10 {
		h.Note(t0.Add(80*time.Second), fmt.Sprint("x", i), "h:1", []string{"lab"}, 2, "eth0")
	}
	if n := len(h.List(t0.Add(80 * time.Second))); n != MaxHeard {
		t.Fatalf("%d kept after a flood, want the cap %d", n, MaxHeard)
	}
}

// What lookup services, interfaces and peers call themselves is shown,
// never run: a group named like markup arrives escaped.
func TestRenderEscapes(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	Render(&b, Page{Now: now, Refresh: 10, Ready: false, Version: "dev",
		Identity:       Identity{ServiceID: "id-1", Groups: []string{"", "lab"}, Started: now.Add(-3 * time.Hour)},
		Checks:         []Check{{Name: "multicast", Detail: "no eligible interface"}},
		Interfaces:     []Interface{{Name: "eth0", Addresses: []string{"10.0.0.1/24"}, Served: true, State: "served (IPv4)"}},
		LookupServices: []LookupService{{ServiceID: "ls-1", Address: "10.0.0.2:4160", Groups: []string{"<script>alert(1)</script>"}, Versions: []int{1, 2}, How: "group (eth0)", Since: now.Add(-5 * time.Minute)}},
		Events:         []Notable{{At: now, Kind: "lookup service discovered", Text: `"><img src=x>`}},
	})
	page := b.String()
	for _, want := range []string{`id="readiness">not ready`, `data-name="eth0"`, `data-id="ls-1"`, "&lt;script&gt;alert(1)&lt;/script&gt;",
		"&#34;&gt;&lt;img src=x&gt;", "v1, v2", "(public), lab", "<td>5m</td>", "3h (since 2026-11-23 09:00:00)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("markup from outside reached the page unescaped")
	}
}

// A lookup service that says goodbye (an announcement of no groups), or
// is discarded, is gone from the page at once, not five minutes later.
func TestHeardForgetsGoodbyesAtOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	h := NewHeard(5 * time.Minute)
	h.Note(t0, "a", "10.0.0.1:4160", []string{"lab"}, 2, "eth0")
	h.Note(t0, "b", "10.0.0.2:4160", []string{"lab"}, 2, "eth0")
	h.Note(t0.Add(time.Second), "a", "10.0.0.1:4160", nil, 2, "eth0")
	h.Forget("b")
	if l := h.List(t0.Add(2 * time.Second)); len(l) != 0 {
		t.Fatalf("after a goodbye and a discard: %+v", l)
	}
}

// The registered services are listed, a page of them, with who
// registered each to administrators only.
func TestRenderRegistered(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	p := Page{Now: now, Refresh: 10, RegisteredTotal: 250, RegisteredNext: "id-100",
		Registered: []Registered{{ServiceID: "id-1", Types: []string{"com.example.Printer"}, Name: "lobby <b>",
			Endpoint: "ipp://10.0.0.9/q", Owner: "tok-7", Expires: now.Add(time.Hour)}, {ServiceID: "id-2", Types: []string{"a.B"}}}}
	var b bytes.Buffer
	Render(&b, p)
	page := b.String()
	for _, want := range []string{"Registered services (250)", `data-id="id-1"`, "com.example.Printer", "lobby &lt;b&gt;",
		"ipp://10.0.0.9/q", "tok-7", "2026-11-23 13:00:00", "never", "administrator", `href="/?after=id-100"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

package lookup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

func attr(typ string, fields map[string]any, supers ...string) Attribute {
	return Attribute{Type: typ, Fields: fields, Supertypes: supers}
}

func TestMatchingRules(t *testing.T) {
	it := &Item{
		ServiceID: "01234567-89ab-cdef-fedc-ba9876543210",
		Types:     []string{"com.example.Printer", "java.rmi.Remote"},
		Attributes: []Attribute{
			attr("net.jini.lookup.entry.Name", map[string]any{"name": "lobby"}),
			attr("com.example.Location", map[string]any{"floor": float64(2), "building": "B", "room": nil}, "net.jini.lookup.entry.Location"),
		},
	}
	for _, tc := range []struct {
		name string
		t    Template
		want bool
	}{
		{"empty template matches anything", Template{}, true},
		{"serviceID equal", Template{ServiceID: it.ServiceID}, true},
		{"serviceID different", Template{ServiceID: "11111111-1111-1111-1111-111111111111"}, false},
		{"one type", Template{Types: []string{"com.example.Printer"}}, true},
		{"all types must be among the item's", Template{Types: []string{"com.example.Printer", "com.example.Scanner"}}, false},
		{"attribute with equal field", Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "lobby"})}}, true},
		{"attribute with different field", Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "attic"})}}, false},
		{"null field is a wildcard", Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": nil})}}, true},
		{"no fields: any entry of the type", Template{Attributes: []Attribute{attr("com.example.Location", nil)}}, true},
		{"field the entry has as null does not match a value", Template{Attributes: []Attribute{attr("com.example.Location", map[string]any{"room": "101"})}}, false},
		{"numbers compare by value", Template{Attributes: []Attribute{attr("com.example.Location", map[string]any{"floor": 2})}}, true},
		{"declared supertype matches", Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Location", map[string]any{"building": "B"})}}, true},
		{"unrelated type", Template{Attributes: []Attribute{attr("com.example.Other", nil)}}, false},
		{"several templates: each must match some entry", Template{Attributes: []Attribute{
			attr("net.jini.lookup.entry.Name", map[string]any{"name": "lobby"}),
			attr("com.example.Location", map[string]any{"floor": 2}),
		}}, true},
		{"several templates: one fails", Template{Attributes: []Attribute{
			attr("net.jini.lookup.entry.Name", map[string]any{"name": "lobby"}),
			attr("com.example.Location", map[string]any{"floor": 3}),
		}}, false},
		{"types and attributes together", Template{Types: []string{"java.rmi.Remote"}, Attributes: []Attribute{attr("net.jini.lookup.entry.Name", nil)}}, true},
	} {
		if got := tc.t.Matches(it); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&Template{}).Matches(nil) {
		t.Error("a template matches no item when there is none")
	}
}

// capture records deliveries instead of sending them.
type capture struct {
	mu  sync.Mutex
	got []event.Delivery
}

func (c *capture) Send(d event.Delivery) {
	c.mu.Lock()
	c.got = append(c.got, d)
	c.mu.Unlock()
}

func (c *capture) events() []apitypes.ServiceEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []apitypes.ServiceEvent
	for _, d := range c.got {
		out = append(out, d.Event.(apitypes.ServiceEvent))
	}
	return out
}

type fixture struct {
	st  *store.Store
	g   *lease.Grantor
	r   *Registrar
	cap *capture
}

func open(t testing.TB, dir string, clk clock.Clock) *fixture {
	t.Helper()
	return openWith(t, dir, clk, Config{})
}

// openWith opens the registrar with cfg's limits.
func openWith(t testing.TB, dir string, clk clock.Clock, cfg Config) *fixture {
	t.Helper()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := lease.New(st, clk, slog.New(slog.DiscardHandler))
	c := &capture{}
	cfg.Store, cfg.Grantor, cfg.Outbound, cfg.Dispatcher = st, g, loopbackOK, c
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st, g, r, c}
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	f.g.Shutdown(context.Background())
	f.st.Close()
}

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func printer(name string) Item {
	return Item{Types: []string{"com.example.Printer"}, Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": name})}}
}

func TestTransitionsAndSequence(t *testing.T) {
	clk := clock.NewFake(t0)
	f := open(t, t.TempDir(), clk)
	n, err := f.r.Notify(NotifyRequest{
		Template:    Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "lobby"})}},
		Transitions: []string{MatchNoMatch, NoMatchMatch, MatchMatch}, Listener: "http://127.0.0.1:9/l", Duration: lease.Forever,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n.SeqNum != 0 || n.EventID == 0 {
		t.Fatalf("notify registration %+v", n)
	}
	reg, err := f.r.Register(printer("lobby"), 60_000, "") // NOMATCH_MATCH
	if err != nil {
		t.Fatal(err)
	}
	if err := f.r.ChangeAttributes(reg.ServiceID, AttributeChange{Add: []Attribute{attr("com.example.Color", nil)}}, ""); err != nil { // MATCH_MATCH
		t.Fatal(err)
	}
	mod := &AttributeModify{[]Attribute{attr("net.jini.lookup.entry.Name", nil)}, []*Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "attic"}}}}
	if err := f.r.ChangeAttributes(reg.ServiceID, AttributeChange{Modify: mod}, ""); err != nil { // MATCH_NOMATCH
		t.Fatal(err)
	}
	again := printer("lobby")
	again.ServiceID = reg.ServiceID
	if _, err := f.r.Register(again, 60_000, ""); err != nil { // replaces: NOMATCH_MATCH
		t.Fatal(err)
	}
	other, _ := f.r.Register(printer("cellar"), 10_000, "") // no event
	clk.Advance(61 * time.Second)                           // both leases end: MATCH_NOMATCH for the lobby printer only

	evs := f.cap.events()
	wantTr := []string{NoMatchMatch, MatchMatch, MatchNoMatch, NoMatchMatch, MatchNoMatch}
	if len(evs) != len(wantTr) {
		t.Fatalf("got %d events, want %d: %+v", len(evs), len(wantTr), evs)
	}
	for i, ev := range evs {
		if ev.Transition != wantTr[i] || ev.SeqNum != int64(i+1) || ev.EventID != n.EventID || ev.ServiceID != reg.ServiceID {
			t.Errorf("event %d: %v seq %d, want %s seq %d", i, ev.Transition, ev.SeqNum, wantTr[i], i+1)
		}
		if (ev.Item == nil) != (wantTr[i] == MatchNoMatch) {
			t.Errorf("event %d (%s): item %v", i, wantTr[i], ev.Item)
		}
	}
	if items, total, _ := f.r.Query(Template{}, 10); total != 0 || len(items) != 0 {
		t.Errorf("after the leases ended %d items remain", total)
	}
	_ = other
}

func TestQueryMaxMatches(t *testing.T) {
	f := open(t, t.TempDir(), clock.NewFake(t0))
	for _, n := range []string{"a", "b", "c"} {
		if _, err := f.r.Register(printer(n), 60_000, ""); err != nil {
			t.Fatal(err)
		}
	}
	items, total, err := f.r.Query(Template{Types: []string{"com.example.Printer"}}, 2)
	if err != nil || len(items) != 2 || total != 3 {
		t.Fatalf("got %d items of %d (%v), want 2 of 3", len(items), total, err)
	}
	items, total, _ = f.r.Query(Template{}, 0)
	if len(items) != 0 || total != 3 {
		t.Fatalf("maxMatches 0: %d items, total %d", len(items), total)
	}
	if _, _, err := f.r.Query(Template{}, -1); !fault.Is(err, apitypes.InvalidArgument) {
		t.Fatalf("negative maxMatches: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	f := open(t, t.TempDir(), clock.NewFake(t0))
	for _, tc := range []struct {
		name string
		err  error
		code fault.Code
	}{
		{"bad ServiceID", regErr(f.r.Register(Item{ServiceID: "nope"}, 1000, "")), apitypes.InvalidArgument},
		{"attribute without type", regErr(f.r.Register(Item{Attributes: []Attribute{{}}}, 1000, "")), apitypes.NullArgument},
		{"zero duration", regErr(f.r.Register(printer("x"), 0, "")), apitypes.InvalidArgument},
		{"no transitions", notifyErr(f.r.Notify(NotifyRequest{Listener: "http://x/", Duration: 1000})), apitypes.InvalidArgument},
		{"bad transition", notifyErr(f.r.Notify(NotifyRequest{Transitions: []string{"SOMETIMES"}, Listener: "http://x/", Duration: 1000})), apitypes.InvalidArgument},
		{"no listener", notifyErr(f.r.Notify(NotifyRequest{Transitions: []string{MatchMatch}, Duration: 1000})), apitypes.NullArgument},
		{"listener not http", notifyErr(f.r.Notify(NotifyRequest{Transitions: []string{MatchMatch}, Listener: "ftp://x/", Duration: 1000})), apitypes.InvalidArgument},
		{"change unknown registration", f.r.ChangeAttributes("x", AttributeChange{Add: []Attribute{}}, ""), apitypes.UnknownLease},
		{"two changes at once", f.r.ChangeAttributes("x", AttributeChange{Add: []Attribute{}, Set: []Attribute{}}, ""), apitypes.InvalidArgument},
		{"nil groups", f.r.SetGroups(nil), apitypes.NullArgument},
		{"bad locator", f.r.SetLocators([]string{"http://x"}), apitypes.InvalidArgument},
	} {
		if !fault.Is(tc.err, tc.code) {
			t.Errorf("%s: error %v, want %s", tc.name, tc.err, tc.code)
		}
	}
	if items, n := f.r.Count(); items != 0 || n != 0 {
		t.Errorf("bad input changed state: %d items, %d notify registrations", items, n)
	}
}

func regErr(_ Registration, err error) error          { return err }
func notifyErr(_ NotifyRegistration, err error) error { return err }

func TestModifyAttributes(t *testing.T) {
	attrs := []Attribute{
		attr("Name", map[string]any{"name": "a"}),
		attr("Loc", map[string]any{"floor": 1.0, "room": "x"}),
		attr("Loc", map[string]any{"floor": 2.0, "room": "y"}),
	}
	got, err := modify(attrs, []Attribute{attr("Loc", map[string]any{"floor": 1.0}), attr("Name", nil)},
		[]*Attribute{{Type: "Loc", Fields: map[string]any{"room": "z", "floor": nil}}, nil})
	if err != nil {
		t.Fatal(err)
	}
	want := []Attribute{attr("Loc", map[string]any{"floor": 1.0, "room": "z"}), attr("Loc", map[string]any{"floor": 2.0, "room": "y"})}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("modified to %s, want %s", gj, wj)
	}
	if _, err := modify(attrs, []Attribute{attr("Loc", nil)}, nil); !fault.Is(err, apitypes.InvalidArgument) {
		t.Fatalf("length mismatch: %v", err)
	}
	if _, err := modify(attrs, []Attribute{attr("Loc", nil)}, []*Attribute{{Type: "Name"}}); !fault.Is(err, apitypes.InvalidArgument) {
		t.Fatalf("type mismatch: %v", err)
	}
}

// Registrations, notify registrations and sequence numbers survive a
// restart; a registration whose lease lapsed while down is gone, with its
// MATCH_NOMATCH event.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	f := open(t, dir, clk)
	n, _ := f.r.Notify(NotifyRequest{Transitions: []string{NoMatchMatch, MatchNoMatch}, Listener: "http://127.0.0.1:9/", Duration: lease.Forever})
	keep, _ := f.r.Register(printer("keep"), 3_600_000, "")
	lapse, _ := f.r.Register(printer("lapse"), 60_000, "")
	meta := f.r.Meta()
	f.close()

	clk.Advance(2 * time.Minute)
	f2 := open(t, dir, clk)
	if f2.r.Meta().ServiceID != meta.ServiceID {
		t.Fatal("the lookup service's ServiceID changed across a restart")
	}
	items, _, _ := f2.r.Query(Template{}, 10)
	if len(items) != 1 || items[0].ServiceID != keep.ServiceID {
		t.Fatalf("after restart: %+v", items)
	}
	evs := f2.cap.events()
	if len(evs) != 1 || evs[0].SeqNum != 3 || evs[0].ServiceID != lapse.ServiceID || evs[0].EventID != n.EventID {
		t.Fatalf("events at restart %+v; want the lapsed registration's MATCH_NOMATCH with seq 3", evs)
	}
	if l, err := f2.r.Lease(keep.ServiceID); err != nil || l.Expiration != keep.Lease.Expiration {
		t.Fatalf("lease after restart %+v %v", l, err)
	}
	if !slices.Equal(f2.r.Meta().Groups, []string{""}) {
		t.Fatalf("default groups %q, want the public group", f2.r.Meta().Groups)
	}
}

// One client's item is not another's to replace or change; its owner and
// an administrator may, across a restart too.
func TestItemOwners(t *testing.T) {
	dir := t.TempDir()
	f := open(t, dir, clock.NewFake(t0))
	reg, err := f.r.Register(printer("lobby"), 60_000, "token:alice")
	if err != nil {
		t.Fatal(err)
	}
	it := printer("mine now")
	it.ServiceID = reg.ServiceID
	change := AttributeChange{Add: []Attribute{attr("com.example.Color", nil)}}
	if _, err := f.r.Register(it, 60_000, "token:mallory"); !fault.Is(err, apitypes.Forbidden) {
		t.Fatalf("another client replaced the item: %v", err)
	}
	if err := f.r.ChangeAttributes(reg.ServiceID, change, "anonymous"); !fault.Is(err, apitypes.Forbidden) {
		t.Fatalf("another client changed the item: %v", err)
	}
	if err := f.r.ChangeAttributes(reg.ServiceID, change, "token:alice"); err != nil {
		t.Fatalf("the owner: %v", err)
	}
	f.close()
	f = open(t, dir, clock.NewFake(t0))
	if _, err := f.r.Register(it, 60_000, "token:mallory"); !fault.Is(err, apitypes.Forbidden) {
		t.Fatalf("after a restart, another client replaced the item: %v", err)
	}
	if _, err := f.r.Register(it, 60_000, ""); err != nil {
		t.Fatalf("an administrator: %v", err)
	}
}

// Listings come a page at a time, bounded in count and in bytes; an item
// larger than the limit is refused.
func TestPagesAndItemSize(t *testing.T) {
	f := open(t, t.TempDir(), clock.NewFake(t0))
	pad := func(n int) Item {
		return Item{Types: []string{"com.example.Big"}, Attributes: []Attribute{attr("com.example.Pad", map[string]any{"pad": strings.Repeat("x", n)})}}
	}
	if _, err := f.r.Register(pad(DefaultMaxItemBytes), 60_000, ""); !fault.Is(err, apitypes.TooLarge) {
		t.Fatalf("an item over the limit: %v", err)
	}
	for range 250 {
		if _, err := f.r.Register(printer("p"), 60_000, ""); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	pages := 0
	for cursor := ""; ; pages++ {
		items, total, next, err := f.r.Page(Template{}, cursor, 100)
		if err != nil || total != 250 {
			t.Fatalf("page %d: %d of %d, %v", pages, len(items), total, err)
		}
		for _, it := range items {
			if seen[it.ServiceID] {
				t.Fatalf("%s listed twice", it.ServiceID)
			}
			seen[it.ServiceID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 250 || pages != 2 {
		t.Fatalf("%d items in %d pages", len(seen), pages+1)
	}
	// 40 items of 40 KiB: a page stops at about a megabyte.
	for range 40 {
		if _, err := f.r.Register(pad(40<<10), 60_000, ""); err != nil {
			t.Fatal(err)
		}
	}
	items, _, next, _ := f.r.Page(Template{Types: []string{"com.example.Big"}}, "", 1000)
	if len(items) >= 40 || len(items) < 20 || next == "" {
		t.Fatalf("a page of big items: %d, next %q", len(items), next)
	}
	if items, _, _ := f.r.Query(Template{}, 1<<30); len(items) > DefaultMaxPage {
		t.Fatalf("a query returned %d items", len(items))
	}
}

// The bytes of items are bounded per client and in all (they are held in
// memory); a refused registration changes nothing, a replacement counts
// only what it adds, items that go give their bytes back, and the counts
// are rebuilt after a restart.
func TestItemBytesQuotas(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ItemsBytes: 100 << 10, ItemsBytesPerOwner: 50 << 10}
	f := openWith(t, dir, clock.NewFake(t0), cfg)
	pad := func(id string, n int) Item {
		return Item{ServiceID: id, Types: []string{"com.example.Big"},
			Attributes: []Attribute{attr("com.example.Pad", map[string]any{"pad": strings.Repeat("x", n)})}}
	}
	id := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	var alice []string
	for i := 0; ; i++ {
		reg, err := f.r.Register(pad(id(i), 10<<10), 60_000, "token:alice")
		if err != nil {
			var e *fault.Error
			if !errors.As(err, &e) || e.Code != apitypes.TooMany || e.Limit != "itemsBytesPerClient" || e.RetryAfter == 0 {
				t.Fatalf("alice's item %d: %v", i, err)
			}
			break
		}
		alice = append(alice, reg.ServiceID)
	}
	if len(alice) != 4 {
		t.Fatalf("alice registered %d items of 10 KiB under a 50 KiB quota", len(alice))
	}
	// Replacing one of hers with one the same size is no growth.
	if _, err := f.r.Register(pad(alice[0], 10<<10), 60_000, "token:alice"); err != nil {
		t.Fatalf("replacing an item with one of its size: %v", err)
	}
	for i := 100; ; i++ {
		if _, err := f.r.Register(pad(id(i), 10<<10), 60_000, fmt.Sprintf("token:c%d", i)); err != nil {
			var e *fault.Error
			if !errors.As(err, &e) || e.Code != apitypes.TooMany || e.Limit != "itemsBytes" {
				t.Fatalf("item %d: %v", i, err)
			}
			break
		}
	}
	items, _ := f.r.Count()
	f.close()
	f = openWith(t, dir, clock.NewFake(t0), cfg)
	if n, _ := f.r.Count(); n != items {
		t.Fatalf("%d items after a restart, %d before", n, items)
	}
	if _, err := f.r.Register(pad(id(500), 10<<10), 60_000, "token:bob"); !fault.Is(err, apitypes.TooMany) {
		t.Fatalf("after a restart the store's bytes were forgotten: %v", err)
	}
	// An item gone gives its bytes back.
	rec, err := f.r.Lease(alice[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Cancel(rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Register(pad(id(501), 10<<10), 60_000, "token:alice"); err != nil {
		t.Fatalf("after one of alice's items went: %v", err)
	}
}

// A page written item by item is the JSON of apitypes.Items.
func TestWriteItemsIsItemsJSON(t *testing.T) {
	for _, p := range []aPage{
		{items: []Item{}},
		{items: []Item{printer("a")}, total: 1},
		{items: []Item{printer("a"), printer("b"), printer("c")}, total: 7, next: "x"},
	} {
		var got bytes.Buffer
		if err := writeItems(&got, p, nil); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(apitypes.Items{Items: apiItems(p.items), TotalMatches: p.total, NextCursor: p.next})
		var compact bytes.Buffer
		if err := json.Compact(&compact, got.Bytes()); err != nil {
			t.Fatalf("written %s: %v", got.String(), err)
		}
		if compact.String() != string(want) {
			t.Fatalf("written:\n%s\nwant:\n%s", got.String(), want)
		}
	}
}

// apiItems is items as the API has them (what writeItems streams).
func apiItems(its []Item) []apitypes.Item {
	out := make([]apitypes.Item, len(its))
	for i, it := range its {
		out[i] = APIItem(it)
	}
	return out
}

// The index narrows what a query looks at and nothing else: over random
// items and templates (types, entries by their types and supertypes,
// fields of every kind of value, null fields), a query finds exactly what
// the matching rules find among all the items, before and after items
// change and go.
func TestIndexAgreesWithScan(t *testing.T) {
	f := open(t, t.TempDir(), clock.Real{})
	rng := rand.New(rand.NewPCG(7, 48))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	value := func() any {
		switch rng.IntN(6) {
		case 0:
			return pick("lobby", "lab", "2")
		case 1:
			return float64(rng.IntN(3))
		case 2:
			return rng.IntN(2) == 0
		case 3:
			return json.Number(fmt.Sprint(rng.IntN(3)))
		case 4:
			return map[string]any{"int": float64(rng.IntN(2))}
		}
		return nil
	}
	entry := func() Attribute {
		fields := map[string]any{}
		for range rng.IntN(3) {
			fields[pick("name", "floor", "ok")] = value()
		}
		switch rng.IntN(3) {
		case 0:
			return attr("net.jini.lookup.entry.Name", fields, "net.jini.entry.AbstractEntry")
		case 1:
			return attr("org.example.Room", fields, "org.example.Place", "net.jini.entry.AbstractEntry")
		}
		return attr("org.example.Place", fields, "net.jini.entry.AbstractEntry")
	}
	item := func() Item {
		var it Item
		for range 1 + rng.IntN(2) {
			it.Types = append(it.Types, pick("a.Printer", "a.Scanner", "java.io.Serializable"))
		}
		for range rng.IntN(3) {
			it.Attributes = append(it.Attributes, entry())
		}
		return it
	}
	var ids []string
	for range 200 {
		reg, err := f.r.Register(item(), 3_600_000, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ServiceID)
	}
	check := func(when string) {
		t.Helper()
		for range 2000 {
			var tmpl Template
			for range rng.IntN(2) {
				tmpl.Types = append(tmpl.Types, pick("a.Printer", "a.Scanner", "java.io.Serializable", "a.None"))
			}
			for range rng.IntN(3) {
				a := entry()
				a.Supertypes = nil
				if rng.IntN(4) == 0 {
					a.Type = pick("net.jini.entry.AbstractEntry", "org.example.Place")
				}
				tmpl.Attributes = append(tmpl.Attributes, a)
			}
			if rng.IntN(20) == 0 {
				tmpl.ServiceID = ids[rng.IntN(len(ids))]
			}
			var want []string
			f.r.mu.RLock()
			for id, si := range f.r.items {
				if tmpl.Matches(&si.Item) {
					want = append(want, id)
				}
			}
			f.r.mu.RUnlock()
			slices.Sort(want)
			items, total, err := f.r.Query(tmpl, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.ServiceID)
			}
			if total != len(want) || !slices.Equal(got, want) {
				t.Fatalf("%s: template %+v found %v (%d), the rules %v", when, tmpl, got, total, want)
			}
		}
	}
	check("registered")
	for i, id := range ids {
		switch i % 3 {
		case 0:
			l, err := f.r.Lease(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.g.Cancel(l.ID); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := f.r.ChangeAttributes(id, AttributeChange{Set: []Attribute{entry()}}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("changed and cancelled")
}

// Changes made at once share commits (store.Shared), and come out as
// they would one after the other: a quota is not passed by changes of one
// commit that each saw room, one ServiceID registered by many clients at
// once has one owner, the registrations a notify registration hears get
// sequence numbers none repeats, and renewals beside cancels leave no
// cancelled lease alive.
func TestConcurrentChangesAsIfOneAfterAnother(t *testing.T) {
	f := openWith(t, t.TempDir(), clock.NewFake(t0), Config{ItemsBytesPerOwner: 50 << 10})
	n, err := f.r.Notify(NotifyRequest{Template: Template{Types: []string{"com.example.Printer"}},
		Transitions: []string{NoMatchMatch}, Listener: "http://127.0.0.1:9/l", Duration: lease.Forever})
	if err != nil {
		t.Fatal(err)
	}
	const writers = 16
	at := func(run func(i int)) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() { <-start; run(i) })
		}
		close(start)
		wg.Wait()
	}

	// succeeded has every writer register at once and counts the
	// registrations made; an error other than refused fails the test.
	succeeded := func(refused fault.Code, register func(i int) error) int {
		var mu sync.Mutex
		n := 0
		at(func(i int) {
			err := register(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				n++
			case !fault.Is(err, refused):
				t.Errorf("writer %d: %v", i, err)
			}
		})
		return n
	}

	// A quota: 10 KiB items under 50 KiB a client fit four times.
	if ok := succeeded(apitypes.TooMany, func(int) error {
		it := Item{Types: []string{"com.example.Big"}, Attributes: []Attribute{attr("com.example.Pad", map[string]any{"pad": strings.Repeat("x", 10<<10)})}}
		_, err := f.r.Register(it, 60_000, "token:alice")
		return err
	}); ok != 4 {
		t.Errorf("%d items of 10 KiB registered at once under a 50 KiB quota, want 4", ok)
	}

	// One ServiceID, sixteen clients: one owns it.
	const id = "00000000-0000-4000-8000-000000000001"
	if owners := succeeded(apitypes.Forbidden, func(i int) error {
		it := printer("race")
		it.ServiceID = id
		_, err := f.r.Register(it, 60_000, fmt.Sprintf("token:c%d", i))
		return err
	}); owners != 1 {
		t.Errorf("%d clients registered service %s at once, want 1 (the others Forbidden)", owners, id)
	}

	// Printers at once: each heard once, its own sequence number.
	regs := make([]Registration, writers)
	at(func(i int) {
		var err error
		if regs[i], err = f.r.Register(printer(fmt.Sprint(i)), 60_000, ""); err != nil {
			t.Errorf("printer %d: %v", i, err)
		}
	})
	seqs := map[int64]bool{}
	for _, ev := range f.cap.events() {
		if ev.EventID == n.EventID {
			if seqs[ev.SeqNum] {
				t.Errorf("sequence number %d given twice", ev.SeqNum)
			}
			seqs[ev.SeqNum] = true
		}
	}
	if len(seqs) != writers+1 { // and the race's one
		t.Errorf("%d events for %d printers registered", len(seqs), writers+1)
	}

	// Renewals and cancels of the same leases at once: a lease cancelled
	// is gone, whatever renewal committed beside it.
	at(func(i int) {
		id := regs[i/2].Lease.ID
		if i%2 == 0 {
			if err := f.g.Cancel(id); err != nil {
				t.Errorf("cancelling %s: %v", id, err)
			}
			return
		}
		if _, err := f.g.Renew(id, 60_000); err != nil && !fault.Is(err, apitypes.UnknownLease) {
			t.Errorf("renewing %s: %v", id, err)
		}
	})
	for i := 0; i < writers; i += 2 {
		if _, err := f.g.Get(regs[i/2].Lease.ID); !fault.Is(err, apitypes.UnknownLease) {
			t.Errorf("lease %d cancelled, and still there: %v", i/2, err)
		}
		if _, err := f.r.Lease(regs[i/2].ServiceID); err == nil {
			t.Errorf("item %d's lease cancelled, and the item still there", i/2)
		}
	}
}

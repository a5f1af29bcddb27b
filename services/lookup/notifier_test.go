package lookup

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/ids"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// A notifier sends the events of the registry's changes as a follower
// hands them over (the items before and after), numbers them as the
// registrar would, keeps its sequence numbers and revision across a
// restart, and sends nothing for a reset.
func TestNotifier(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &capture{}
	open := func() *Notifier {
		g := lease.New(st, clock.Real{}, slog.New(slog.DiscardHandler))
		n, err := NewNotifier(NotifierConfig{Store: st, Grantor: g, Outbound: loopbackOK, Dispatcher: c, NewID: ids.New, EventIDBase: 7 << 40})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Shutdown(context.Background()) })
		return n
	}
	n := open()
	reg, err := n.Notify(NotifyRequest{Template: Template{Types: []string{"com.example.Printer"}},
		Transitions: []string{MatchNoMatch, NoMatchMatch, MatchMatch}, Listener: "http://127.0.0.1:9/l", Duration: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if reg.EventID != 7<<40+1 {
		t.Errorf("event ID %d, want %d", reg.EventID, 7<<40+1)
	}
	record := func(it Item) []byte {
		raw, _ := json.Marshal(recordOf(&storedItem{Item: it, Lease: "l"}))
		return raw
	}
	lobby := printer("lobby")
	lobby.ServiceID = "11111111-1111-1111-1111-111111111111"
	attic := lobby
	attic.Attributes = []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "attic"})}
	other := Item{ServiceID: "22222222-2222-2222-2222-222222222222", Types: []string{"com.example.Scanner"}}
	key := lobby.ServiceID
	batches := []store.Batch{
		{Revision: 10, Changes: []store.Change{{Bucket: itemsBucket, Key: key, Value: record(lobby), Revision: 10},
			{Bucket: itemsBucket, Key: other.ServiceID, Value: record(other), Revision: 10}}},
		{Revision: 12, Changes: []store.Change{{Bucket: itemsBucket, Key: key, Prev: record(lobby), Value: record(attic), Revision: 11},
			{Bucket: itemsBucket, Key: key, Prev: record(attic), Revision: 12}}},
	}
	for _, b := range batches {
		if err := n.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, ev := range c.events() {
		got = append(got, ev.Transition)
		if ev.EventID != reg.EventID || ev.SeqNum != int64(len(got)) || ev.ServiceID != key {
			t.Errorf("event %d: %+v", len(got), ev)
		}
	}
	if want := []string{NoMatchMatch, MatchMatch, MatchNoMatch}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("transitions %v, want %v", got, want)
	}

	n = open() // as a node taking the shard over
	if n.Revision() != 12 || n.Count() != 1 {
		t.Errorf("reopened: revision %d, %d registrations", n.Revision(), n.Count())
	}
	if err := n.Apply(store.Batch{Revision: 20, Reset: true}); err != nil || n.Revision() != 20 || len(c.events()) != 3 {
		t.Errorf("a reset: %v, revision %d, %d events", err, n.Revision(), len(c.events()))
	}
	if err := n.Apply(store.Batch{Revision: 21, Changes: []store.Change{{Bucket: itemsBucket, Key: key, Value: record(lobby), Revision: 21}}}); err != nil {
		t.Fatal(err)
	}
	if evs := c.events(); len(evs) != 4 || evs[3].SeqNum != 4 {
		t.Errorf("after the restart: %+v", evs)
	}

	// A change that sends nothing is not committed at once: a node
	// taking over goes through it again, and sends nothing again.
	if err := n.Apply(store.Batch{Revision: 22, Changes: []store.Change{{Bucket: itemsBucket, Key: other.ServiceID, Prev: record(other), Revision: 22}}}); err != nil {
		t.Fatal(err)
	}
	if n.Revision() != 22 {
		t.Errorf("applied: revision %d, want 22", n.Revision())
	}
	if again := open(); again.Revision() != 21 || len(c.events()) != 4 {
		t.Errorf("taken over: revision %d (want 21, the last with an event), %d events", again.Revision(), len(c.events()))
	}
}

package lookup

import (
	"slices"
	"testing"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// A follower fed the registrar's buckets answers reads as the registrar
// does; later changes (an item and its lease gone) follow; a record
// that does not read is left out; it serves the read routes alone.
func TestFollower(t *testing.T) {
	f := open(t, t.TempDir(), clock.Real{})
	var regs []Registration
	for _, name := range []string{"lobby", "attic", "cellar"} {
		reg, err := f.r.Register(printer(name), 60_000, "")
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	if err := f.r.SetGroups([]string{"lab"}); err != nil {
		t.Fatal(err)
	}
	var all []store.Change
	if err := f.st.View(func(tx *store.Tx) error {
		for _, b := range FollowedBuckets() {
			if err := tx.ForEach(b, func(k string, raw []byte) error {
				all = append(all, store.Change{Bucket: b, Key: k, Value: slices.Clone(raw)})
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fl := NewFollower(Config{})
	fl.Follow(store.Batch{Changes: all, Reset: true})

	same := func(tmpl Template) {
		t.Helper()
		want, wantTotal, _ := f.r.Query(tmpl, 10)
		got, total, err := fl.Query(tmpl, 10)
		if err != nil || total != wantTotal || len(got) != len(want) {
			t.Fatalf("query %+v: the follower has %d of %d (%v), the registrar %d", tmpl, len(got), total, err, wantTotal)
		}
		for i := range got {
			if got[i].ServiceID != want[i].ServiceID {
				t.Errorf("query %+v: item %d is %s, want %s", tmpl, i, got[i].ServiceID, want[i].ServiceID)
			}
		}
	}
	same(Template{})
	same(Template{Types: []string{"com.example.Printer"}})
	same(Template{Attributes: []Attribute{attr("net.jini.lookup.entry.Name", map[string]any{"name": "attic"})}})
	for _, reg := range regs {
		want, _ := f.r.Lease(reg.ServiceID)
		if got, err := fl.Lease(reg.ServiceID); err != nil || got.Expiration != want.Expiration {
			t.Errorf("lease of %s: %v %v, want %v", reg.ServiceID, got, err, want)
		}
	}
	if m := fl.Meta(); m.ServiceID != f.r.Meta().ServiceID || !slices.Equal(m.Groups, []string{"lab"}) {
		t.Errorf("meta %+v, want %+v", m, f.r.Meta())
	}

	gone := regs[0]
	fl.Follow(store.Batch{Changes: []store.Change{{Bucket: itemsBucket, Key: gone.ServiceID}, {Bucket: lease.Bucket, Key: gone.Lease.ID}}})
	if n, _ := fl.Count(); n != 2 {
		t.Errorf("after a removal: %d items", n)
	}
	if _, err := fl.Lease(gone.ServiceID); err == nil {
		t.Error("the lease of an item gone is still there")
	}
	fl.Follow(store.Batch{Changes: []store.Change{{Bucket: itemsBucket, Key: "broken", Value: []byte("{")}}})
	if n, _ := fl.Count(); n != 2 {
		t.Errorf("after a record that does not read: %d items", n)
	}

	routes := httpjson.Patterns{}
	fl.Routes(routes)
	if _, ok := routes["GET /v1/lookup/services"]; !ok {
		t.Errorf("routes %v: no listing", routes)
	}
	for p, need := range routes {
		if need != httpjson.Read {
			t.Errorf("a follower serves %s (%s)", p, need)
		}
	}

	fl.Follow(store.Batch{Reset: true})
	if n, _ := fl.Count(); n != 0 {
		t.Errorf("reset to nothing: %d items", n)
	}
}

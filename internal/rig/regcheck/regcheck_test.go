package regcheck

import (
	"fmt"
	"testing"
	"time"
)

// The checker passes what a linearizable registry may answer and
// catches what it may not: an acknowledged write lost, a read staler
// than its slack, a write of unknown outcome seen and then unseen.
func TestCheck(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	put := func(c int, v string, o Outcome, from, to int) Op {
		return Op{Client: c, Kind: Put, Key: "k", Value: v, Outcome: o, Start: at(from), End: at(to)}
	}
	get := func(c int, v string, from, to int, slack time.Duration) Op {
		return Op{Client: c, Kind: Get, Key: "k", Value: v, Found: v != "", Start: at(from), End: at(to), Slack: slack}
	}
	del := func(c int, o Outcome, from, to int) Op {
		return Op{Client: c, Kind: Delete, Key: "k", Outcome: o, Start: at(from), End: at(to)}
	}
	change := func(c int, v string, there bool, o Outcome, from, to int) Op {
		return Op{Client: c, Kind: Change, Key: "k", Value: v, Found: there, Outcome: o, Start: at(from), End: at(to)}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want bool
	}{
		{"a write read back", []Op{put(0, "a", Done, 0, 10), get(1, "a", 20, 30, 0)}, true},
		{"an unseen write of unknown outcome the rest needs", []Op{put(0, "a", Unknown, 0, 10), change(1, "b", true, Done, 20, 30), get(2, "b", 40, 50, 0)}, true},
		{"a write of unknown outcome seen, then another's lost", []Op{put(0, "a", Unknown, 0, 10), get(1, "a", 20, 30, 0), put(2, "b", Done, 40, 50), get(1, "a", 60, 70, 0)}, false},
		{"a read concurrent with the write, either way", []Op{put(0, "a", Done, 0, 10), get(1, "", 5, 8, 0), get(2, "a", 6, 9, 0)}, true},
		{"an acknowledged write lost", []Op{put(0, "a", Done, 0, 10), get(1, "", 20, 30, 0)}, false},
		{"a read staler than its bound", []Op{put(0, "a", Done, 0, 10), put(0, "b", Done, 20, 30), get(1, "a", 2000, 2010, time.Second)}, false},
		{"a read within its bound", []Op{put(0, "a", Done, 0, 10), put(0, "b", Done, 20, 30), get(1, "a", 500, 510, time.Second)}, true},
		{"a write of unknown outcome, seen late", []Op{put(0, "a", Unknown, 0, 10), get(1, "", 20, 30, 0), get(1, "a", 40, 50, 0)}, true},
		{"a write of unknown outcome, never seen", []Op{put(0, "a", Unknown, 0, 10), get(1, "", 20, 30, 0)}, true},
		{"a write of unknown outcome seen, then unseen", []Op{put(0, "a", Unknown, 0, 10), get(1, "a", 20, 30, 0), get(1, "", 40, 50, 0)}, false},
		{"a failed write has no effect", []Op{put(0, "a", Failed, 0, 10), get(1, "", 20, 30, 0)}, true},
		{"a delete read back", []Op{put(0, "a", Done, 0, 10), del(0, Done, 20, 30), get(1, "", 40, 50, 0)}, true},
		{"a deleted item seen again", []Op{put(0, "a", Done, 0, 10), del(0, Done, 20, 30), get(1, "a", 40, 50, 0)}, false},
		{"a change read back", []Op{put(0, "a", Done, 0, 10), change(0, "b", true, Done, 20, 30), get(1, "b", 40, 50, 0)}, true},
		{"a change lost", []Op{put(0, "a", Done, 0, 10), change(0, "b", true, Done, 20, 30), get(1, "a", 40, 50, 0)}, false},
		{"a change of an item not there", []Op{change(0, "b", false, Done, 0, 10), get(1, "", 20, 30, 0)}, true},
		{"a change said not there, though it was", []Op{put(0, "a", Done, 0, 10), change(0, "b", false, Done, 20, 30)}, false},
		{"a change of unknown outcome, not there", []Op{change(0, "b", false, Unknown, 0, 10), get(1, "", 20, 30, 0)}, true},
		{"a change of unknown outcome, seen", []Op{put(0, "a", Done, 0, 10), change(0, "b", false, Unknown, 20, 30), get(1, "b", 40, 50, 0)}, true},
	} {
		r := Check(tc.ops, 10*time.Second)
		if r.TimedOut || r.Linearizable != tc.want {
			t.Errorf("%s: %+v, want linearizable %v", tc.name, r, tc.want)
		}
	}
}

// Many writes of unknown outcome on one key (a leader election timing
// out every client at once) are checked at once, not searched through
// every order of them; those a read saw still bind it.
func TestCheckManyUnknown(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var ops []Op
	for c := range 60 {
		v := fmt.Sprintf("v%d", c)
		ops = append(ops, Op{Client: c, Kind: Put, Key: "k", Value: v, Outcome: Unknown, Start: at(c), End: at(5000 + c)})
	}
	ops = append(ops,
		Op{Client: 100, Kind: Get, Key: "k", Value: "v7", Found: true, Outcome: Done, Start: at(6000), End: at(6010)},
		Op{Client: 100, Kind: Get, Key: "k", Value: "v7", Found: true, Outcome: Done, Start: at(6020), End: at(6030)},
		Op{Client: 101, Kind: Put, Key: "k", Value: "w", Outcome: Done, Start: at(7000), End: at(7010)},
		Op{Client: 100, Kind: Get, Key: "k", Value: "w", Found: true, Outcome: Done, Start: at(7020), End: at(7030)})
	if r := Check(ops, 10*time.Second); !r.Linearizable || r.TimedOut {
		t.Errorf("60 writes of unknown outcome: %+v", r)
	}
	// w acknowledged, then none without a delete: not linearizable (the
	// whole history searched, for as long as it is given).
	ops = append(ops, Op{Client: 100, Kind: Get, Key: "k", Outcome: Done, Start: at(8000), End: at(8010)})
	if r := Check(ops, 200*time.Millisecond); r.Linearizable {
		t.Errorf("a value lost after 60 writes of unknown outcome: %+v", r)
	}
}

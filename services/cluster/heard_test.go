//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/store"
)

// A node notes what its segments announce, bounded: the cluster's own
// lookup service and link-local hosts not at all, each lookup service at
// most every heardEvery, heardMax of them, written by one writer.
func TestHeardNoterBounds(t *testing.T) {
	st, n := newTestNoter(t)
	at := time.Now()
	n.hear(self, "198.18.3.1", "198.18.3.1", at)                   // the cluster's own
	n.hear(discovery.ServiceID{1, 1}, "fe80::1", "198.18.3.9", at) // a link-local host
	for i := range heardMax + 10 {
		// Each from a host of its own (a host's own are bounded apart).
		src := netip.AddrFrom4([4]byte{198, 18, byte(4 + i>>8), byte(i)}).String()
		n.hear(discovery.ServiceID{2, byte(i >> 8), byte(i)}, "198.18.3.9", src, at.Add(time.Duration(i)*time.Millisecond))
	}
	testenv.Until(t, "the records written", func() bool { n.flush(); return len(heardRecords(t, st)) == heardMax })
	// The first ten made way for the last ten.
	recs := heardRecords(t, st)
	if _, ok := recs[discovery.ServiceID{2, 0, 9}]; ok {
		t.Fatalf("the oldest kept past heardMax")
	}
	newest := heardMax + 9
	last := discovery.ServiceID{2, byte(newest >> 8), byte(newest)}
	if _, ok := recs[last]; !ok {
		t.Fatalf("the newest not noted past heardMax")
	}
	first := discovery.ServiceID{2, 0, 20}
	n.hear(first, "198.18.3.10", "198.18.4.20", at.Add(time.Second)) // again, too soon: not rewritten
	if rec := heardRecords(t, st)[first]; !strings.Contains(rec, `"host":"198.18.3.9"`) {
		t.Fatalf("a lookup service rewritten sooner than heardEvery: %s", rec)
	}
	n.hear(first, "198.18.3.10", "198.18.4.20", at.Add(heardEvery+time.Second))
	testenv.Until(t, "the record rewritten after heardEvery", func() bool {
		n.flush()
		return strings.Contains(heardRecords(t, st)[first], `"host":"198.18.3.10"`)
	})
}

// A burst of made-up ServiceIDs, from one host or from many, keeps no
// real lookup service from being shared once it announces after the
// burst; one host notes heardPerSource at most; what is not heard for
// heardAge is forgotten, its record removed.
func TestHeardNoterSpoofedBurst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources int // the burst's
	}{
		{"from one host", 1},
		{"from many hosts", 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, n := newTestNoter(t)
			at := time.Now()
			for i := range 300 {
				src := netip.AddrFrom4([4]byte{198, 18, 9, byte(i % tc.sources)}).String()
				n.hear(discovery.ServiceID{9, byte(i >> 8), byte(i)}, src, src, at)
			}
			real := discovery.ServiceID{7, 7}
			n.hear(real, "198.18.3.77", "198.18.3.77", at.Add(time.Second))
			testenv.Until(t, "the real lookup service written", func() bool { n.flush(); _, ok := heardRecords(t, st)[real]; return ok })
			recs := heardRecords(t, st)
			want := min(heardMax, tc.sources*heardPerSource)
			if tc.sources == 1 {
				want = heardPerSource + 1
			}
			if len(recs) != want {
				t.Fatalf("%d records after the burst and the real one, want %d", len(recs), want)
			}
			// Heard no more, the burst is forgotten with its records;
			// the real one, heard again, stays.
			n.hear(real, "198.18.3.77", "198.18.3.77", at.Add(heardAge))
			n.hear(discovery.ServiceID{7, 8}, "198.18.3.78", "198.18.3.78", at.Add(heardAge+2*time.Second))
			testenv.Until(t, "the burst forgotten", func() bool { n.flush(); return len(heardRecords(t, st)) == 2 })
		})
	}
}

var self = discovery.ServiceID{0xff}

type testNoter struct{ *heardNoter }

func newTestNoter(t *testing.T) (*store.Store, testNoter) {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	n := newHeardNoter(st, "node-b", func() discovery.ServiceID { return self }, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	n.flush() // the cluster's own lookup service read, as within a second of the start
	return st, testNoter{n}
}

// hear has the noter hear id announced at host, from src.
func (n testNoter) hear(id discovery.ServiceID, host, src string, at time.Time) {
	n.note(mcast.Message{Announcement: &discovery.Announcement{Version: 2, Host: host, Port: 4160, ServiceID: id, Groups: []string{"lab"}},
		Packet: mcast.Packet{Src: netip.AddrPortFrom(netip.MustParseAddr(src), 4160), At: at}})
}

// heardRecords are the noter's records in the store, by lookup service.
func heardRecords(t *testing.T, st *store.Store) map[discovery.ServiceID]string {
	t.Helper()
	out := map[discovery.ServiceID]string{}
	err := st.View(func(tx *store.Tx) error {
		return tx.ForEach(heardBucket, func(key string, raw []byte) error {
			id, err := discovery.ParseServiceID(strings.TrimPrefix(key, "node-b/"))
			if err != nil {
				return err
			}
			out[id] = string(raw)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

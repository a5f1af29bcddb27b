//go:build !jinid_omit_etcd

package app

import (
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
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	self := discovery.ServiceID{0xff}
	n := newHeardNoter(st, "node-b", func() discovery.ServiceID { return self }, slog.New(slog.DiscardHandler))
	defer n.close()
	n.flush() // the cluster's own lookup service read, as within a second of the start
	at := time.Now()
	heard := func(id discovery.ServiceID, host string, at time.Time) {
		n.note(mcast.Message{Announcement: &discovery.Announcement{Version: 2, Host: host, Port: 4160, ServiceID: id, Groups: []string{"lab"}},
			Packet: mcast.Packet{Src: netip.MustParseAddrPort("198.18.3.9:4160"), At: at}})
	}
	heard(self, "198.18.3.1", at)                   // the cluster's own
	heard(discovery.ServiceID{1, 1}, "fe80::1", at) // a link-local host
	for i := range heardMax + 10 {
		heard(discovery.ServiceID{2, byte(i >> 8), byte(i)}, "198.18.3.9", at)
	}
	heard(discovery.ServiceID{2, 0, 0}, "198.18.3.10", at.Add(time.Second)) // again, too soon: not rewritten
	count := func() (n int, host string) {
		st.View(func(tx *store.Tx) error {
			return tx.ForEach(heardBucket, func(key string, raw []byte) error {
				n++
				if key == "node-b/"+(discovery.ServiceID{2, 0, 0}).String() {
					host = string(raw)
				}
				return nil
			})
		})
		return n, host
	}
	testenv.Until(t, "the records written", func() bool { n, _ := count(); return n == heardMax })
	if _, rec := count(); !strings.Contains(rec, `"host":"198.18.3.9"`) {
		t.Fatalf("a lookup service rewritten sooner than heardEvery: %s", rec)
	}
	heard(discovery.ServiceID{2, 0, 0}, "198.18.3.10", at.Add(heardEvery))
	testenv.Until(t, "the record rewritten after heardEvery", func() bool { _, rec := count(); return strings.Contains(rec, `"host":"198.18.3.10"`) })
}

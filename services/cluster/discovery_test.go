//go:build !jinid_omit_etcd

package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/etcdtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/store"
)

// announcements records what a sink is handed.
type announcements struct {
	mu  sync.Mutex
	got []discovery.Announcement
}

func (a *announcements) HandleAnnouncement(an discovery.Announcement, _ string) {
	a.mu.Lock()
	a.got = append(a.got, an)
	a.mu.Unlock()
}
func (a *announcements) HandleResponse(*unicast.Response, string) {}
func (a *announcements) HandleLinks([]string)                     {}

func (a *announcements) hosts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, an := range a.got {
		out = append(out, an.Host)
	}
	return out
}

// A node hears what the others noted as etcd's watch delivers it: a
// record new or rewritten is handed to its engines (its own records
// never), one added later is replayed every record followed, a record
// removed is replayed no more, and the records no node rewrote for
// heardStale are removed.
func TestDiscoveryRelaysTheOthersRecords(t *testing.T) {
	endpoint, _ := etcdtest.Start(t)
	cfg := store.EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/relay", Timeout: 2 * time.Second, Node: "node-b"}
	node, err := store.JoinEtcd(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	d := NewDiscovery(DiscoveryConfig{Node: node, Etcd: cfg, Self: func(*store.Store) discovery.ServiceID { return discovery.ServiceID{0xff} }})
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	var heard announcements
	d.Add(&heard)

	write := func(key, host string, at time.Time) {
		t.Helper()
		rec := heardRecord{Node: "x", At: at, Announcement: announced{Version: 2, Host: host, Port: 4160, ServiceID: discovery.ServiceID{1}.String(), Groups: []string{"lab"}}}
		if err := d.Store().Update(func(tx *store.Tx) error { return tx.Put(heardBucket, key, rec) }); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write("node-a/1", "198.18.0.1", now)
	write("node-b/1", "198.18.0.2", now) // this node's own
	testenv.Until(t, "node-a's record handed over", func() bool { return slices.Contains(heard.hosts(), "198.18.0.1") })
	write("node-a/1", "198.18.0.3", now.Add(time.Second))
	testenv.Until(t, "node-a's record handed over again, rewritten", func() bool { return slices.Contains(heard.hosts(), "198.18.0.3") })
	if slices.Contains(heard.hosts(), "198.18.0.2") {
		t.Error("this node's own record handed to its engines")
	}
	var later announcements
	d.Add(&later)
	if got := later.hosts(); !slices.Equal(got, []string{"198.18.0.3"}) {
		t.Errorf("an engine added later was replayed %v, want node-a's record as last written", got)
	}
	// Stale: removed by the sweep, and replayed no more.
	write("node-c/1", "198.18.0.4", now.Add(-heardStale-time.Minute))
	testenv.Until(t, "node-c's record followed", func() bool { return slices.Contains(heard.hosts(), "198.18.0.4") })
	d.relay.sweep()
	testenv.Until(t, "node-c's stale record removed", func() bool {
		var n int
		d.Store().View(func(tx *store.Tx) error {
			return tx.ForEach(heardBucket, func(string, []byte) error { n++; return nil })
		})
		return n == 2
	})
	testenv.Until(t, "node-c's record no more replayed", func() bool {
		var again announcements
		d.Add(&again)
		return !slices.Contains(again.hosts(), "198.18.0.4")
	})
}

package announce

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/store"
)

// sent is what a fake transport was asked to send: on which link (nil:
// every one) and the announcements.
type sent struct {
	on   *mcast.Joined
	anns []discovery.Announcement
}

// fakeSender records what it is asked to send, on two links.
type fakeSender struct {
	mu   sync.Mutex
	sent []sent
	got  chan struct{}
}

var links = []mcast.Joined{
	{Index: 2, Name: "eth0", Family: 4, Addr: netip.MustParseAddr("198.18.1.1")},
	{Index: 3, Name: "eth1", Family: 6, Addr: netip.MustParseAddr("2001:db8:1::1")},
}

func (f *fakeSender) record(on *mcast.Joined, build func(mcast.Joined) ([][]byte, error)) error {
	var anns []discovery.Announcement
	for _, j := range links {
		if on != nil && (j.Index != on.Index || j.Family != on.Family) {
			continue
		}
		ps, err := build(j)
		if err != nil {
			return err
		}
		for _, p := range ps {
			a, err := discovery.DecodeAnnouncement(p)
			if err != nil {
				return err
			}
			anns = append(anns, a)
		}
	}
	f.mu.Lock()
	f.sent = append(f.sent, sent{on, anns})
	f.mu.Unlock()
	f.got <- struct{}{}
	return nil
}

func (f *fakeSender) Send(_ mcast.Group, build func(mcast.Joined) ([][]byte, error)) error {
	return f.record(nil, build)
}

func (f *fakeSender) SendOn(j mcast.Joined, _ mcast.Group, build func(mcast.Joined) ([][]byte, error)) error {
	return f.record(&j, build)
}

func (f *fakeSender) next(t *testing.T) sent {
	t.Helper()
	select {
	case <-f.got:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing sent")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent[len(f.sent)-1]
}

// AnnounceOn announces at once on that interface and family alone, in
// both versions, from the interface's address, with a sequence number
// after the last; the announcements every interval go on as they were.
func TestAnnounceOn(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	f := &fakeSender{got: make(chan struct{}, 10)}
	id := discovery.ServiceID{7}
	a, err := NewAnnouncer(Config{Transport: f, ServiceID: id, Port: 4160, Groups: func() []string { return []string{"lab"} },
		Interval: time.Minute, Seq: NewSeqSource(st), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := f.next(t)
	if first.on != nil || len(first.anns) != 4 {
		t.Fatalf("first announcement on %v, %d packets; want every link, 4", first.on, len(first.anns))
	}
	// The next is armed once the first is out.
	testenv.Until(t, "the next announcement armed", func() bool { return len(clk.Pending()) > 0 })

	clk.Advance(30 * time.Second)
	a.AnnounceOn(3, 6)
	on := f.next(t)
	if on.on == nil || on.on.Index != 3 || on.on.Family != 6 || len(on.anns) != 2 {
		t.Fatalf("announced on %+v, %d packets; want eth1 IPv6 only, in both versions", on.on, len(on.anns))
	}
	var versions []int
	for _, ann := range on.anns {
		versions = append(versions, ann.Version)
		if ann.Host != "2001:db8:1::1" || ann.ServiceID != id || !slices.Equal(ann.Groups, []string{"lab"}) {
			t.Fatalf("announcement %+v", ann)
		}
		if ann.Version == discovery.ProtocolV2 && ann.Sequence <= first.anns[1].Sequence {
			t.Fatalf("sequence %d after %d", ann.Sequence, first.anns[1].Sequence)
		}
	}
	if slices.Sort(versions); !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions %v", versions)
	}
	// The next regular one comes when it was due, on every link.
	clk.Advance(30 * time.Second)
	if next := f.next(t); next.on != nil {
		t.Fatalf("the regular announcement went on %+v only", next.on)
	}
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := f.next(t); last.on != nil || len(last.anns[0].Groups) != 0 {
		t.Fatalf("last announcement %+v, want no groups on every link", last)
	}
}

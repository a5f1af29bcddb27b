// Package announce is the lookup service's presence on the LAN: its
// multicast announcements (protocol versions 1 and 2) and its answers to
// multicast requests, by connecting back to the requester and running the
// unicast exchange as the server (shared/design/WIRE.md).
package announce

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/store"
)

// Defaults of the Java implementation.
const (
	DefaultInterval = 120 * time.Second
	MinInterval     = 100 * time.Millisecond
)

// Sender is the part of the multicast transport the announcer uses.
type Sender interface {
	Send(g mcast.Group, build func(mcast.Joined) ([][]byte, error)) error
	SendOn(j mcast.Joined, g mcast.Group, build func(mcast.Joined) ([][]byte, error)) error
}

// Config configures an Announcer.
type Config struct {
	Transport Sender
	ServiceID discovery.ServiceID
	// Port is the unicast discovery port announced.
	Port int
	// Groups returns the current member groups.
	Groups   func() []string
	Interval time.Duration
	Seq      *SeqSource
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Announcer announces a lookup service.
type Announcer struct {
	cfg     Config
	trigger chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	started atomic.Bool
	stop    sync.Once

	// on are the links AnnounceOn asked for, announced on by the
	// announcer's goroutine when poked.
	mu   sync.Mutex
	on   map[link]bool
	poke chan struct{}
}

// maxOn bounds the links waiting for an announcement of their own.
const maxOn = 256

// NewAnnouncer checks cfg; Start begins announcing.
func NewAnnouncer(cfg Config) (*Announcer, error) {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < MinInterval {
		return nil, fmt.Errorf("announcement interval %s is below the minimum %s", cfg.Interval, MinInterval)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Announcer{cfg: cfg, trigger: make(chan struct{}, 1), done: make(chan struct{}),
		on: map[link]bool{}, poke: make(chan struct{}, 1)}, nil
}

// Start announces at once, then at every interval and on every Trigger.
func (a *Announcer) Start(context.Context) error {
	if a.started.Swap(true) {
		return nil
	}
	a.wg.Add(1)
	go a.run()
	return nil
}

// Trigger asks for an announcement now: groups, host or port changed.
func (a *Announcer) Trigger() {
	select {
	case a.trigger <- struct{}{}:
	default:
	}
}

// AnnounceOn asks for an announcement now on one interface and family
// only (requesters there could not be answered); the announcements
// every interval go on as they were. It never blocks: the announcer's
// goroutine sends it.
func (a *Announcer) AnnounceOn(ifIndex, family int) {
	a.mu.Lock()
	if len(a.on) < maxOn {
		a.on[link{ifIndex, family}] = true
	}
	a.mu.Unlock()
	select {
	case a.poke <- struct{}{}:
	default:
	}
}

// Shutdown stops announcing after a last announcement with no groups,
// which tells listeners the lookup service is leaving (if it announced).
func (a *Announcer) Shutdown(context.Context) error {
	a.stop.Do(func() {
		close(a.done)
		a.wg.Wait()
		if a.started.Load() {
			a.announce(func() []string { return nil })
		}
	})
	return nil
}

var _ lifecycle.Service = (*Announcer)(nil)

func (a *Announcer) run() {
	defer a.wg.Done()
	for {
		a.announce(a.cfg.Groups)
		wake := make(chan struct{})
		t := a.cfg.Clock.AfterFunc(a.cfg.Interval, func() { close(wake) })
	wait:
		for {
			select {
			case <-a.done:
				t.Stop()
				return
			case <-a.trigger:
				t.Stop()
				break wait
			case <-a.poke:
				a.announceOn()
			case <-wake:
				break wait
			}
		}
	}
}

// announceOn announces on the links AnnounceOn asked for.
func (a *Announcer) announceOn() {
	a.mu.Lock()
	on := a.on
	a.on = map[link]bool{}
	a.mu.Unlock()
	for l := range on {
		a.send(a.cfg.Groups, func(build func(mcast.Joined) ([][]byte, error)) error {
			return a.cfg.Transport.SendOn(mcast.Joined{Index: l.index, Family: l.family}, mcast.Announcements, build)
		})
	}
}

func (a *Announcer) announce(groups func() []string) {
	a.send(groups, func(build func(mcast.Joined) ([][]byte, error)) error {
		return a.cfg.Transport.Send(mcast.Announcements, build)
	})
}

// send builds announcements (versions 1 and 2, one sequence number) of
// the groups and sends them as send says.
func (a *Announcer) send(groups func() []string, send func(build func(mcast.Joined) ([][]byte, error)) error) {
	seq, err := a.cfg.Seq.Next()
	if err != nil {
		a.cfg.Logger.Error("cannot announce: no sequence number", "err", err)
		return
	}
	gs := groups()
	err = send(func(j mcast.Joined) ([][]byte, error) {
		var out [][]byte
		for _, v := range []int{discovery.ProtocolV1, discovery.ProtocolV2} {
			// The host is the address of the interface the packet leaves
			// by: reachable from the LAN that hears it.
			ann := discovery.Announcement{Version: v, Sequence: seq, Host: j.Addr.String(), Port: a.cfg.Port,
				ServiceID: a.cfg.ServiceID, Groups: gs}
			ps, err := ann.Encode(discovery.DefaultMaxPacketSize)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	})
	if err != nil {
		a.cfg.Logger.Warn("announcing", "err", err)
	}
}

// SeqSource hands out v2 announcement sequence numbers that only ever
// increase, across restarts too: it reserves them in blocks, on disk,
// before using them, so one store write serves a thousand announcements.
type SeqSource struct {
	st    *store.Store
	mu    sync.Mutex
	next  int64
	limit int64
}

const seqBlock = 1000

// NewSeqSource returns a source kept in st.
func NewSeqSource(st *store.Store) *SeqSource { return &SeqSource{st: st} }

// Next returns the next sequence number.
func (s *SeqSource) Next() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.limit {
		var reserved int64
		err := s.st.Update(func(tx *store.Tx) error {
			if _, err := tx.Get("announce", "seq", &reserved); err != nil {
				return err
			}
			return tx.Put("announce", "seq", reserved+seqBlock)
		})
		if err != nil {
			return 0, fmt.Errorf("reserving announcement sequence numbers: %w", err)
		}
		s.next, s.limit = reserved+1, reserved+seqBlock
	}
	n := s.next
	s.next++
	return n, nil
}

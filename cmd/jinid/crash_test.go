package main

import (
	"context"
	"crypto/rand"
	"math/big"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/api/apitypes"
	"github.com/jinid/jinid/services/api/client"
)

// Under a steady stream of registrations the daemon is killed (SIGKILL)
// at random moments, 20 times. After each restart every registration the
// client saw acknowledged is there, whole; nothing the client did not send
// appears; what was in flight is either wholly there or not at all; and
// event sequence numbers never go backwards.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	l := newListener(t)

	type sent struct {
		item  apitypes.Item
		acked bool
	}
	all := map[string]*sent{}
	var notifyID int64
	for round := 0; round < 20; round++ {
		d := startDaemon(t, bin, dir)
		c, err := client.New(d.api, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()

		// What survived the last kill.
		items, err := c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		present := map[string]apitypes.Item{}
		for _, it := range items {
			present[it.ServiceID] = it
		}
		for id, s := range all {
			it, ok := present[id]
			if s.acked && !ok {
				t.Fatalf("round %d: acknowledged registration %s lost", round, id)
			}
			if ok && (len(it.Attributes) != 1 || it.Attributes[0].Fields["n"] != s.item.Attributes[0].Fields["n"]) {
				t.Fatalf("round %d: registration %s half-applied: %+v", round, id, it)
			}
			if ok {
				svc, err := c.Get(ctx, id)
				if err != nil || svc.Expiration <= time.Now().UnixMilli() {
					t.Fatalf("round %d: registration %s without a live lease: %+v %v", round, id, svc, err)
				}
				s.acked = true // it is there: from now on it must stay
			}
		}
		for id := range present {
			if all[id] == nil {
				t.Fatalf("round %d: registration %s that was never sent", round, id)
			}
		}
		if round == 0 {
			n, err := c.Notify(ctx, client.NotifyRequest{Transitions: []string{apitypes.NoMatchMatch},
				Listener: l.srv.URL, Duration: 3_600_000})
			if err != nil {
				t.Fatal(err)
			}
			notifyID = n.EventID
		}

		// A steady stream of registrations until the kill.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id, _ := discovery.RandomServiceID(rand.Reader)
				it := apitypes.Item{ServiceID: id.String(), Types: []string{"com.example.Thing"},
					Attributes: []apitypes.Attribute{{Type: "com.example.N", Fields: map[string]any{"n": float64(round*100000 + i)}}}}
				s := &sent{item: it}
				mu.Lock()
				all[it.ServiceID] = s
				mu.Unlock()
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := c.Register(rctx, it, 3_600_000)
				cancel()
				if err != nil {
					return // the daemon is gone
				}
				mu.Lock()
				s.acked = true
				mu.Unlock()
			}
		}()
		wait, _ := rand.Int(rand.Reader, big.NewInt(250))
		time.Sleep(time.Duration(50+wait.Int64()) * time.Millisecond)
		d.kill()
		close(stop)
		wg.Wait()
	}
	acked := 0
	for _, s := range all {
		if s.acked {
			acked++
		}
	}
	if acked < 100 {
		t.Fatalf("only %d registrations acknowledged in 20 rounds: the stream was not steady", acked)
	}
	// Sequence numbers of the notify registration's events, in the order
	// the listener received them, across every restart.
	l.mu.Lock()
	var seqs []int64
	for _, ev := range l.evs {
		if int64(ev["eventID"].(float64)) == notifyID {
			seqs = append(seqs, int64(ev["seqNum"].(float64)))
		}
	}
	l.mu.Unlock()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("sequence number went from %d to %d", seqs[i-1], seqs[i])
		}
	}
	t.Logf("20 kills: %d registrations acknowledged and all kept; %d events with rising sequence numbers (last %d)", acked, len(seqs), slices.Max(seqs))
}

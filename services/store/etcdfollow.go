//go:build !jinid_omit_etcd

package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// FollowConfig says which of the deployment's buckets a Follower copies,
// and to what.
type FollowConfig struct {
	// Buckets are the buckets followed (of the deployment's own store,
	// not of its shards).
	Buckets []string
	// From, if not 0, is the revision the caller holds every change up
	// to: it is handed the changes after it, with no content first.
	From int64
	// Prev has each change carry the key's value before it.
	Prev bool
	// Apply is handed the batches in commit order, one call at a time.
	// An error has the same batch handed again (after a pause, until it
	// takes it or the follower is closed): nothing is skipped.
	Apply  func(Batch) error
	Logger *slog.Logger
}

// Follower keeps a copy of some of the deployment's buckets, fed by an
// etcd watch: a node that does not hold the store answers reads from it.
// How far the copy may lag is what Current says: every followProbe,
// etcd's revision is read with a linearizable read (one a quorum
// answers), and once the copy holds that revision it holds every
// change committed before the read was sent. (The watch's own progress
// notifications cannot say so: a member answers them from what it has
// applied, which may lag the cluster, and an answer may come long after
// it was asked for.)
type Follower struct {
	cli    *clientv3.Client
	owned  bool // cli is its own: closed with it, and asked for progress
	cfg    FollowConfig
	log    *slog.Logger
	prefix string
	from   string // the watched range: [from, to)
	to     string

	mu sync.Mutex
	// applied is the revision the copy holds all changes up to.
	applied int64
	// confirmed is when the copy was last known current: it holds every
	// change committed before then.
	confirmed time.Time
	// pending are the revisions read (and when the read was sent) that
	// the copy does not hold yet, oldest first: each confirms the copy
	// once it does.
	pending []confirmation
	// progressed is when the watch was last asked for its progress.
	progressed time.Time
	changed    chan struct{} // closed and replaced when applied grows

	wctx   context.Context // the watch's: progress requests go on its stream
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// confirmation is etcd's revision as a linearizable read sent at at
// found it.
type confirmation struct {
	rev int64
	at  time.Time
}

// maxPending bounds the confirmations waiting for the copy: a copy that
// lags that many probes is not current anyway.
const maxPending = 8

// followProbe is how often the follower asks etcd to confirm its copy
// current; a copy is Current within a few of these.
const followProbe = 250 * time.Millisecond

// Follow starts following cfg's buckets: a copy (From 0) is loaded
// when it returns.
func (n *EtcdNode) Follow(ctx context.Context, cfg FollowConfig) (*Follower, error) {
	if len(cfg.Buckets) == 0 || cfg.Apply == nil {
		return nil, errors.New("etcd: following nothing")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// A copy has a client of its own: its progress requests go on its
	// watch's stream alone. A follower from a revision asks for none,
	// and shares the node's (its watch is one more on the node's
	// connection, not a connection of its own).
	cli, ecfg, owned := n.cli, n.cfg, cfg.From == 0
	if owned {
		var err error
		if cli, ecfg, err = dial(ctx, n.cfg); err != nil {
			return nil, err
		}
	}
	bs := slices.Sorted(slices.Values(cfg.Buckets))
	p := ecfg.Prefix + "/"
	f := &Follower{cli: cli, owned: owned, cfg: cfg, log: cfg.Logger.With("component", "follower"), prefix: p,
		from: p + bs[0] + "/", to: clientv3.GetPrefixRangeEnd(p + bs[len(bs)-1] + "/"),
		changed: make(chan struct{})}
	if cfg.From > 0 {
		f.applied = cfg.From
	} else if err := f.load(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	f.wctx, f.cancel = clientv3.WithRequireLeader(wctx), cancel
	f.wg.Go(func() { f.run(f.wctx) })
	if owned {
		f.wg.Go(func() { f.confirm(f.wctx) })
	}
	return f, nil
}

// bucketOf splits a key of the watched range; false for one of a bucket
// not followed (between two that are).
func (f *Follower) bucketOf(k string) (Change, bool) {
	b, key, ok := strings.Cut(strings.TrimPrefix(k, f.prefix), "/")
	if !ok || !slices.Contains(f.cfg.Buckets, b) {
		return Change{}, false
	}
	return Change{Bucket: b, Key: key}, true
}

// load reads the followed buckets at one revision and hands them over
// as the whole copy.
func (f *Follower) load(ctx context.Context) error {
	var all []Change
	var rev int64
	from := f.from
	// The first read is linearizable: the copy holds what was committed
	// before it was sent.
	sent := time.Now()
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(f.to), clientv3.WithLimit(maxRange), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := f.cli.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return fmt.Errorf("etcd: reading %s for a copy: %w", f.from, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if c, ok := f.bucketOf(string(kv.Key)); ok {
				c.Value = kv.Value
				all = append(all, c)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if err := f.cfg.Apply(Batch{Changes: all, Revision: rev, Reset: true}); err != nil {
		return err
	}
	f.mu.Lock()
	f.pending = append(f.pending, confirmation{rev: rev, at: sent})
	f.mu.Unlock()
	f.advance(rev)
	return nil
}

// jump is load for a follower from a revision, whose history etcd
// compacted: it goes on from the current revision, the changes between
// lost to it (Batch.Reset with none).
func (f *Follower) jump(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := f.cli.Get(rctx, f.from, clientv3.WithRange(f.to), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return fmt.Errorf("etcd: reading the revision of %s: %w", f.from, err)
	}
	if err := f.hand(ctx, Batch{Revision: resp.Header.Revision, Reset: true}); err != nil {
		return err
	}
	f.advance(resp.Header.Revision)
	return nil
}

// hand gives b to Apply until it takes it, or ctx ends.
func (f *Follower) hand(ctx context.Context, b Batch) error {
	wait := 100 * time.Millisecond
	for {
		err := f.cfg.Apply(b)
		if err == nil {
			return nil
		}
		f.log.Warn("a batch of changes not taken: handed again", "revision", b.Revision, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// advance notes that the copy holds all changes up to rev, which
// confirms it current as of the reads of revisions up to rev.
func (f *Follower) advance(rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rev > f.applied {
		f.applied = rev
		close(f.changed)
		f.changed = make(chan struct{})
	}
	f.confirmLocked()
}

// confirmLocked takes the pending confirmations the copy now holds.
func (f *Follower) confirmLocked() {
	n := 0
	for _, c := range f.pending {
		if c.rev > f.applied {
			break
		}
		if c.at.After(f.confirmed) {
			f.confirmed = c.at
		}
		n++
	}
	f.pending = f.pending[n:]
}

// run follows the watch until Close; a watch etcd ends (compacted past it, a member gone) is
// started again where it stood, or the copy loaded again.
func (f *Follower) run(ctx context.Context) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		f.mu.Lock()
		rev := f.applied
		f.mu.Unlock()
		opts := []clientv3.OpOption{clientv3.WithRange(f.to), clientv3.WithRev(rev + 1)}
		if f.cfg.Prev {
			opts = append(opts, clientv3.WithPrevKV())
		}
		err := f.follow(ctx, f.cli.Watch(ctx, f.from, opts...))
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			if f.cfg.From > 0 {
				f.log.Warn("etcd compacted past the follower's revision: the changes since are lost to it", "revision", rev)
				err = f.jump(ctx)
			} else {
				f.log.Warn("etcd compacted past the copy's revision: reading it again", "revision", rev)
				err = f.load(ctx)
			}
			if err == nil {
				continue
			}
		}
		f.log.Warn("following the store in etcd", "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// follow applies what the watch delivers until it ends.
func (f *Follower) follow(ctx context.Context, wch clientv3.WatchChan) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case wr, ok := <-wch:
			if !ok {
				return errors.New("the watch ended")
			}
			if err := wr.Err(); err != nil {
				return err
			}
			if wr.IsProgressNotify() {
				// Every change up to the answer's revision was delivered.
				f.advance(wr.Header.Revision)
				continue
			}
			var changes []Change
			var last int64
			for _, ev := range wr.Events {
				c, ok := f.bucketOf(string(ev.Kv.Key))
				last = max(last, ev.Kv.ModRevision)
				if !ok {
					continue
				}
				if ev.Type == clientv3.EventTypePut {
					c.Value = ev.Kv.Value
				}
				if ev.PrevKv != nil {
					c.Prev = ev.PrevKv.Value
				}
				c.Revision = ev.Kv.ModRevision
				changes = append(changes, c)
			}
			if len(changes) > 0 {
				if err := f.hand(ctx, Batch{Changes: changes, Revision: last}); err != nil {
					return err
				}
			}
			f.advance(last)
		}
	}
}

// confirm reads etcd's revision every followProbe, until ctx ends: the
// copy is current as of the read's sending once it holds that revision
// (the watch is asked for its progress, for a revision of no followed
// change).
func (f *Follower) confirm(ctx context.Context) {
	tick := time.NewTicker(followProbe)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := time.Now()
		// A revision read later than the staleness any caller allows
		// confirms nothing it could use.
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := f.cli.Get(rctx, f.from, clientv3.WithCountOnly())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.log.Debug("reading etcd's revision", "err", err)
			}
			continue
		}
		f.mu.Lock()
		f.pending = append(f.pending, confirmation{rev: resp.Header.Revision, at: sent})
		if len(f.pending) > maxPending {
			f.pending = f.pending[len(f.pending)-maxPending:]
		}
		f.confirmLocked()
		behind := len(f.pending) > 0
		f.mu.Unlock()
		if behind {
			f.progress()
		}
	}
}

// progress asks the watch for its progress (at most every followProbe/5):
// etcd says how far it delivered, which no event shows when nothing
// followed changed.
func (f *Follower) progress() {
	now := time.Now()
	f.mu.Lock()
	if now.Sub(f.progressed) < followProbe/5 {
		f.mu.Unlock()
		return
	}
	f.progressed = now
	f.mu.Unlock()
	if err := f.cli.RequestProgress(f.wctx); err != nil && f.wctx.Err() == nil {
		f.log.Debug("asking etcd for the watch's progress", "err", err)
	}
}

// Revision is the etcd revision the copy holds every change up to.
func (f *Follower) Revision() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Current says whether etcd confirmed the copy current less than within
// ago: it then holds every change committed before that. (A follower
// from a revision asks for no confirmation: it is never Current.)
func (f *Follower) Current(within time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Since(f.confirmed) < within
}

// Wait waits until the copy holds every change up to rev, or ctx ends.
// etcd is asked at once to confirm progress: rev may be of a change to a
// bucket not followed, which no event of the watch shows.
func (f *Follower) Wait(ctx context.Context, rev int64) error {
	for asked := false; ; asked = true {
		f.mu.Lock()
		applied, changed := f.applied, f.changed
		f.mu.Unlock()
		if applied >= rev {
			return nil
		}
		if !asked && f.owned {
			f.progress()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops following.
func (f *Follower) Close() {
	f.cancel()
	f.wg.Wait()
	if f.owned {
		f.cli.Close()
	}
}

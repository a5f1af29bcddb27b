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
// How far the copy may lag is what Current says: etcd is asked every
// followProbe to confirm that the watch has delivered all that was
// committed when it asked.
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
	// confirmed is when etcd last confirmed the copy current: the time a
	// progress request was sent whose answer came.
	confirmed time.Time
	// asked is when the progress request awaiting its answer was sent
	// (zero: none).
	asked   time.Time
	changed chan struct{} // closed and replaced when applied grows

	wctx   context.Context // the watch's: progress requests go on its stream
	cancel context.CancelFunc
	done   chan struct{}
}

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
		changed: make(chan struct{}), done: make(chan struct{})}
	if cfg.From > 0 {
		f.applied = cfg.From
	} else if err := f.load(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	f.wctx, f.cancel = clientv3.WithRequireLeader(wctx), cancel
	go f.run(f.wctx)
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
	f.advance(rev, time.Now())
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
	f.advance(resp.Header.Revision, time.Now())
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

// advance notes that the copy holds all changes up to rev; at (if not
// zero) is when etcd confirmed it current.
func (f *Follower) advance(rev int64, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !at.IsZero() && at.After(f.confirmed) {
		f.confirmed = at
	}
	if rev > f.applied {
		f.applied = rev
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// run follows the watch until Close, asking for progress every
// followProbe; a watch etcd ends (compacted past it, a member gone) is
// started again where it stood, or the copy loaded again.
func (f *Follower) run(ctx context.Context) {
	defer close(f.done)
	tick := time.NewTicker(followProbe)
	defer tick.Stop()
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		f.mu.Lock()
		rev := f.applied
		f.mu.Unlock()
		opts := []clientv3.OpOption{clientv3.WithRange(f.to), clientv3.WithRev(rev + 1)}
		if f.cfg.Prev {
			opts = append(opts, clientv3.WithPrevKV())
		}
		err := f.follow(ctx, f.cli.Watch(ctx, f.from, opts...), tick.C)
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
func (f *Follower) follow(ctx context.Context, wch clientv3.WatchChan, tick <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if f.owned {
				f.probe(ctx)
			}
		case wr, ok := <-wch:
			if !ok {
				return errors.New("the watch ended")
			}
			if err := wr.Err(); err != nil {
				return err
			}
			if wr.IsProgressNotify() {
				// Every change up to the answer's revision was delivered.
				f.mu.Lock()
				asked := f.asked
				f.asked = time.Time{}
				f.mu.Unlock()
				f.advance(wr.Header.Revision, asked)
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
			f.advance(last, time.Time{})
		}
	}
}

// probe asks etcd to confirm the copy current, unless a request is on
// its way (asked again after a second unanswered: etcd answers only
// once the watch has caught up).
func (f *Follower) probe(ctx context.Context) {
	now := time.Now()
	f.mu.Lock()
	if !f.asked.IsZero() && now.Sub(f.asked) < time.Second {
		f.mu.Unlock()
		return
	}
	f.asked = now
	f.mu.Unlock()
	if err := f.cli.RequestProgress(ctx); err != nil && ctx.Err() == nil {
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
			f.probe(f.wctx)
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
	<-f.done
	if f.owned {
		f.cli.Close()
	}
}

//go:build !jinid_omit_etcd

package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jinid/jinid/internal/metrics"
)

// lease is a node's etcd lease, kept alive while the store is open. It
// knows until when the cluster surely keeps it: each keep-alive is timed
// from before it was sent, so the cluster's own end of the lease (counted
// from when it received it) is later still. The node takes its lease,
// and so the hold, as gone a margin before that time. A node cut off from
// etcd thus stops acting before the cluster lets a standby take over,
// which is what keeps two nodes from ever renewing, delivering or deciding
// the same thing at once (the keep-alives of etcd's own session would
// tell it only after the cluster's end, when the standby may already act).
type lease struct {
	cli    *clientv3.Client
	id     clientv3.LeaseID
	ttl    time.Duration
	margin time.Duration

	mu    sync.Mutex
	until time.Time // acting is safe before until - margin

	lost     chan struct{}
	loseOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// ErrNotHolding is what a node that lost the store's hold (or its etcd
// lease) is told when it would act: it changes nothing, sends nothing.
var ErrNotHolding = errors.New("this jinid no longer holds the store in etcd (cut off from the cluster, or its lease ended)")

// grantLease takes a lease of ttl and keeps it alive until close.
func grantLease(ctx context.Context, cli *clientv3.Client, ttl time.Duration) (*lease, error) {
	start := time.Now()
	resp, err := cli.Grant(ctx, int64(max(ttl/time.Second, 1)))
	if err != nil {
		return nil, err
	}
	l := &lease{cli: cli, id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second,
		lost: make(chan struct{}), done: make(chan struct{})}
	// The margin covers a keep-alive's answer still on its way and the
	// two clocks' rates; a fifth of the TTL, at least half a second.
	l.margin = max(l.ttl/5, 500*time.Millisecond)
	l.until = start.Add(l.ttl)
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go l.keep(kctx)
	return l, nil
}

// keep renews the lease every third of its TTL and loses it when the
// safe end passes without a renewal (a timer of its own: a keep-alive
// that hangs does not delay it), or when the cluster says it is gone.
func (l *lease) keep(ctx context.Context) {
	defer close(l.done)
	expire := time.AfterFunc(time.Until(l.safeEnd()), l.lose)
	defer expire.Stop()
	every := l.ttl / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.lost:
			return
		case <-tick.C:
		}
		sent := time.Now()
		cctx, cancel := context.WithTimeout(ctx, every)
		resp, err := l.cli.KeepAliveOnce(cctx, l.id)
		cancel()
		switch {
		case err == nil && resp.TTL > 0:
			l.mu.Lock()
			l.until = sent.Add(time.Duration(resp.TTL) * time.Second)
			l.mu.Unlock()
			expire.Reset(time.Until(l.safeEnd()))
		case err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound):
			l.lose()
			return
		}
		// Other errors (the cluster out of reach): the next tick tries
		// again, and the timer ends it.
	}
}

func (l *lease) safeEnd() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until.Add(-l.margin)
}

func (l *lease) lose() { l.loseOnce.Do(func() { close(l.lost) }) }

// valid says whether the node may act now.
func (l *lease) valid() error {
	select {
	case <-l.lost:
		return ErrNotHolding
	default:
	}
	if !time.Now().Before(l.safeEnd()) {
		l.lose()
		return ErrNotHolding
	}
	return nil
}

// close stops keeping the lease and revokes it: the hold and the
// membership go at once, and a standby need not wait for the TTL.
func (l *lease) close() {
	l.cancel()
	<-l.done
	l.lose()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.cli.Revoke(ctx, l.id)
}

// instrument reports the hold and the deployment's members: a node
// that holds the store shows 1 and how much of its lease is left before
// it would stop acting; the members are counted in etcd at each scrape
// (a read of at most a second).
func (b *etcdBackend) instrument(reg *metrics.Registry) {
	if b.lease == nil {
		return
	}
	reg.GaugeFunc("jinid_cluster_holding", "1 while this node holds the store in etcd and may act, 0 once it lost the hold.", nil,
		func(emit func(float64, ...string)) {
			v := 0.0
			if b.lease.valid() == nil {
				v = 1
			}
			emit(v)
		})
	reg.GaugeFunc("jinid_cluster_hold_left_seconds", "Time left before this node would stop acting if no keep-alive of its etcd lease succeeded.", nil,
		func(emit func(float64, ...string)) { emit(max(time.Until(b.lease.safeEnd()).Seconds(), 0)) })
	reg.GaugeFunc("jinid_cluster_members", "Nodes of the deployment registered in etcd: the holder and those waiting to take over.", nil,
		func(emit func(float64, ...string)) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if r, err := b.cli.Get(ctx, b.prefix+"/.members/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
				emit(float64(r.Count))
			}
		})
}

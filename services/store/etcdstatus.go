//go:build !jinid_omit_etcd

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ReadCluster reads a deployment's state from etcd, as `jinid cluster
// status` shows it: its members (the holder and those waiting to take
// over) and the etcd cluster's members, each asked for its status. It
// holds nothing: it can be run from any host that reaches the cluster.
func ReadCluster(ctx context.Context, cfg EtcdConfig) (ClusterStatus, error) {
	cfg.Exclusive = false
	cli, cfg, err := dial(ctx, cfg)
	if err != nil {
		return ClusterStatus{}, err
	}
	defer cli.Close()
	st := ClusterStatus{Prefix: cfg.Prefix}
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	resp, err := cli.Get(rctx, cfg.Prefix+"/.members/", clientv3.WithPrefix(), clientv3.WithLimit(1000))
	if err != nil {
		return st, fmt.Errorf("etcd %s: reading the members: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	// A record counts only under a live lease: one under none is no
	// node, whoever wrote it.
	live := map[clientv3.LeaseID]bool{}
	isLive := func(id int64) bool {
		l, ok := live[clientv3.LeaseID(id)]
		if !ok {
			l = leaseLive(rctx, cli, clientv3.LeaseID(id))
			live[clientv3.LeaseID(id)] = l
		}
		return l
	}
	names := map[string]bool{}
	for _, kv := range resp.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) != nil {
			continue
		}
		if !isLive(kv.Lease) {
			st.Ignored = append(st.Ignored, string(kv.Key))
			continue
		}
		st.Members = append(st.Members, m)
		names[m.Node] = true
	}
	if h, err := cli.Get(rctx, cfg.Prefix+"/.holder"); err == nil && len(h.Kvs) == 1 {
		st.Holder = string(h.Kvs[0].Value)
		st.HolderLive = isLive(h.Kvs[0].Lease) && names[st.Holder]
	}
	// The shards' holds, each the name of the node holding the shard.
	at := shardHold(cfg.Prefix, "")
	sr, err := cli.Get(rctx, at, clientv3.WithPrefix(), clientv3.WithLimit(1000))
	if err != nil {
		return st, fmt.Errorf("etcd %s: reading the shards' holds: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	for _, kv := range sr.Kvs {
		if st.Shards == nil {
			st.Shards = map[string]string{}
		}
		if st.ShardsLive == nil {
			st.ShardsLive = map[string]bool{}
		}
		shard := strings.TrimPrefix(string(kv.Key), at)
		st.Shards[shard] = string(kv.Value)
		st.ShardsLive[shard] = isLive(kv.Lease) && names[string(kv.Value)]
	}
	// The holder first, then the others by how long they have waited.
	slices.SortFunc(st.Members, func(a, b Member) int {
		if (a.Node == st.Holder) != (b.Node == st.Holder) {
			if a.Node == st.Holder {
				return -1
			}
			return 1
		}
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.Node, b.Node))
	})
	ml, err := cli.MemberList(rctx)
	if err != nil {
		return st, fmt.Errorf("etcd %s: listing the cluster's members: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	for _, m := range ml.Members {
		em := EtcdMember{Name: m.Name, ID: m.ID}
		if len(m.ClientURLs) > 0 {
			em.Endpoint = m.ClientURLs[0]
			sctx, cancel := context.WithTimeout(ctx, min(cfg.Timeout, 2*time.Second))
			s, err := cli.Status(sctx, em.Endpoint)
			cancel()
			if err != nil {
				em.Error = "does not answer"
			} else {
				em.Healthy = len(s.Errors) == 0
				em.Leader, em.IsLeader = s.Leader, s.Leader == m.ID
				em.Version, em.DBSize, em.RaftTerm = s.Version, s.DbSize, s.RaftTerm
				if !em.Healthy {
					em.Error = strings.Join(s.Errors, "; ")
				}
			}
		} else {
			em.Error = "not started (no client URL)"
		}
		st.Etcd = append(st.Etcd, em)
	}
	slices.SortFunc(st.Etcd, func(a, b EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	return st, nil
}

//go:build !jinid_omit_daemon

package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jinid/jinid/services/store"
)

func clusterSpec() *spec {
	return &spec{
		use:   "cluster",
		short: "Show the jinid nodes sharing a store in etcd, and the etcd cluster under them",
		long: `Nodes run with --store etcd on the same --etcd-prefix form one
deployment: one node holds the store and serves, the others wait to take
over when it ends or is cut off from etcd (docs/cluster.md).`,
		subs: []*spec{clusterStatusSpec()},
	}
}

func clusterStatusSpec() *spec {
	var f storeFlags
	s := withOutput(&spec{
		use:   "status --etcd-endpoints URL,... [--etcd-prefix /jinid]",
		short: "List the nodes (the holder first, then those waiting) and each etcd member's health",
		long: `Read the deployment from etcd, from any host that reaches it: the node
that holds the store (and serves), the nodes waiting to take over, with
since when each is a member, its addresses, its shards, how it reaches
etcd (tls, or insecure as --etcd-insecure allowed) and how the nodes
prove themselves to it (site-ca: certificates --cluster-ca signed;
pinned: hashes in the member records), and each etcd member with its
endpoint, health, leader, version and database size. It takes no hold and changes
nothing. The exit status is 1 when no live node holds the store, a shard
of the work is held by none or by a node that is not live, or an etcd
member does not answer. A member record under no live etcd lease is
no node: it is named and ignored.`,
		example: `  jinid cluster status --etcd-endpoints https://10.0.0.2:2379 \
    --etcd-cert /etc/jinid/etcd/client.crt --etcd-key /etc/jinid/etcd/client.key --etcd-ca /etc/jinid/etcd/ca.crt
  jinid cluster status --etcd-endpoints https://10.0.0.2:2379 --etcd-cert /etc/jinid/etcd/client.crt \
    --etcd-key /etc/jinid/etcd/client.key --etcd-ca /etc/jinid/etcd/ca.crt -o json | jq -r .holder`,
		args: maxArgs(0),
	}, func(inv *invocation, p *printer, _ []string) error {
		if len(f.etcd.Endpoints) == 0 {
			return usagef("give the etcd cluster's client URLs (--etcd-endpoints)")
		}
		st, err := store.ReadCluster(inv.ctx, f.etcd)
		if err != nil {
			return err
		}
		nodes, members, healthy := clusterRecords(st)
		if err := printCluster(p, st, nodes, members); err != nil {
			return err
		}
		for _, key := range st.Ignored {
			fmt.Fprintf(inv.stderr, "jinid: %q: a member record under no live etcd lease, ignored (no node wrote it; whoever can write the prefix can add one)\n", key)
		}
		if err := clusterProblem(st, clusterShards()); err != nil {
			return err
		}
		if !healthy {
			return errors.New("an etcd member does not answer or reports errors")
		}
		return nil
	})
	f.bindEtcd(s.Flags(), "")
	return s
}

// clusterProblem says what keeps the deployment from serving all its
// work, if anything: no holder, or one that is no live member; a shard
// of names held by no node, or by one that is not live.
func clusterProblem(st store.ClusterStatus, names []string) error {
	switch {
	case st.Holder == "":
		return fmt.Errorf("no node holds the store under %s: none runs, or none reaches etcd", st.Prefix)
	case !st.HolderLive:
		return fmt.Errorf("the store under %s is held by %q, which is no live member", st.Prefix, st.Holder)
	}
	var unheld, dead []string
	for _, name := range names {
		switch node, ok := st.Shards[name]; {
		case !ok:
			unheld = append(unheld, name)
		case !st.ShardsLive[name]:
			dead = append(dead, fmt.Sprintf("%s (%q)", name, node))
		}
	}
	switch {
	case len(unheld) > 0:
		return fmt.Errorf("shards held by no node: %s (a node is taking them over, or none runs)", strings.Join(unheld, ", "))
	case len(dead) > 0:
		return fmt.Errorf("shards held by a node that is no live member: %s", strings.Join(dead, ", "))
	}
	return nil
}

// clusterRecords are the status's nodes and etcd members as printed;
// healthy says every etcd member answered without errors.
func clusterRecords(st store.ClusterStatus) (nodes, members []record, healthy bool) {
	for _, m := range st.Members {
		role := "standby"
		if m.Node == st.Holder {
			role = "holder"
		}
		var addrs []string
		for _, a := range m.Addrs {
			addrs = append(addrs, a.String())
		}
		var held []string
		for shard, node := range st.Shards {
			if node == m.Node {
				held = append(held, shard)
			}
		}
		slices.Sort(held)
		etcd, peers := "tls", "pinned"
		if m.EtcdInsecure {
			etcd = "insecure"
		}
		if m.SiteCA {
			peers = "site-ca"
		}
		nodes = append(nodes, record{{"node", m.Node}, {"role", role}, {"since", m.Since}, {"addresses", addrs}, {"shards", held},
			{"etcd", etcd}, {"nodeCerts", peers}})
	}
	healthy = true
	for _, m := range st.Etcd {
		state := "healthy"
		if !m.Healthy {
			state, healthy = m.Error, false
		}
		leader := ""
		if m.IsLeader {
			leader = "leader"
		}
		members = append(members, record{{"name", m.Name}, {"endpoint", m.Endpoint}, {"state", state},
			{"leader", leader}, {"version", m.Version}, {"dbSize", m.DBSize}})
	}
	return nodes, members, healthy
}

// printCluster prints the status as one object (json, yaml), or as the
// deployment's line and two tables.
func printCluster(p *printer, st store.ClusterStatus, nodes, members []record) error {
	if p.format != formatTable && p.format != formatParsable {
		return p.one(record{{"prefix", st.Prefix}, {"holder", st.Holder}, {"shardsHeld", len(st.Shards)}, {"nodes", nodes}, {"etcd", members}})
	}
	if err := p.one(record{{"prefix", st.Prefix}, {"holder", st.Holder}, {"shardsHeld", len(st.Shards)}}); err != nil {
		return err
	}
	if p.format == formatTable {
		fmt.Fprintln(p.w)
	}
	if err := p.list("nodes", nodes, record{{"node", ""}, {"role", ""}, {"since", ""}, {"addresses", ""}, {"shards", ""}, {"etcd", ""}, {"nodeCerts", ""}}); err != nil {
		return err
	}
	if p.format == formatTable {
		fmt.Fprintln(p.w)
	}
	return p.list("etcd", members, record{{"name", ""}, {"endpoint", ""}, {"state", ""}, {"leader", ""}, {"version", ""}, {"dbSize", ""}})
}

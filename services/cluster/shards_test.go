package cluster

import (
	"fmt"
	"testing"
)

func TestNewIDSaysItsShard(t *testing.T) {
	for k := range Count {
		for range 20 {
			if id := NewID(k); Of(id) != k || len(id) != 32 {
				t.Fatalf("NewID(%d) = %q, of shard %d", k, id, Of(id))
			}
		}
	}
}

// Rendezvous hashing: every shard has one owner among the nodes, the
// shards spread, and a node leaving moves its own shards only.
func TestOwner(t *testing.T) {
	if Owner(3, nil) != "" {
		t.Fatal("an owner among no nodes")
	}
	nodes := []string{"node-a", "node-b", "node-c"}
	owners := map[int]string{}
	per := map[string]int{}
	for k := range Count {
		o := Owner(k, nodes)
		if o2 := Owner(k, []string{nodes[2], nodes[0], nodes[1]}); o2 != o {
			t.Fatalf("shard %d: %s, or %s in another order", k, o, o2)
		}
		owners[k] = o
		per[o]++
	}
	for _, n := range nodes {
		if per[n] < 2 {
			t.Errorf("node %s holds %d of %d shards: %v", n, per[n], Count, per)
		}
	}
	for k := range Count {
		if o := Owner(k, []string{"node-a", "node-c"}); owners[k] != "node-b" && o != owners[k] {
			t.Errorf("shard %d moved from %s to %s when node-b left", k, owners[k], o)
		}
	}
}

// Over many node names, each node gets about its share.
func TestOwnerSpreads(t *testing.T) {
	for n := 2; n <= 5; n++ {
		var nodes []string
		for i := range n {
			nodes = append(nodes, fmt.Sprintf("gw-%d", i))
		}
		per := map[string]int{}
		for k := range 1000 {
			per[Owner(k, nodes)]++
		}
		for _, node := range nodes {
			if share := float64(per[node]) * float64(n) / 1000; share < 0.8 || share > 1.2 {
				t.Errorf("%d nodes: %s holds %d of 1000 (%.2f of its share)", n, node, per[node], share)
			}
		}
	}
}

func TestForOwner(t *testing.T) {
	if ForOwner("token:abc") != ForOwner("token:abc") {
		t.Fatal("one owner's sets in two shards")
	}
	seen := map[int]bool{}
	for range 1000 {
		seen[ForOwner("")] = true
	}
	if len(seen) != Count {
		t.Errorf("an administrator's sets in %d shards of %d", len(seen), Count)
	}
}

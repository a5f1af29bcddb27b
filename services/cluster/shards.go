// Package shards spreads a cluster's work among its live nodes. The
// renewal sets (with their leases), the mailbox registrations and the
// transactions are cut into Count shards; each shard is a store of its
// own in etcd (store.ShardPrefix), held by one node at a time under that
// node's lease, and the node holding it runs the shard's services: it
// serves the shard's requests, renews the sets' leases, pushes the
// mailboxes' events, calls the transactions' participants. Which node
// holds a shard is rendezvous hashing over the live members' names
// (Owner): every node computes the same answer from the same member
// list, a node that leaves moves only its own shards, and one that joins
// takes about its share. A shard changes hands through its hold: the new
// node waits until the old one lets it go (or its lease ends), so a
// shard's work never runs on two nodes at once, and every commit is
// fenced by the hold's revision (store.EtcdNode.Hold).
//
// An ID made for a shard (NewID) says its shard (Of), so any node can
// route a request for it; a client's new items go to the shard its
// owner key hashes to (ForOwner), so one client's quotas are counted in
// one place.
package cluster

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/jinid/jinid/internal/ids"
)

// Count is the number of shards. It is part of the layout in etcd (the
// shard an ID belongs to): fixed, not configured. Sixteen spreads the
// work of a few gateways evenly enough while keeping each node's holds
// and stores few.
const Count = 16

// Name is shard k's name: its store is at store.ShardPrefix(prefix,
// Name(k)).
func Name(k int) string { return fmt.Sprintf("%02d", k) }

// Of is the shard of id.
func Of(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % Count)
}

// NewID returns a new ID of ids.New's form whose shard is k: random
// IDs, drawn until one falls in k (Count draws on average).
func NewID(k int) string {
	for {
		if id := ids.New(); Of(id) == k {
			return id
		}
	}
}

// ForOwner is the shard a new set of owner goes to: its owner key's,
// so that a client's sets (and its quota) are in one shard; an
// administrator's (owner "") anywhere.
func ForOwner(owner string) int {
	if owner == "" {
		return rand.N(Count)
	}
	return Of("owner\x00" + owner)
}

// Owner is the node that should hold shard k among nodes: the one with
// the highest score for it (rendezvous hashing); "" for no nodes.
func Owner(k int, nodes []string) string {
	var best string
	var top uint64
	for _, n := range nodes {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d", n, k)
		if s := mix(h.Sum64()); best == "" || s > top || s == top && n < best {
			best, top = n, s
		}
	}
	return best
}

// mix spreads FNV's bits (whose high bits vary little for inputs that
// differ in their last bytes): the finalizer of splitmix64.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

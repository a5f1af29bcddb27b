package store

// Change is one key of a bucket as a commit left it, as a copy of the
// store follows it (a node of a cluster that does not hold the store:
// EtcdNode.Follow).
type Change struct {
	Bucket, Key string
	// Value is the key's value; nil: the key was deleted.
	Value []byte
	// Prev is its value before the change (nil: it had none), when the
	// follower was asked for it (FollowConfig.Prev).
	Prev []byte
	// Revision is the etcd revision of the commit that made the change
	// (0 in a copy's first load).
	Revision int64
}

// Batch is what a follower hands over at once: the changes of one or
// more commits, in commit order.
type Batch struct {
	Changes []Change
	// Revision is the etcd revision every change up to is in.
	Revision int64
	// Reset says the changes are the whole content, what was held before
	// is to be forgotten: a copy's first load, and again when etcd
	// compacted its history past where the follower stood. A follower
	// from a revision (FollowConfig.From) gets no content then: the
	// changes since that revision are lost to it.
	Reset bool
}

package store

// Change is one key of a bucket as a commit left it, as a copy of the
// store follows it (a node of a cluster that does not hold the store:
// EtcdNode.Follow).
type Change struct {
	Bucket, Key string
	// Value is the key's value; nil: the key was deleted.
	Value []byte
}

package store

import (
	"context"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"
)

// backend is where a Store keeps its data: buckets of keys, changed in
// atomic transactions that are durable before update returns.
type backend interface {
	// update runs fn in a read-write transaction and commits it; fn may
	// run more than once (a backend that retries on a conflict), and
	// nothing it wrote is kept when it fails.
	update(fn func(kv) error) error
	// view runs fn on a consistent snapshot.
	view(fn func(kv) error) error
	writeSnapshot(w io.Writer) (int64, error)
	// size is the bytes the data takes, if known.
	size() (int64, bool)
	// reach says whether the data can be reached now (an etcd cluster
	// answering); nil for a local file.
	reach(ctx context.Context) error
	// maxWrites bounds the keys one transaction may write; 0 is no
	// bound.
	maxWrites() int
	close() error
}

// kv is a transaction's view of the data. Values returned are valid
// until the transaction ends.
type kv interface {
	// get returns nil for a key that is not there.
	get(bucket, key string) ([]byte, error)
	put(bucket, key string, v []byte) error
	delete(bucket, key string) error
	// forEach visits a bucket's keys in order.
	forEach(bucket string, fn func(key string, v []byte) error) error
	// all visits every key of every bucket.
	all(fn func(bucket, key string, v []byte) error) error
}

// boltBackend is the embedded store: one bbolt file, every commit
// fsynced.
type boltBackend struct {
	db   *bolt.DB
	file string
}

func (b *boltBackend) update(fn func(kv) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltKV{tx}) })
}

func (b *boltBackend) view(fn func(kv) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltKV{tx}) })
}

func (b *boltBackend) writeSnapshot(w io.Writer) (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

func (b *boltBackend) size() (int64, bool) {
	fi, err := os.Stat(b.file)
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}

func (b *boltBackend) reach(context.Context) error { return nil }

func (b *boltBackend) maxWrites() int { return 0 }

func (b *boltBackend) close() error { return b.db.Close() }

type boltKV struct{ tx *bolt.Tx }

func (t boltKV) get(bucket, key string) ([]byte, error) {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil, nil
	}
	return b.Get([]byte(key)), nil
}

func (t boltKV) put(bucket, key string, v []byte) error {
	b, err := t.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), v)
}

func (t boltKV) delete(bucket, key string) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key))
}

func (t boltKV) forEach(bucket string, fn func(key string, v []byte) error) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
}

func (t boltKV) all(fn func(bucket, key string, v []byte) error) error {
	return t.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error { return fn(string(name), string(k), v) })
	})
}

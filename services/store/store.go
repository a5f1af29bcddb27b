// Package store is jinid's crash-safe state: an embedded bbolt database in
// one data directory. Every Update is on disk (fsync) before it returns, so
// a service answers "ok" only for what a crash cannot take back.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout this build reads and writes. A store written
// by a newer build is refused rather than misread.
const SchemaVersion = 1

// FileName is the database file inside the data directory.
const FileName = "jinid.db"

var metaBucket = []byte("meta")

// ErrNewerSchema: the data directory was written by a newer jinid.
var ErrNewerSchema = errors.New("store written by a newer jinid")

// Store is an open data directory.
type Store struct {
	db   *bolt.DB
	path string
	// wmu serialises writers across the transaction and its on-commit
	// hooks, so in-memory state follows the store in commit order.
	wmu sync.Mutex
}

// Open opens (creating if needed) the store in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: another jinid holds it", path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		v := 0
		if raw := b.Get([]byte("schema")); raw != nil {
			if v, err = strconv.Atoi(string(raw)); err != nil {
				return fmt.Errorf("%s: unreadable schema version %q", s.path, raw)
			}
		}
		switch {
		case v > SchemaVersion:
			return fmt.Errorf("%s: schema %d, this build reads up to %d: %w", s.path, v, SchemaVersion, ErrNewerSchema)
		case v < SchemaVersion:
			// Version 0 is a new store; later versions add their steps here.
			return b.Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion)))
		}
		return nil
	})
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Tx is one transaction. Values are stored as JSON.
type Tx struct {
	tx       *bolt.Tx
	onCommit []func()
}

// OnCommit runs f after the transaction is on disk; not if it fails. It is
// how in-memory state follows the store without getting ahead of it.
func (t *Tx) OnCommit(f func()) { t.onCommit = append(t.onCommit, f) }

// Update runs fn in a read-write transaction and commits it to disk. If fn
// fails nothing is written. Writers run one at a time, hooks included:
// never call Update while holding a lock that a hook takes.
func (s *Store) Update(fn func(*Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t := &Tx{}
	err := s.db.Update(func(tx *bolt.Tx) error {
		t.tx = tx
		return fn(t)
	})
	if err != nil {
		return err
	}
	for _, f := range t.onCommit {
		f()
	}
	return nil
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(*Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx}) })
}

// Put stores v as JSON under bucket/key.
func (t *Tx) Put(bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s/%s: %w", bucket, key, err)
	}
	b, err := t.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

// Get reads bucket/key into v; it reports whether the key exists.
func (t *Tx) Get(bucket, key string, v any) (bool, error) {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return false, nil
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decoding %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

// Delete removes bucket/key, if present.
func (t *Tx) Delete(bucket, key string) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key))
}

// ForEach calls fn with every key and raw JSON value of a bucket.
func (t *Tx) ForEach(bucket string, fn func(key string, raw []byte) error) error {
	b := t.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
}

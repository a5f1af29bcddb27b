// Package store is jinid's crash-safe state: an embedded bbolt database in
// one data directory (the default), or an etcd cluster that several
// jinids share. Every Update is on disk (fsync), or committed by the etcd
// cluster, before it returns, so a service answers "ok" only for what a
// crash cannot take back.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
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
	be   backend
	path string
	// wmu serialises writers across the transaction and its on-commit
	// hooks, so in-memory state follows the store in commit order.
	wmu sync.Mutex
	// qmu guards the changes waiting for a group commit (Shared), and
	// whether one of their writers leads it.
	qmu     sync.Mutex
	queue   []*shared
	leading bool

	// trouble is why writes fail now (the disk: full, read-only, not
	// ours), "" when they do not; a probe clears it once one succeeds.
	mu      sync.Mutex
	trouble string
	probing bool
	closed  chan struct{}
	probes  sync.WaitGroup
	// ProbeEvery is how often a write is tried while in trouble.
	ProbeEvery time.Duration

	commits *metrics.Histogram
	changes *metrics.Counter
	// writing is when the running write began (UnixNano), 0 when none
	// runs: a write that never ends is a wedged daemon (liveness).
	writing atomic.Int64
}

// Writing says how long the write under way has run; 0 if none.
func (s *Store) Writing() time.Duration {
	if at := s.writing.Load(); at != 0 {
		return time.Since(time.Unix(0, at))
	}
	return 0
}

// Instrument has the store report its commits' time and its size to
// reg; call it before the store is used.
func (s *Store) Instrument(reg *metrics.Registry) {
	s.commits = reg.Histogram("jinid_store_commit_duration_seconds",
		"Time to commit a change to the store, fsync included.", commitBuckets)
	s.changes = reg.Counter("jinid_store_changes_total",
		"Changes committed to the store: more than its commits when changes share them (group commit).")
	reg.GaugeFunc("jinid_store_size_bytes", "Size of the store's file (or of its data in etcd).", nil, func(emit func(float64, ...string)) {
		if n, ok := s.be.size(); ok {
			emit(float64(n))
		}
	})
	if in, ok := s.be.(interface{ instrument(*metrics.Registry) }); ok {
		in.instrument(reg)
	}
}

// commitBuckets: an fsync takes tens of microseconds on tmpfs, a few
// milliseconds on flash or SSD, up to seconds on a busy SD card.
var commitBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}

// RetryAfter is what a client is told to wait, in seconds, when the
// store cannot be written.
const RetryAfter = 10

// Health reports whether writes work, and if not, why.
func (s *Store) Health() (ok bool, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trouble == "", s.trouble
}

// MaxWrites bounds the keys one Update may write: 0 (no bound) for the
// embedded store; for one in etcd, what the cluster takes in one
// transaction (EtcdConfig.MaxTxnOps) less room for the store's own
// keys. A service that writes in batches (leases expiring together, a
// renewal call's results, a mailbox's group commit) splits them so.
func (s *Store) MaxWrites() int { return s.be.maxWrites() }

// Chunk is the size of the parts a batch of n things is written in when
// each thing writes at most per keys: n when the store has no bound.
func (s *Store) Chunk(n, per int) int {
	mw := s.MaxWrites()
	if mw == 0 || n == 0 {
		return max(n, 1)
	}
	return max(1, min(n, mw/max(per, 1)))
}

// Reachable says whether the store's data can be reached now: always
// for the embedded store; for one in etcd, whether the cluster answers a
// read a quorum vouches for (a readiness check).
func (s *Store) Reachable(ctx context.Context) error { return s.be.reach(ctx) }

// diskTrouble says why err is the disk's fault (no space, read-only,
// permission, I/O), or "" when it is not.
func diskTrouble(err error) string {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EIO} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return ""
}

// shortCause is an error's last cause, the one that says what happened.
func shortCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// troubled records a write that failed for the disk, and starts probing
// for its end; it returns what the client is told: try again later.
func (s *Store) troubled(why string) error {
	s.mu.Lock()
	s.trouble = why
	start := !s.probing
	s.probing = true
	s.mu.Unlock()
	if start {
		s.probes.Add(1)
		go s.probe()
	}
	return fault.Limit(apitypes.Unavailable, "", RetryAfter, "the daemon cannot write its data now (%s); nothing acknowledged is lost: try again later", why)
}

// probe tries a small write now and then until one succeeds.
func (s *Store) probe() {
	defer s.probes.Done()
	every := s.ProbeEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		s.wmu.Lock()
		err := s.be.update(func(t kv) error {
			return t.put(string(metaBucket), "probe", []byte(time.Now().UTC().Format(time.RFC3339Nano)))
		})
		s.wmu.Unlock()
		if err == nil {
			s.mu.Lock()
			s.trouble, s.probing = "", false
			s.mu.Unlock()
			return
		}
	}
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
	return newStore(&boltBackend{db: db, file: path}, path)
}

// newStore opens a store on a backend, checking its schema.
func newStore(be backend, path string) (*Store, error) {
	s := &Store{be: be, path: path, closed: make(chan struct{})}
	if err := s.migrate(); err != nil {
		be.close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate() error {
	return s.be.update(func(t kv) error {
		raw, err := t.get(string(metaBucket), "schema")
		if err != nil {
			return err
		}
		v := 0
		if raw != nil {
			if v, err = strconv.Atoi(string(raw)); err != nil {
				return fmt.Errorf("%s: unreadable schema version %q", s.path, raw)
			}
		}
		switch {
		case v > SchemaVersion:
			return fmt.Errorf("%s: schema %d, this build reads up to %d: %w", s.path, v, SchemaVersion, ErrNewerSchema)
		case v < SchemaVersion:
			// Version 0 is a new store; later versions add their steps here.
			return t.put(string(metaBucket), "schema", []byte(strconv.Itoa(SchemaVersion)))
		}
		return nil
	})
}

// Close closes the store, after the probe of a troubled disk ends.
func (s *Store) Close() error {
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	s.probes.Wait()
	return s.be.close()
}

// Path is the database file (for etcd, its endpoints and prefix).
func (s *Store) Path() string { return s.path }

// Tx is one transaction. Values are stored as JSON.
type Tx struct {
	kv       kv
	onCommit []func()

	// Of a group commit (Shared): what the changes share, and what this
	// one claimed and added.
	b       *batch
	claimed []string
	added   []added
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
	start := time.Now()
	s.writing.Store(start.UnixNano())
	defer s.writing.Store(0)
	err := s.be.update(func(tx kv) error {
		// A backend may run fn again (etcd, on a conflict): only the
		// hooks of the run that commits run.
		t.kv, t.onCommit = tx, nil
		return fn(t)
	})
	if err != nil {
		return s.failed(err)
	}
	s.committed(start, 1)
	for _, f := range t.onCommit {
		f()
	}
	return nil
}

// failed turns a failed commit's error into what its writers are told.
func (s *Store) failed(err error) error {
	if why := diskTrouble(err); why != "" {
		return s.troubled(why)
	}
	if errors.Is(err, errUnavailable) {
		return s.troubled("the etcd cluster did not commit the change in time: " + shortCause(err))
	}
	return err
}

// committed notes a commit of n changes begun at start.
func (s *Store) committed(start time.Time, n int) {
	s.commits.Observe(time.Since(start).Seconds())
	s.changes.Add(n)
	s.mu.Lock()
	s.trouble = "" // a write succeeded: the disk is well again
	s.mu.Unlock()
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(*Tx) error) error {
	return s.be.view(func(tx kv) error { return fn(&Tx{kv: tx}) })
}

// Put stores v as JSON under bucket/key.
func (t *Tx) Put(bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s/%s: %w", bucket, key, err)
	}
	t.wrote()
	return t.kv.put(bucket, key, raw)
}

// wrote counts a key written by a change of a group commit.
func (t *Tx) wrote() {
	if t.b != nil {
		t.b.writes++
	}
}

// Get reads bucket/key into v; it reports whether the key exists.
func (t *Tx) Get(bucket, key string, v any) (bool, error) {
	raw, err := t.kv.get(bucket, key)
	if err != nil || raw == nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decoding %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

// Delete removes bucket/key, if present.
func (t *Tx) Delete(bucket, key string) error {
	t.wrote()
	return t.kv.delete(bucket, key)
}

// ForEach calls fn with every key and raw JSON value of a bucket, in key
// order.
func (t *Tx) ForEach(bucket string, fn func(key string, raw []byte) error) error {
	return t.kv.forEach(bucket, fn)
}

// WriteSnapshot writes a consistent copy of the store (a read
// transaction: writers go on meanwhile) to w, and returns its size.
func (s *Store) WriteSnapshot(w io.Writer) (int64, error) {
	n, err := s.be.writeSnapshot(w)
	if err != nil {
		return n, fmt.Errorf("writing a snapshot of %s: %w", s.path, err)
	}
	return n, nil
}

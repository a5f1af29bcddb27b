package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/store"
)

// snapshots keeps a copy of a live store that may be lost (a tmpfs, as
// OpenWrt's /var is) on persistent storage: on a schedule, at a clean
// stop, and on demand (POST /v1/snapshot, "jinid snapshot"). Each is
// written whole to a temporary file, synced and renamed over the last,
// so a power cut mid-write leaves the previous snapshot intact.
type snapshots struct {
	st    *store.Store
	dir   string
	every time.Duration
	log   *slog.Logger

	mu     sync.Mutex // one snapshot at a time
	taken  *metrics.Counter
	bytes  *metrics.Gauge
	last   *metrics.Gauge
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// SnapshotFile is the name of the snapshot in the snapshot directory.
const SnapshotFile = "jinid.db"

func newSnapshots(st *store.Store, dir string, every time.Duration, log *slog.Logger, reg *metrics.Registry) *snapshots {
	return &snapshots{st: st, dir: dir, every: every, log: log.With("component", "snapshots"), stop: make(chan struct{}),
		taken: reg.Counter("jinid_snapshots_total", "Snapshots of the store written to the snapshot directory, by outcome (ok, failed).", "outcome"),
		bytes: reg.Gauge("jinid_snapshot_bytes", "Size of the last snapshot written."),
		last:  reg.Gauge("jinid_snapshot_last_success_timestamp_seconds", "When the last snapshot was written (Unix time).")}
}

// restoreSnapshot copies the snapshot in snapDir into dataDir when
// dataDir holds no store (a tmpfs after a reboot). It reports whether
// it did.
func restoreSnapshot(dataDir, snapDir string, log *slog.Logger) (bool, error) {
	live := filepath.Join(dataDir, store.FileName)
	if _, err := os.Stat(live); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, nil // a store is there (or cannot be looked at: Open says why)
	}
	src := filepath.Join(snapDir, SnapshotFile)
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("restoring the snapshot: %w", err)
	}
	defer in.Close()
	fi, _ := in.Stat()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return false, fmt.Errorf("creating data directory %s: %w", dataDir, err)
	}
	if _, err := writeAtomically(live, func(w io.Writer) (int64, error) { return io.Copy(w, in) }); err != nil {
		return false, fmt.Errorf("restoring the snapshot %s: %w", src, err)
	}
	log.Info("store restored from its snapshot (the live store was missing: a reboot?)", "snapshot", src,
		"taken", fi.ModTime().UTC().Format(time.RFC3339), "bytes", fi.Size())
	return true, nil
}

// writeAtomically writes path with write via a temporary file in the
// same directory, synced, then renamed over path, the directory synced.
func writeAtomically(path string, write func(io.Writer) (int64, error)) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := write(tmp)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return n, err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return n, nil
}

// Take writes a snapshot now.
func (s *snapshots) Take(why string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.taken.Inc("failed")
		return 0, fmt.Errorf("creating snapshot directory %s: %w", s.dir, err)
	}
	n, err := writeAtomically(filepath.Join(s.dir, SnapshotFile), s.st.WriteSnapshot)
	if err != nil {
		s.taken.Inc("failed")
		s.log.Error("snapshot failed; the previous one is kept", "reason", why, "dir", s.dir, "err", err)
		return 0, err
	}
	s.taken.Inc("ok")
	s.bytes.Set(float64(n))
	s.last.Set(float64(time.Now().Unix()))
	s.log.Info("snapshot written", "reason", why, "file", filepath.Join(s.dir, SnapshotFile), "bytes", n,
		"took", time.Since(start).Round(time.Millisecond))
	return n, nil
}

// Start takes snapshots on the schedule.
func (s *snapshots) Start(context.Context) error {
	s.wg.Go(func() {
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.Take("scheduled")
			}
		}
	})
	return nil
}

// Shutdown stops the schedule and takes a last snapshot: every service
// has stopped by now (they stop before the store), so it holds
// everything acknowledged.
func (s *snapshots) Shutdown(context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	_, err := s.Take("stopping")
	return err
}

// The on-demand snapshot is the administrator's: POST /v1/snapshot.

func (s *snapshots) Name() string   { return "snapshots" }
func (s *snapshots) Prefix() string { return "/v1/snapshot" }

func (s *snapshots) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Admin, "POST /v1/snapshot", s.httpTake)
}

// SnapshotTaken is the answer to POST /v1/snapshot.
type SnapshotTaken struct {
	File  string    `json:"file"`
	Bytes int64     `json:"bytes"`
	At    time.Time `json:"at"`
}

func (s *snapshots) httpTake(w http.ResponseWriter, _ *http.Request) {
	n, err := s.Take("asked")
	if err != nil {
		httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, "", 10, "the snapshot could not be written (the daemon's log says why); the previous one is kept"))
		return
	}
	httpjson.Write(w, http.StatusOK, SnapshotTaken{File: filepath.Join(s.dir, SnapshotFile), Bytes: n, At: time.Now().UTC()})
}

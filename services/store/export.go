package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// An export is the store as JSON lines, a key each:
// {"bucket":"items","key":"...","value":{...}}; what Import reads back
// into another store (the embedded one into etcd, or back).
type exported struct {
	Bucket string          `json:"bucket"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value"`
}

// importBatch is the keys written by one transaction of an import:
// under etcd's default limit of operations per transaction (128), with
// room for the bucket versions.
const importBatch = 64

// maxExportLine bounds a line Import reads: a value is at most what the
// largest registration or batch stores.
const maxExportLine = 16 << 20

// Export writes every key of the store (the schema's meta key left out:
// the target has its own) and returns how many.
func (s *Store) Export(w io.Writer) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	err := s.be.view(func(t kv) error {
		return t.all(func(bucket, key string, v []byte) error {
			if bucket == string(metaBucket) {
				return nil
			}
			n++
			return enc.Encode(exported{Bucket: bucket, Key: key, Value: v})
		})
	})
	if err != nil {
		return n, fmt.Errorf("exporting %s: %w", s.path, err)
	}
	return n, bw.Flush()
}

// ErrNotEmpty is Import's error for a store that holds data already.
var ErrNotEmpty = errors.New("the store holds data already")

// Import writes an export into the store, which must be empty, and
// returns how many keys it wrote. A line that does not read stops it
// with the line's number; what was written before stays (import into a
// fresh store again).
func (s *Store) Import(r io.Reader) (int, error) {
	empty := true
	err := s.View(func(tx *Tx) error {
		return tx.kv.all(func(bucket, _ string, _ []byte) error {
			if bucket != string(metaBucket) {
				empty = false
				return errStop
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	if !empty {
		return 0, fmt.Errorf("importing into %s: %w", s.path, ErrNotEmpty)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxExportLine)
	n, line := 0, 0
	var batch []exported
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.Update(func(tx *Tx) error {
			for _, e := range batch {
				if err := tx.kv.put(e.Bucket, e.Key, e.Value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for sc.Scan() {
		line++
		var e exported
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Bucket == "" || e.Key == "" || len(e.Value) == 0 {
			return n, fmt.Errorf("line %d: not a line of an export (want {\"bucket\":...,\"key\":...,\"value\":...})", line)
		}
		if e.Bucket == string(metaBucket) {
			continue
		}
		batch = append(batch, e)
		if len(batch) == importBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("line %d: %w", line+1, err)
	}
	return n, flush()
}

var errStop = errors.New("stop")

package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// writeBytes is what this process has had written to storage so far
// (/proc/self/io write_bytes), or -1 where that is not known.
func writeBytes() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// BenchmarkWriteVolume measures what one acknowledged change (a small
// record, as a lease renewal writes) costs the disk under the store: the
// bytes the kernel writes for it, fsync and file system included. Run it
// with the store on the medium in question (TMPDIR on flash, say); on a
// tmpfs the figure is 0.
func BenchmarkWriteVolume(b *testing.B) {
	st, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	type lease struct {
		ID         string `json:"id"`
		Expiration int64  `json:"expiration"`
	}
	before := writeBytes()
	i := int64(0)
	for b.Loop() {
		i++
		if err := st.Update(func(tx *Tx) error { return tx.Put("leases", "lease-1", lease{ID: "lease-1", Expiration: i}) }); err != nil {
			b.Fatal(err)
		}
	}
	if before >= 0 {
		b.ReportMetric(float64(writeBytes()-before)/float64(b.N), "disk-bytes/change")
	}
}

package metrics

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
)

// The Go runtime's metrics, under the names Prometheus's own Go client
// gives them, read from runtime/metrics at each scrape.
var runtimeMetrics = []struct {
	name, typ, help, sample string
}{
	{"go_goroutines", "gauge", "Goroutines that currently exist.", "/sched/goroutines:goroutines"},
	{"go_gomaxprocs", "gauge", "The GOMAXPROCS setting.", "/sched/gomaxprocs:threads"},
	{"go_memstats_heap_alloc_bytes", "gauge", "Bytes of allocated heap objects.", "/memory/classes/heap/objects:bytes"},
	{"go_memstats_heap_objects", "gauge", "Allocated heap objects.", "/gc/heap/objects:objects"},
	{"go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the operating system.", "/memory/classes/total:bytes"},
	{"go_memlimit_bytes", "gauge", "The Go runtime's soft memory limit (GOMEMLIMIT, or the daemon's memory limit).", "/gc/gomemlimit:bytes"},
	{"go_gc_cycles_total", "counter", "Completed garbage collection cycles.", "/gc/cycles/total:gc-cycles"},
	{"go_gc_cpu_seconds_total", "counter", "CPU time spent collecting garbage (an estimate).", "/cpu/classes/gc/total:cpu-seconds"},
}

// writeRuntime writes go_info and runtimeMetrics.
func writeRuntime(w io.Writer) {
	fmt.Fprintf(w, "# HELP go_info The Go version of the build.\n# TYPE go_info gauge\ngo_info{version=%q} 1\n", runtime.Version())
	samples := make([]metrics.Sample, len(runtimeMetrics))
	for i, m := range runtimeMetrics {
		samples[i].Name = m.sample
	}
	metrics.Read(samples)
	for i, m := range runtimeMetrics {
		var v string
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			v = strconv.FormatUint(samples[i].Value.Uint64(), 10)
		case metrics.KindFloat64:
			v = formatFloat(samples[i].Value.Float64())
		default:
			continue // not in this Go
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", m.name, m.help, m.name, m.typ, m.name, v)
	}
}

// userHZ is the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const userHZ = 100

// writeProcess writes the process's own metrics, under the names
// Prometheus's clients give them, from /proc (nothing elsewhere).
func writeProcess(w io.Writer) {
	st, err := readStat("/proc/self/stat")
	if err != nil {
		return
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, formatFloat(v))
	}
	fmt.Fprintf(w, "# HELP process_cpu_seconds_total User and system CPU time spent, in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %s\n",
		formatFloat(float64(st.utime+st.stime)/userHZ))
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge("process_open_fds", "Open file descriptors.", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		gauge("process_max_fds", "The most file descriptors the process may open.", float64(lim.Cur))
	}
	gauge("process_resident_memory_bytes", "Resident memory size, in bytes.", float64(st.rss*int64(os.Getpagesize())))
	gauge("process_virtual_memory_bytes", "Virtual memory size, in bytes.", float64(st.vsize))
	if boot, err := bootTime("/proc/stat"); err == nil {
		gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", float64(boot)+float64(st.start)/userHZ)
	}
	gauge("process_threads", "OS threads of the process.", float64(st.threads))
}

// stat is what writeProcess takes of /proc/PID/stat.
type stat struct {
	utime, stime, threads, start, vsize, rss int64
}

// readStat parses /proc/PID/stat: after the command, in parentheses and
// perhaps with spaces in it, come the fields from the third on (proc(5)).
func readStat(path string) (stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return stat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("proc stat: no command")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return stat{}, fmt.Errorf("proc stat: %d fields after the command, want at least 22", len(f))
	}
	var s stat
	for _, x := range []struct {
		field int
		to    *int64
	}{{14, &s.utime}, {15, &s.stime}, {20, &s.threads}, {22, &s.start}, {23, &s.vsize}, {24, &s.rss}} {
		v, err := strconv.ParseInt(f[x.field-3], 10, 64)
		if err != nil {
			return stat{}, fmt.Errorf("proc stat field %d: %w", x.field, err)
		}
		*x.to = v
	}
	return s, nil
}

// bootTime is the btime line of /proc/stat: when the system booted.
func bootTime(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no btime", path)
}

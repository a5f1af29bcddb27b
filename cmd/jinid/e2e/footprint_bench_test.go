package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// BenchmarkFootprint sets jinid's router daemon beside avahi-daemon in
// one run, each alone in a network namespace with one veth interface on
// a LAN of its own (IPv4 and IPv6, multicast on): the time from exec to ready, the RSS
// 5 s after start, and the CPU used while idle over JINID_IDLE_SECONDS
// (default 60), as seconds per hour. The router daemon is built as make
// dist builds it (scripts/build-target); JINID_FOOTPRINT_BEFORE may name
// an older daemon binary to measure as well (the "before" of
// docs/performance.md: build it from an earlier commit with
// scripts/build-target). Run it with -benchtime=1x.
//
// Ready is /readyz answering 200 for jinid (multicast joined), the
// "Server startup complete" line for avahi. Each is started by nsenter
// into its namespace (which only enters it, where `ip netns exec` also
// remounts /sys: 25 ms); start-up includes nsenter's own exec, reported
// apart as nsenter-ms. CPU is read from every thread's schedstat
// (nanoseconds, where /proc's stat counts 10 ms ticks).
func BenchmarkFootprint(b *testing.B) {
	avahi := testenv.LookPath(b, "avahi-daemon", "avahi-daemon")
	idle := time.Minute
	if v, err := strconv.Atoi(os.Getenv("JINID_IDLE_SECONDS")); err == nil && v > 0 {
		idle = time.Duration(v) * time.Second
	}
	dist := b.TempDir()
	build := exec.Command("sh", "scripts/build-target", "amd64", "-s -w", dist)
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("scripts/build-target: %v\n%s", err, out)
	}
	subjects := []struct{ name, bin string }{
		{"jinid-daemon", filepath.Join(dist, "jinid-daemon")},
		{"jinid", filepath.Join(dist, "jinid")},
		{"avahi-daemon", avahi},
	}
	if before := os.Getenv("JINID_FOOTPRINT_BEFORE"); before != "" {
		subjects = append(subjects, struct{ name, bin string }{"before", before})
	}
	for b.Loop() {
		lab := netlab.New(b)
		results := make([]footprint, len(subjects))
		// Started together, so that the idle windows are the same
		// minutes of the same machine; each on a LAN of its own, so
		// that none hears the others' announcements.
		for i, s := range subjects {
			h := lab.Host(fmt.Sprintf("fp%d", i))
			h.Attach(lab.LAN())
			results[i] = startSubject(b, h, s.name, s.bin)
		}
		time.Sleep(5 * time.Second) // settled after start, before measuring
		for i := range results {
			results[i].rss, results[i].anon, results[i].file = procRSS(b, results[i].pid)
			results[i].cpu0 = schedCPU(b, results[i].pid)
		}
		time.Sleep(idle) // the idle time measured
		for _, r := range results {
			cpu := schedCPU(b, r.pid) - r.cpu0
			perHour := cpu.Seconds() * float64(time.Hour) / float64(idle)
			b.ReportMetric(float64(r.ready.Microseconds())/1000, r.name+"-ready-ms")
			b.ReportMetric(float64(r.rss)/1e6, r.name+"-RSS-MB")
			b.ReportMetric(perHour, r.name+"-cpu-s/h")
			b.Logf("%-13s ready %6.1f ms  RSS %5.1f MB (anon %4.1f, file %4.1f)  idle CPU %.3f s/h",
				r.name, float64(r.ready.Microseconds())/1000, float64(r.rss)/1e6, float64(r.anon)/1e6, float64(r.file)/1e6, perHour)
		}
		// The cost of nsenter itself, in the start-up figures.
		h := lab.Host("fpx")
		t0 := time.Now()
		if err := enter(h, "true").Run(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(t0).Microseconds())/1000, "nsenter-ms")
	}
}

type footprint struct {
	name            string
	pid             int
	ready           time.Duration
	rss, anon, file int64
	cpu0            time.Duration
}

// startSubject starts bin in h and waits until it is ready; it is stopped
// when the benchmark ends.
func startSubject(b *testing.B, h *netlab.Host, name, bin string) footprint {
	b.Helper()
	dir := b.TempDir()
	var cmd *exec.Cmd
	if name == "avahi-daemon" {
		conf := filepath.Join(dir, "avahi-daemon.conf")
		os.WriteFile(conf, []byte("[server]\nuse-ipv4=yes\nuse-ipv6=yes\nenable-dbus=no\n[wide-area]\nenable-wide-area=no\n"), 0o644)
		cmd = enter(h, bin, "--no-drop-root", "--no-chroot", "--no-rlimits", "--no-proc-title", "-f", conf)
	} else {
		sock := filepath.Join(dir, "api.sock")
		cmd = enter(h, bin, "daemon", "--api-listen", ":4162", "--data-dir", filepath.Join(dir, "data"),
			"--api-socket", sock)
	}
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = cmd.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	ready := make(chan time.Duration, 1)
	if name == "avahi-daemon" {
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "Server startup complete") {
					ready <- time.Since(t0)
				}
			}
		}()
	} else {
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
			}
		}()
		sock := filepath.Join(dir, "api.sock")
		hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
		go func() {
			for time.Since(t0) < 10*time.Second {
				if resp, err := hc.Get("http://jinid/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						ready <- time.Since(t0)
						return
					}
				}
				time.Sleep(200 * time.Microsecond) // startup measured to a fraction of a millisecond
			}
		}()
	}
	select {
	case d := <-ready:
		return footprint{name: name, pid: cmd.Process.Pid, ready: d}
	case <-time.After(10 * time.Second):
		b.Fatalf("%s not ready within 10 s", name)
	}
	return footprint{}
}

// enter is a command run in h's network namespace, and only there.
func enter(h *netlab.Host, name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + h.NetnsName(), "--", name}, args...)...)
}

// procRSS is a process's resident memory: all, anonymous and file pages
// (/proc/PID/status, kB).
func procRSS(b testing.TB, pid int) (all, anon, file int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			all = kb * 1024
		case "RssAnon:":
			anon = kb * 1024
		case "RssFile:":
			file = kb * 1024
		}
	}
	return all, anon, file
}

// schedCPU is the CPU time of every thread of a process, in nanoseconds
// (the first field of /proc/PID/task/TID/schedstat).
func schedCPU(b testing.TB, pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // gone
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

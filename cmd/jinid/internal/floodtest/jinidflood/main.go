// Command jinidflood replays, against a jinid daemon on a test LAN, the
// floods a hostile host can send: multicast requests from made-up
// sources, storms of announcements, silent TCP connections, Jini ERI
// calls begun and never ended. Each is bounded in count and in time and
// stops by itself. Run it only inside a network namespace of a test LAN
// (ip netns exec), never on a real network.
//
//	jinidflood requests --iface eth0 --subnet 198.18.1.0/24 --skip 198.18.1.1 --rate 1000 --count 30000 --for 40s
//	jinidflood announce --iface eth0 --groups storm --host 198.18.1.2 --rate 5000 --count 100000 --for 40s
//	jinidflood silent --addr 198.18.1.1:4160 --conns 5000 --rate 2000 --reopen 3s --for 20s
//	jinidflood silent --addr [2001:db8:1::1]:4160 --from 2001:db8:1::1000,2001:db8:1::1001 --conns 1000
//	jinidflood jeri --addr 198.18.1.1:41379 --conns 8 --sessions 256 --bytes 1040000 --for 20s
//	jinidflood jeri --addr 198.18.1.1:41379 --conns 8 --sessions 1 --bytes 1 --for 20s
//
// It prints a JSON line of progress every second, and one with "done"
// set at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/floodtest"
	"github.com/jinid/jinid/internal/namespace"
)

// limits bound every flood, whatever the flags say.
const (
	maxCount = 1_000_000
	maxRate  = 20_000
	maxFor   = 5 * time.Minute
	maxConns = 20_000
	// maxCallBytes is a little over what the daemon takes in one call.
	maxCallBytes = 2 << 20
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "jinidflood:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: jinidflood requests|announce|silent|jeri [flags] (-h for each)")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	rate := fs.Int("rate", 1000, "packets or connections a second")
	count := fs.Int("count", 10_000, "packets to send at most")
	dur := fs.Duration("for", 30*time.Second, "stop after this long at most")
	iface := fs.String("iface", "eth0", "interface to send on (requests, announce)")
	subnet := fs.String("subnet", "", "requests: the LAN's IPv4 subnet, where sources are made up")
	skip := fs.String("skip", "", "requests: addresses (comma-separated) never to use as a source")
	groups := fs.String("groups", "", "announce: the groups announced (comma-separated)")
	host := fs.String("host", "", "announce: the host announced; a silent listener is opened there unless --port is given")
	port := fs.Int("port", 0, "announce: the port announced")
	addr := fs.String("addr", "", "silent, jeri: host:port to connect to")
	conns := fs.Int("conns", 1000, "silent, jeri: connections to keep open")
	reopen := fs.Duration("reopen", 3*time.Second, "silent, jeri: wait this long before opening again a connection the daemon closed")
	from := fs.String("from", "", "silent, jeri: source addresses (comma-separated), taken in turn")
	sessions := fs.Int("sessions", 256, "jeri: sessions to open on each connection (at most 256)")
	callBytes := fs.Int("bytes", 1, "jeri: bytes of a call to send on each session, never ending it")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *rate <= 0 || *rate > maxRate || *count <= 0 || *count > maxCount || *dur <= 0 || *dur > maxFor || *conns <= 0 || *conns > maxConns {
		return fmt.Errorf("--rate (1 to %d), --count (1 to %d), --for (up to %v) and --conns (1 to %d) bound every flood", maxRate, maxCount, maxFor, maxConns)
	}
	if *sessions < 1 || *sessions > 256 || *callBytes < 1 || *callBytes > maxCallBytes {
		return fmt.Errorf("--sessions (1 to 256) and --bytes (1 to %d) bound a Jini ERI flood", maxCallBytes)
	}
	var sources []netip.Addr
	for _, s := range strings.Split(*from, ",") {
		if s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("--from %q: %w", s, err)
		}
		sources = append(sources, a)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, *dur)
	defer cancel()
	ns := namespace.Current()
	var sent atomic.Int64
	pace := floodtest.Pace{PerSecond: *rate, Count: *count, Sent: &sent}
	report := func(done bool, extra map[string]any) {
		m := map[string]any{"sent": sent.Load(), "done": done}
		for k, v := range extra {
			m[k] = v
		}
		json.NewEncoder(os.Stdout).Encode(m)
	}
	stopReports := ticking(ctx, func() { report(false, nil) })
	defer stopReports()

	switch args[0] {
	case "requests":
		sn, err := netip.ParsePrefix(*subnet)
		if err != nil {
			return fmt.Errorf("--subnet %q: %w", *subnet, err)
		}
		var sk []netip.Addr
		for _, s := range strings.Split(*skip, ",") {
			if s == "" {
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("--skip %q: %w", s, err)
			}
			sk = append(sk, a)
		}
		_, err = floodtest.SpoofedRequests(ctx, ns, *iface, sn, sk, pace)
		stopReports()
		report(true, nil)
		return err
	case "announce":
		p := *port
		if p == 0 {
			lp, wg, err := floodtest.SilentListener(ctx, ns, net.JoinHostPort(*host, "0"))
			if err != nil {
				return fmt.Errorf("a silent listener on %s: %w", *host, err)
			}
			defer wg.Wait()
			p = lp
		}
		var gs []string
		if *groups != "" {
			gs = strings.Split(*groups, ",")
		}
		_, err := floodtest.Announcements(ctx, ns, *iface, gs, *host, p, pace)
		stopReports()
		report(true, map[string]any{"port": p})
		cancel() // the silent listener goes
		return err
	case "silent", "jeri":
		if err := raiseOpenFiles(*conns + 64); err != nil {
			return err
		}
		f := floodtest.Connections{Addr: *addr, N: *conns, PerSecond: *rate, Reopen: *reopen, From: sources}
		if args[0] == "jeri" {
			f.Say = floodtest.JERICalls(*sessions, *callBytes)
		}
		var st floodtest.SilentStats
		stats := func() map[string]any {
			return map[string]any{"opened": st.Opened.Load(), "closed": st.Closed.Load(), "failed": st.Failed.Load(),
				"said": st.Said.Load(), "maxHeldMs": st.MaxHeldMs.Load()}
		}
		stopReports()
		stopReports = ticking(ctx, func() { report(false, stats()) })
		wg := f.Run(ctx, ns, &st)
		<-ctx.Done()
		wg.Wait()
		stopReports()
		report(true, stats())
		return nil
	}
	return fmt.Errorf("unknown flood %q: requests, announce, silent or jeri", args[0])
}

// ticking calls f every second until ctx ends or the returned stop is
// called (which waits for a call in progress).
func ticking(ctx context.Context, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// raiseOpenFiles lifts this process's open files limit to n at least:
// each silent connection is a file.
func raiseOpenFiles(n int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	if rl.Cur >= uint64(n) {
		return nil
	}
	rl.Cur = uint64(n)
	rl.Max = max(rl.Max, rl.Cur)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raising the open files limit to %d (run as root): %w", n, err)
	}
	return nil
}

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/jinid/jinid/cmd/jinid/internal/inspect"
	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/discoverytest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// inspect on two interfaces at once, and on any: the announcements of a
// lookup service on each LAN, in one output; a pcapng with one named
// interface block each, and a cooked capture of any, that decode to the
// same; promiscuous on a hub, the unicast exchange of two other hosts.
func TestInspectInterfaces(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan1, lan2 := lab.LAN(), lab.LAN()
	lan1.Hub()
	sniffer, a, b, c := lab.Host("sniffer"), lab.Host("a"), lab.Host("b"), lab.Host("c")
	sniffer.Attach(lan1)
	sniffer.Attach(lan2)
	al, bl := a.Attach(lan1), b.Attach(lan2)
	c.Attach(lan1)
	for i, h := range []*netlab.Host{a, b} {
		l, err := discoverytest.StartLookupService(discoverytest.LookupServiceConfig{Version: 2, ServiceID: discovery.ServiceID{byte(i + 1)},
			Groups: []string{"lab"}, Namespace: h.Namespace(), Announce: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	dir := t.TempDir()
	ng := filepath.Join(dir, "both.pcapng")
	out, err := sniffer.Command(t.Context(), bin, "inspect", "-q", "--iface", "eth0", "--iface", "eth1", "--write", ng, "--duration", "1500ms",
		"-T", "fields", "-e", "kind", "-e", "lookup").Output()
	if err != nil {
		t.Fatalf("two interfaces: %v", err)
	}
	for _, l := range []*netlab.Link{al, bl} {
		if !strings.Contains(string(out), "multicast-announcement\t"+l.IPv4.String()+":4160\n") {
			t.Errorf("no announcement of %s:\n%s", l.IPv4, out)
		}
	}
	raw, _ := os.ReadFile(ng)
	r, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := r.ReadPacketData(); err != nil {
			break
		}
	}
	if r.NInterfaces() != 2 {
		t.Fatalf("%d interface blocks", r.NInterfaces())
	}
	for i, want := range []string{"eth0", "eth1"} {
		if intf, _ := r.Interface(i); intf.Name != want || intf.LinkType != layers.LinkTypeEthernet {
			t.Errorf("interface %d: %+v", i, intf)
		}
	}
	back, err := exec.Command(bin, "inspect", "-q", "--pcap", ng, "-T", "fields", "-e", "lookup").Output()
	if err != nil || !strings.Contains(string(back), al.IPv4.String()) || !strings.Contains(string(back), bl.IPv4.String()) {
		t.Errorf("the pcapng decodes to %v:\n%s", err, back)
	}
	agreeWithTshark(t, bin, ng, false)

	// any, with a capture filter for the one LAN's lookup service.
	cooked := filepath.Join(dir, "any.pcap")
	out, err = sniffer.Command(t.Context(), bin, "inspect", "-q", "--iface", "any", "-f", "udp and host "+bl.IPv4.String(),
		"--write", cooked, "--duration", "1500ms", "-T", "fields", "-e", "lookup").Output()
	if err != nil || !strings.Contains(string(out), bl.IPv4.String()) || strings.Contains(string(out), al.IPv4.String()) {
		t.Fatalf("any: %v\n%s", err, out)
	}
	raw, _ = os.ReadFile(cooked)
	pr, err := pcapgo.NewReader(bytes.NewReader(raw))
	if err != nil || pr.LinkType() != layers.LinkTypeLinuxSLL {
		t.Fatalf("the capture of any: %v, link type %v", err, pr.LinkType())
	}
	back, err = exec.Command(bin, "inspect", "-q", "--pcap", cooked, "-T", "fields", "-e", "lookup").Output()
	if err != nil || !strings.Contains(string(back), bl.IPv4.String()) {
		t.Errorf("the cooked capture decodes to %v:\n%s", err, back)
	}
	agreeWithTshark(t, bin, cooked, false)

	// Promiscuous, on the hub: c's unicast discovery of a, neither of
	// them the sniffer.
	capture := sniffer.Command(t.Context(), bin, "inspect", "-q", "--iface", "eth0", "--duration", "4s", "-f", "tcp", "-T", "fields", "-e", "kind", "-e", "source")
	var got bytes.Buffer
	capture.Stdout = &got
	if err := capture.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the promiscuous mode: the capture is then open.
	testenv.Until(t, "eth0 promiscuous", func() bool {
		o, _ := sniffer.Command(t.Context(), "ip", "-d", "link", "show", "eth0").Output()
		return strings.Contains(string(o), "promiscuity 1")
	})
	if out, err := c.Command(t.Context(), bin, "discover", "--locator", "jini://"+al.IPv4.String(), "--no-multicast", "--timeout", "2s").CombinedOutput(); err != nil {
		t.Fatalf("discover: %v\n%s", err, out)
	}
	if err := capture.Wait(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "unicast-response\t"+al.IPv4.String()+":4160") {
		t.Errorf("the exchange between two other hosts was not captured:\n%s", &got)
	}
	o, _ := sniffer.Command(t.Context(), "ip", "-d", "link", "show", "eth0").Output()
	if !strings.Contains(string(o), "promiscuity 0") {
		t.Errorf("eth0 left promiscuous:\n%s", o)
	}
}

// agreeWithTshark: for every message jinid inspect decodes in the
// capture at path, tshark with jinid's Lua dissector shows the same kind,
// version, ServiceIDs, groups and host and port. A live capture may
// begin in the middle of a unicast exchange: tshark's dissector reads
// the half it captured, jinid's reassembly takes a TCP stream from its
// start only; such a half, the same as one jinid decodes, is left out.
func agreeWithTshark(t *testing.T, bin, path string, live bool) {
	t.Helper()
	args := []string{"inspect", "-q", "--pcap", path, "-T", "fields", "-Y", "!error && kind != jeri-call"}
	for _, f := range pcaptest.DissectorFields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	var ours []string
	for l := range strings.Lines(string(out)) {
		ours = append(ours, strings.TrimSuffix(l, "\n"))
	}
	slices.Sort(ours)
	theirs := pcaptest.TsharkFields(t, inspect.Dissector, path)
	if live {
		theirs = withoutLoneHalves(ours, theirs)
	}
	if len(ours) == 0 || !slices.Equal(ours, theirs) {
		t.Errorf("%s: jinid decodes\n%s\ntshark with the dissector shows\n%s", filepath.Base(path), strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}

// withoutLoneHalves is theirs (sorted) less the unicast requests and
// responses it has more of than ours: halves of an exchange the capture
// began in the middle of.
func withoutLoneHalves(ours, theirs []string) []string {
	left := map[string]int{}
	for _, l := range ours {
		left[l]++
	}
	var out []string
	for _, l := range theirs {
		half := strings.HasPrefix(l, "unicast-request\t") || strings.HasPrefix(l, "unicast-response\t")
		if left[l] == 0 && half && slices.Contains(ours, l) {
			continue
		}
		left[l]--
		out = append(out, l)
	}
	return out
}

// A host on the LAN floods port 4160 with 256 connections of 1 MiB each,
// all open at once: a live inspect keeps to its --max-memory (8 MB here)
// plus a stated margin of resident memory (the Go runtime, the binary's
// pages, the reassembler's fixed part: floodMargin), and its summary says
// what it did not keep. Before the budget it kept 1 MiB of each stream:
// 256 of them took it to 775 MB.
func TestInspectLiveFloodBounded(t *testing.T) {
	t.Parallel()
	const (
		streams     = 256
		perStream   = 1 << 20
		budgetMB    = 8
		floodMargin = 64 << 20
	)
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	sniffer, flooder := lab.Host("sniffer"), lab.Host("flooder")
	sl := sniffer.Attach(lan)
	flooder.Attach(lan)
	// The flood's target: a listener on the sniffer that reads and drops.
	var ln net.Listener
	if err := sniffer.Namespace().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(sl.IPv4.String(), "4160"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var received atomic.Int64
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				io.Copy(writerFunc(func(b []byte) (int, error) { received.Add(int64(len(b))); return len(b), nil }), c)
				c.Close()
			})
		}
	})
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	})

	capture := sniffer.Command(t.Context(), bin, "inspect", "--iface", "eth0", "--max-memory", strconv.Itoa(budgetMB), "-f", "tcp and port 4160", "-T", "fields", "-e", "kind")
	var stderr bytes.Buffer
	capture.Stderr, capture.Stdout = &stderr, io.Discard
	if err := capture.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { capture.Process.Kill(); capture.Wait() })
	defer func() {
		if t.Failed() {
			t.Logf("inspect said:\n%s", &stderr)
		}
	}()
	testenv.Until(t, "eth0 promiscuous (the capture open)", func() bool {
		o, _ := sniffer.Command(t.Context(), "ip", "-d", "link", "show", "eth0").Output()
		return strings.Contains(string(o), "promiscuity 1")
	})
	// The peak resident memory of the capture, as it goes.
	peak := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", capture.Process.Pid))
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				return kb << 10
			}
		}
		return 0
	}
	t.Logf("peak resident before the flood: %d MB", peak()>>20)
	dial := jinidtest.DialFrom(flooder)
	for range streams {
		c, err := dial(t.Context(), "tcp", net.JoinHostPort(sl.IPv4.String(), "4160"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < perStream; sent += len(chunk) {
		for _, c := range conns {
			if _, err := c.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.Until(t, "the flood received", func() bool { return received.Load() >= streams*perStream })
	// The streams stay open (none ended): what inspect keeps of them is
	// what the budget bounds. It reads the last frames a moment after.
	before := peak()
	testenv.Until(t, "the capture's peak memory settled", func() bool {
		time.Sleep(200 * time.Millisecond) // time is the subject: frames still in the capture's ring
		p := peak()
		settled := p == before
		before = p
		return settled
	})
	hwm := peak()
	capture.Process.Signal(os.Interrupt)
	capture.Wait()
	t.Logf("peak resident %d MB for %d streams of %d KB; inspect said:\n%s", hwm>>20, streams, perStream>>10, &stderr)
	if hwm == 0 || hwm > budgetMB<<20+floodMargin {
		t.Errorf("peak resident memory %d bytes, past --max-memory %d MB plus %d MB", hwm, budgetMB, floodMargin>>20)
	}
	if !strings.Contains(stderr.String(), "TCP exchanges decoded before their end to stay within --max-memory 8") {
		t.Errorf("the summary does not say what was not kept:\n%s", &stderr)
	}
}

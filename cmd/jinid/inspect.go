//go:build !jinid_omit_tools

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/inspect"
	"github.com/jinid/jinid/internal/printable"
)

func newInspectCmd() *spec {
	var (
		pcap, write        string
		ifaces             []string
		noPromisc          bool
		ringFiles          int
		ringSize           float64
		maxMemory          int
		output             outputFlags
		duration           time.Duration
		timeFormat, tmode  string
		fields             []string
		display, capFilter string
		stats              []string
		install            bool
		pluginDir          string
	)
	cmd := &spec{
		use:   "inspect (--pcap FILE | --iface NAME ... | --iface any) [-f CAPTURE-FILTER] [-Y FILTER] [-T fields -e FIELD ...] [--write FILE]",
		short: "Decode Jini discovery traffic from a capture file or a live interface",
		long: `Decode every Jini discovery message in a pcap or pcapng capture, or live
on an interface: multicast requests and announcements (UDP port 4160,
protocol versions 1 and 2), unicast discovery exchanges (TCP, reassembled
per connection: port 4160, and the reply ports that multicast requests
name) and the Jini ERI calls Java clients make to the registrars the
responses name.

One line per message, in the order of the packets they begin in: the
frame number (a file's own, whatever -f passes, as tshark's), the time
since the file's first packet (-t ad: the date and time),
transport, source > destination, kind, protocol version and the decoded
fields. A TCP exchange is decoded when it ends and printed at its first
packet's place: a line waits until every exchange that began before it
has ended (at most 65,536 lines wait; a live capture reports an exchange
idle for a minute). A message that does not decode is one line with the
error, and the dump carries on. The standard error says what is read
first, and at the end what was seen: packets, messages decoded by kind
and version, malformed ones by reason, TCP exchanges left incomplete
(-q leaves both out).

-f captures only the packets a filter in the pcap-filter syntax of
tcpdump selects ('host 10.0.0.5 and udp'), compiled to BPF by jinid
itself and run in the kernel (on a capture file, as each packet is
read). jinid compiles a subset: host ADDR, net ADDR/BITS and port N (each
with src or dst before it, if wanted), ip, ip6, udp, tcp, and (&&), or
(||), not (!) and parentheses; addresses are literals (no names), and
ip6 next headers are not followed. Anything else is an error naming it.

-Y selects the lines by their decoded fields, in a language shaped like
Wireshark's: comparisons field == value, field != value, field contains
value, or a field alone (true when the message has it), combined with &&
(and), || (or), ! (not) and parentheses; values are quoted strings or
bare words, numbers compare as numbers, and a field of several values
(group) matches == when any of them does. -T fields prints the -e fields
of each line, tab-separated (several values joined by ","), for scripts.
The fields:
` + inspectFieldHelp() + `
-z prints statistics at the end (with -q, alone): -z lookup, per lookup
service (announcements, the interval observed between them, versions,
groups, unicast responses); -z requester, per requesting host (multicast
and unicast requests, responses received, versions, groups asked); -z
jeri, per Jini ERI method (calls, exceptions, unanswered, median and
longest latency).

--install-dissector writes jinid's Wireshark dissector (Lua) into
Wireshark's personal plugin folder (~/.local/lib/wireshark/plugins):
Wireshark and tshark then decode the Jini discovery protocols too
(display filter jini; fields jini.kind, jini.version, jini.serviceid,
jini.group, jini.host, jini.port, ...), the same as jinid does. For
captures with segments out of order, set Wireshark's TCP preference
"Reassemble out-of-order segments".

Live capture (--iface) uses Linux packet sockets: it needs root (or
CAP_NET_RAW) but no libpcap. --iface may be given several times, the
frames of all merged in the order they are read; --iface any captures on
every interface in Linux cooked form (link type LINUX_SLL). Named
interfaces are put in promiscuous mode while the capture runs (frames
between other hosts, on a mirror port); --no-promisc leaves them as they
are. Link-local IPv6 addresses are shown with their interface
(fe80::1%eth0). It runs until Ctrl-C or --duration. --write saves the
frames it captures: as pcap, or as pcapng when the name ends in .pcapng
(one interface block each, named: what several interfaces need).
--ring-files N with --ring-size MB writes files of that size, numbered
(jini_00001.pcapng), keeping the last N: a long capture on a small flash.
If the capture falls behind a burst and the kernel drops frames, it says
how many when it ends.

--max-memory MB bounds what the TCP exchanges not yet ended keep (32 MB
by default; each direction of a connection keeps 1 MiB at most): past
it, the oldest are decoded as they stand, and what still does not fit is
not kept; the summary says how many exchanges and bytes that was. A host
flooding port 4160 with connections costs inspect that much, and about
50 MB besides (its tables, the frames waiting, the runtime), not more.
Usage errors exit with status 2.`,
		example: `  jinid inspect --pcap jini.pcap
  jinid inspect --pcap jini.pcap -Y 'kind == multicast-announcement && version == 2'
  jinid inspect --pcap jini.pcap -T fields -e frame -e kind -e serviceID -e lookup
  jinid inspect --pcap jini.pcap -f 'udp and not host 10.0.0.7'
  jinid inspect --pcap jini.pcap -q -z lookup -z requester -z jeri
  jinid inspect --install-dissector
  jinid inspect --pcap jini.pcap --json | jq 'select(.kind == "multicast-announcement")'
  tcpdump -U -i eth0 -w - 'port 4160 or tcp' | jinid inspect --pcap -   # tcp too: connect-backs to requesters' ports, Jini ERI calls
  jinid inspect --iface eth0 --write jini.pcap --duration 1m
  jinid inspect --iface eth0 --iface lo --write both.pcapng --duration 10s
  jinid inspect --iface any -f 'port 4160' --duration 10s
  jinid inspect --iface eth0 --write ring.pcapng --ring-files 5 --ring-size 1 --duration 10s`,
		run: func(inv *invocation, _ []string) error {
			if install || pluginDir != "" {
				if !install {
					return usagef("--plugin-dir says where --install-dissector writes: give --install-dissector")
				}
				path, err := inspect.InstallDissector(pluginDir)
				if err != nil {
					return err
				}
				return done(inv, "installed %s: Wireshark and tshark show Jini discovery (filter: jini) once restarted", path)
			}
			live := len(ifaces) > 0
			switch {
			case pcap == "" && !live:
				return usagef("give --pcap FILE (use - for standard input) or --iface NAME")
			case pcap != "" && live:
				return usagef("--pcap and --iface cannot be combined")
			case write != "" && !live:
				return usagef("--write saves a live capture: it needs --iface")
			case slices.Contains(ifaces, "any") && len(ifaces) > 1:
				return usagef("--iface any captures on every interface: give it alone")
			case (ringFiles > 0) != (ringSize > 0):
				return usagef("--ring-files and --ring-size go together: N files of so many MB")
			case ringFiles < 0 || ringSize < 0:
				return usagef("--ring-files and --ring-size must be positive")
			case ringFiles > 0 && write == "":
				return usagef("--ring-files rotates the files --write names: give --write")
			case noPromisc && !live:
				return usagef("--no-promisc applies to a live capture (--iface)")
			case duration < 0:
				return usagef("--duration %s: must not be negative", duration)
			case maxMemory < 1 || maxMemory > 1<<16:
				return usagef("--max-memory %d: want 1 to 65536 (MB)", maxMemory)
			case duration != 0 && pcap != "":
				return usagef("--duration applies to a live capture (--iface); a capture file is read to its end")
			}
			tf := inspect.TimeRelative
			switch timeFormat {
			case "r":
			case "ad":
				tf = inspect.TimeAbsolute
			default:
				return usagef("-t %q: want r (seconds since the first packet) or ad (date and time)", timeFormat)
			}
			if capFilter != "" {
				if _, err := inspect.CompileCaptureFilter(capFilter, inspect.LinkEthernet); err != nil {
					return usagef("-f: %w", err)
				}
			}
			var tally *inspect.Tally
			if len(stats) > 0 {
				var err error
				if tally, err = inspect.NewTally(stats); err != nil {
					return usageError{err: err}
				}
			}
			var filter *inspect.Filter
			if display != "" {
				var err error
				if filter, err = inspect.ParseFilter(display); err != nil {
					return usagef("-Y: %w", err)
				}
			}
			format, err := output.chosen()
			if err != nil {
				return err
			}
			switch {
			case tmode == "fields" && len(fields) == 0:
				return usagef("-T fields prints the fields -e names: give at least one -e")
			case tmode == "fields" && inv.flags.Changed("output"):
				return usagef("-T fields and -o are two output formats: give one")
			case tmode != "" && tmode != "fields":
				return usagef("-T %q: the one form is -T fields (with -e); -o chooses the others", tmode)
			case len(fields) > 0 && tmode != "fields":
				return usagef("-e names the fields of -T fields: give -T fields")
			}
			for _, f := range fields {
				if !inspect.IsField(f) {
					return usagef("-e %q: not a field (fields: %s)", f, strings.Join(inspect.FieldNames, ", "))
				}
			}
			out := bufio.NewWriter(inv.stdout)
			write1 := func(w io.Writer, r inspect.Record) error { return inspect.WriteText(w, r, tf) }
			switch {
			case tmode == "fields":
				write1 = func(w io.Writer, r inspect.Record) error { return writeFields(w, r, fields) }
			case format == formatJSON:
				write1 = inspect.WriteJSON
			case format == formatYAML:
				p := &printer{w: out, format: formatYAML}
				write1 = func(w io.Writer, r inspect.Record) error {
					var b bytes.Buffer
					if err := inspect.WriteJSON(&b, r); err != nil {
						return err
					}
					return p.raw(b.Bytes())
				}
			case format == formatParsable:
				p := &printer{w: out, format: formatParsable}
				write1 = func(_ io.Writer, r inspect.Record) error { return p.item(inspectRecord(r)) }
			}
			var werr error
			quiet, _ := inv.flags.GetBool("quiet")
			lines := tally == nil || !quiet // -q -z: the statistics alone, as tshark -q -z
			d := inspect.NewDecoder(func(r inspect.Record) {
				if !filter.Match(r) {
					return
				}
				if tally != nil {
					tally.Add(r)
				}
				if werr == nil && lines {
					werr = write1(out, r)
					if werr == nil && live {
						werr = out.Flush() // live: show each line as it comes
					}
				}
			})
			d.SetMemory(maxMemory << 20)
			if os.Getenv("GOMEMLIMIT") == "" {
				// The collector works harder before the process passes
				// the budget plus what inspect needs besides (its
				// tables, the frames waiting, the runtime): a flood's
				// garbage is not left to double the heap.
				debug.SetMemoryLimit(int64(maxMemory)<<20 + inspectOverhead)
			}
			if pcap != "" {
				d.SetCaptureFilter(capFilter)
			}
			if pcap != "" {
				if !quiet {
					fmt.Fprintf(inv.stderr, "Reading %s\n", map[bool]string{true: "standard input", false: pcap}[pcap == "-"])
				}
				err = readPcap(inv.stdin, pcap, d)
			} else {
				if !quiet {
					fmt.Fprintf(inv.stderr, "Capturing on '%s'\n", strings.Join(ifaces, "', '"))
				}
				err = capture(inv.ctx, inv.stderr, inspect.LiveConfig{Interfaces: ifaces, Promisc: !noPromisc, Filter: capFilter},
					inspect.WriterConfig{Path: write, Interfaces: ifaces, RingFiles: ringFiles, RingBytes: int64(ringSize * (1 << 20))}, duration, d)
			}
			if tally != nil && werr == nil {
				werr = tally.Write(out)
			}
			if ferr := out.Flush(); werr == nil {
				werr = ferr
			}
			if !quiet && (err == nil || d.Stats().Packets > 0) {
				writeSummary(inv.stderr, d.Stats(), maxMemory)
			}
			if err != nil {
				return err
			}
			if werr != nil {
				return fmt.Errorf("writing output: %w", werr)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&pcap, "pcap", "", "capture file to read (pcap or pcapng; - for standard input)")
	f.StringArrayVar(&ifaces, "iface", nil, "capture live on this interface (repeatable; any: on every interface)")
	f.BoolVar(&noPromisc, "no-promisc", false, "with --iface: leave the interfaces out of promiscuous mode")
	f.StringVar(&write, "write", "", "with --iface: also save the captured frames to this file (pcap, or pcapng when it ends in .pcapng)")
	f.IntVar(&maxMemory, "max-memory", inspect.DefaultMemory>>20, "the memory (MB) the TCP exchanges not yet ended may keep; past it the oldest are decoded as they stand")
	f.IntVar(&ringFiles, "ring-files", 0, "with --write: keep this many files of --ring-size each, the oldest removed")
	f.Float64Var(&ringSize, "ring-size", 0, "with --ring-files: the size of each file, in MB")
	f.DurationVar(&duration, "duration", 0, "with --iface: stop after this long (default: until interrupted)")
	f.StringVarP(&timeFormat, "time-format", "t", "r", "time shown: r (seconds since the first packet) or ad (date and time, UTC)")
	f.StringVarP(&display, "display-filter", "Y", "", "print only the messages this filter selects (see above)")
	f.StringVarP(&capFilter, "capture-filter", "f", "", "capture only the packets this pcap-filter expression selects, in the kernel (see above; on a capture file, as it is read)")
	f.StringVarP(&tmode, "fields-output", "T", "", "fields: print the -e fields of each message, tab-separated")
	f.StringArrayVarP(&fields, "field", "e", nil, "a field -T fields prints (repeatable; see above)")
	f.StringArrayVarP(&stats, "statistics", "z", nil, "print statistics at the end: lookup, requester or jeri (repeatable; see above)")
	f.BoolVar(&install, "install-dissector", false, "write jinid's Wireshark dissector of Jini discovery (Lua) to Wireshark's personal plugin folder, and do nothing else")
	f.StringVar(&pluginDir, "plugin-dir", "", "with --install-dissector: the folder to write it to (default ~/"+inspect.DissectorDir+")")
	output.add(cmd)
	return cmd
}

// inspectFieldHelp lists the fields for --help.
func inspectFieldHelp() string {
	var b strings.Builder
	for _, f := range inspect.FieldNames {
		fmt.Fprintf(&b, "  %-12s %s\n", f, inspect.FieldDoc(f))
	}
	return b.String()
}

// writeFields prints one message's fields, tab-separated.
func writeFields(w io.Writer, r inspect.Record, fields []string) error {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\t')
		}
		// A packet's strings are shown, never sent: a newline in a
		// group would forge a line of output meant for scripts.
		b.WriteString(printable.String(strings.Join(inspect.Values(r, f), ",")))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSummary says what a capture held, on the standard error.
func writeSummary(w io.Writer, st inspect.Stats, maxMemory int) {
	decoded, malformed := 0, 0
	for _, n := range st.Decoded {
		decoded += n
	}
	for _, n := range st.Malformed {
		malformed += n
	}
	fmt.Fprintf(w, "%d packets: %d discovery messages decoded, %d malformed, %d TCP exchanges incomplete\n",
		st.Packets, decoded, malformed, st.Incomplete)
	if st.Early > 0 || st.Dropped > 0 {
		fmt.Fprintf(w, "  %d TCP exchanges decoded before their end to stay within --max-memory %d; %d bytes not kept (past it, or past a direction's 1 MiB)\n",
			st.Early, maxMemory, st.Dropped)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(st.Decoded)) {
		fmt.Fprintf(tw, "  %s\t%d\n", k, st.Decoded[k])
	}
	for _, k := range slices.Sorted(maps.Keys(st.Malformed)) {
		fmt.Fprintf(tw, "  malformed: %s\t%d\n", k, st.Malformed[k])
	}
	tw.Flush()
}

// inspectOverhead is what inspect needs beside its --max-memory: the
// reassembler's pages, the segment times, the frames waiting to be
// decoded, the runtime.
const inspectOverhead = 32 << 20

func readPcap(stdin io.Reader, path string, d *inspect.Decoder) error {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("opening capture: %w", err)
		}
		defer f.Close()
		in = f
	}
	err := inspect.ReadCapture(in, d)
	if path == "-" && errors.Is(err, inspect.ErrEmpty) {
		// A pipe whose capture stopped before it began (tcpdump
		// interrupted): nothing to decode, nothing wrong.
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func capture(ctx context.Context, stderr io.Writer, cfg inspect.LiveConfig, wcfg inspect.WriterConfig, duration time.Duration, d *inspect.Decoder) error {
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	cfg.Dropped = func(n uint32) {
		fmt.Fprintf(stderr, "jinid inspect: the capture fell behind and the kernel dropped %d frames: what they carried is missing above\n", n)
	}
	if wcfg.Path != "" {
		w, err := inspect.NewCaptureWriter(wcfg)
		if err != nil {
			return usagef("--write: %w", err)
		}
		defer w.Close()
		cfg.Write = w
	}
	err := inspect.Live(ctx, cfg, d)
	if errors.Is(err, inspect.ErrNoInterface) {
		return usagef("--iface: %w", err) // a name mistyped
	}
	return err
}

// inspectRecord is a decoded message as -o parsable prints it: frame,
// time, relative time,
// transport, source, destination, kind, protocol version, length, the
// decoded fields (as JSON), the error.
func inspectRecord(r inspect.Record) record {
	var fields any
	if r.Fields != nil {
		fields = r.Fields
	}
	return record{{"frame", r.Frame}, {"time", r.Time.UTC().Format(time.RFC3339Nano)}, {"relative", strconv.FormatFloat(r.Relative, 'f', 6, 64)}, {"transport", r.Transport}, {"source", r.Source},
		{"destination", r.Destination}, {"kind", r.Kind}, {"protocolVersion", r.Version}, {"length", r.Length},
		{"fields", fields}, {"error", r.Error}}
}

//go:build !jinid_omit_tools

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/jinid/jinid/cmd/jinid/internal/inspect"
)

func newInspectCmd() *spec {
	var (
		pcap, iface, write string
		output             outputFlags
		duration           time.Duration
	)
	cmd := &spec{
		use:   "inspect (--pcap FILE | --iface NAME) [--json] [--write FILE]",
		short: "Decode Jini discovery traffic from a capture file or a live interface",
		long: `Decode every Jini discovery message in a pcap or pcapng capture, or live
on an interface: multicast requests and announcements (UDP port 4160,
protocol versions 1 and 2) and unicast discovery exchanges (TCP,
reassembled per connection: port 4160, and the reply ports that multicast
requests name).

One line per message: time, transport, source > destination, kind, protocol
version and the decoded fields. A message that does not decode is one line
with the error, and the dump carries on. TCP exchanges are printed when they
end.

Live capture (--iface) uses a Linux packet socket: it needs root (or
CAP_NET_RAW) but no libpcap. It runs until Ctrl-C or --duration, and
--write saves the frames it sees (TCP and UDP) as a pcap file. If the
capture falls behind a burst and the kernel drops frames, it says how
many when it ends.`,
		example: `  jinid inspect --pcap jini.pcap
  jinid inspect --pcap jini.pcap --json | jq 'select(.kind == "multicast-announcement")'
  tcpdump -U -i eth0 -w - port 4160 | jinid inspect --pcap -
  jinid inspect --iface eth0 --write jini.pcap --duration 1m`,
		run: func(inv *invocation, _ []string) error {
			switch {
			case pcap == "" && iface == "":
				return usagef("give --pcap FILE (use - for standard input) or --iface NAME")
			case pcap != "" && iface != "":
				return usagef("--pcap and --iface cannot be combined")
			case write != "" && iface == "":
				return usagef("--write saves a live capture: it needs --iface")
			case duration < 0:
				return usagef("--duration %s: must not be negative", duration)
			}
			format, err := output.chosen()
			if err != nil {
				return err
			}
			out := bufio.NewWriter(inv.stdout)
			write1 := inspect.WriteText
			switch format {
			case formatJSON:
				write1 = inspect.WriteJSON
			case formatYAML:
				p := &printer{w: out, format: formatYAML}
				write1 = func(w io.Writer, r inspect.Record) error {
					var b bytes.Buffer
					if err := inspect.WriteJSON(&b, r); err != nil {
						return err
					}
					return p.raw(b.Bytes())
				}
			case formatParsable:
				p := &printer{w: out, format: formatParsable}
				write1 = func(_ io.Writer, r inspect.Record) error { return p.item(inspectRecord(r)) }
			}
			var werr error
			emit := func(r inspect.Record) {
				if werr == nil {
					werr = write1(out, r)
					if werr == nil && iface != "" {
						werr = out.Flush() // live: show each line as it comes
					}
				}
			}
			if pcap != "" {
				err = readPcap(inv.stdin, pcap, emit)
			} else {
				err = capture(inv.ctx, inv.stderr, iface, write, duration, emit)
			}
			if ferr := out.Flush(); werr == nil {
				werr = ferr
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
	f.StringVar(&iface, "iface", "", "capture live on this interface")
	f.StringVar(&write, "write", "", "with --iface: also save the captured frames to this pcap file")
	f.DurationVar(&duration, "duration", 0, "with --iface: stop after this long (default: until interrupted)")
	output.add(cmd)
	return cmd
}

func readPcap(stdin io.Reader, path string, emit func(inspect.Record)) error {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("opening capture: %w", err)
		}
		defer f.Close()
		in = f
	}
	err := inspect.ReadCapture(in, emit)
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

func capture(ctx context.Context, stderr io.Writer, iface, write string, duration time.Duration, emit func(inspect.Record)) error {
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	cfg := inspect.LiveConfig{Interface: iface, Dropped: func(n uint32) {
		fmt.Fprintf(stderr, "jinid inspect: the capture fell behind and the kernel dropped %d frames: what they carried is missing above\n", n)
	}}
	if write != "" {
		f, err := os.Create(write)
		if err != nil {
			return fmt.Errorf("creating %s: %w", write, err)
		}
		bw := bufio.NewWriter(f)
		w := pcapgo.NewWriter(bw)
		if err := w.WriteFileHeader(inspect.Snaplen, layers.LinkTypeEthernet); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", write, err)
		}
		defer func() {
			bw.Flush()
			f.Close()
		}()
		cfg.Write = w
	}
	err := inspect.Live(ctx, cfg, emit)
	if errors.Is(err, inspect.ErrNoInterface) {
		return usagef("--iface: %w", err) // a name mistyped, or "any"
	}
	return err
}

// inspectRecord is a decoded message as -o parsable prints it: time,
// transport, source, destination, kind, protocol version, length, the
// decoded fields (as JSON), the error.
func inspectRecord(r inspect.Record) record {
	var fields any
	if r.Fields != nil {
		fields = r.Fields
	}
	return record{{"time", r.Time.UTC().Format(time.RFC3339Nano)}, {"transport", r.Transport}, {"source", r.Source},
		{"destination", r.Destination}, {"kind", r.Kind}, {"protocolVersion", r.Version}, {"length", r.Length},
		{"fields", fields}, {"error", r.Error}}
}

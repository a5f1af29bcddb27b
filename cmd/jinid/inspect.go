package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/jinid/jinid/internal/inspect"
)

func newInspectCmd() *cobra.Command {
	var pcap string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect --pcap FILE [--json]",
		Short: "Decode the Jini discovery traffic of a packet capture",
		Long: `Decode every Jini discovery message in a pcap or pcapng capture:
multicast requests and announcements (UDP port 4160, protocol versions 1
and 2) and unicast discovery exchanges (TCP, reassembled per connection:
port 4160, and the reply ports that multicast requests name).

One line per message: time, transport, source > destination, kind, protocol
version and the decoded fields. A message that does not decode is one line
with the error, and the dump carries on. TCP exchanges are printed when they
end.

Make a capture jinid can read with, for example:
  tcpdump -i eth0 -w jini.pcap 'port 4160'`,
		Example: `  jinid inspect --pcap jini.pcap
  jinid inspect --pcap jini.pcapng --json | jq 'select(.kind == "multicast-announcement")'
  tcpdump -i eth0 -w - port 4160 | jinid inspect --pcap -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pcap == "" {
				return errors.New("--pcap FILE is required (use - for standard input)")
			}
			in := io.Reader(cmd.InOrStdin())
			if pcap != "-" {
				f, err := os.Open(pcap)
				if err != nil {
					return fmt.Errorf("opening capture: %w", err)
				}
				defer f.Close()
				in = f
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			write := inspect.WriteText
			if asJSON {
				write = inspect.WriteJSON
			}
			var werr error
			err := inspect.ReadCapture(in, func(r inspect.Record) {
				if werr == nil {
					werr = write(out, r)
				}
			})
			if ferr := out.Flush(); werr == nil {
				werr = ferr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", pcap, err)
			}
			if werr != nil {
				return fmt.Errorf("writing output: %w", werr)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pcap, "pcap", "", "capture file to read (pcap or pcapng; - for standard input)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line instead of text")
	return cmd
}

//go:build !jinid_omit_daemon

package main

import (
	"fmt"
)

func snapshotSpec() *spec {
	var api apiFlags
	s := &spec{
		use:   "snapshot",
		short: "Have the daemon write a snapshot of its store now (with --snapshot-dir)",
		long: `A daemon started with --snapshot-dir keeps its live store in --data-dir
(on OpenWrt, a tmpfs that a reboot empties) and writes snapshots of it to
the snapshot directory: every --snapshot-interval, at a clean stop, and
when asked with this command, before a planned reboot or a firmware
upgrade, say. At start, a missing live store is restored from the
snapshot. This needs an administrator (the local socket, or an admin
token).`,
		example: `  jinid snapshot
  jinid snapshot --server http://gw:4162 --token-file admin.token`,
		run: func(inv *invocation, args []string) error {
			c, err := api.connect()
			if err != nil {
				return err
			}
			s, err := c.Snapshot(inv.ctx)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(inv.stdout, "snapshot written: %s (%d bytes)\n", s.File, s.Bytes)
			return err
		},
	}
	api.bind(s.Flags())
	return s
}

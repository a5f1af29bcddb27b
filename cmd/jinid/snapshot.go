//go:build !jinid_omit_daemon

package main

func snapshotSpec() *spec {
	var api apiFlags
	var out outputFlags
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
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			c, err := api.connect()
			if err != nil {
				return err
			}
			s, err := c.Snapshot(inv.ctx)
			if err != nil {
				return err
			}
			if p.format == formatTable {
				return done(inv, "snapshot written: %s (%d bytes)", s.File, s.Bytes)
			}
			return p.one(record{{"file", s.File}, {"bytes", s.Bytes}})
		},
	}
	api.bind(s.Flags())
	out.add(s)
	return s
}

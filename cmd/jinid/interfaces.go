//go:build !jinid_omit_daemon

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/netmon"
)

// writeInterfaces prints, once, what a daemon configured as cfg makes of
// every interface of the host: served for multicast discovery (and in
// which families) or not, and why, as its start-up log would say.
func writeInterfaces(w io.Writer, cfg app.Config) error {
	mon, err := netmon.NewNetlink(cfg.Namespace, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		return err
	}
	defer mon.Shutdown(context.Background())
	st, err := mon.Snapshot()
	if err != nil {
		return err
	}
	ds, err := mcast.Decide(st, mcast.HostConfig{Include: cfg.Include, Exclude: cfg.Exclude, ExcludeDefaultRoute: cfg.ExcludeDefaultRoute})
	if err != nil {
		return err
	}
	writeDecisions(w, ds, cfg.NoMulticast)
	return nil
}

func writeDecisions(w io.Writer, ds []mcast.Decision, multicastOff bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INTERFACE\tINDEX\tADDRESSES\tDISCOVERY")
	for _, d := range ds {
		ifc := d.Interface
		var addrs []string
		for _, p := range ifc.Addrs {
			addrs = append(addrs, p.String())
		}
		where := strings.Join(addrs, ",")
		if where == "" {
			where = "-"
		}
		if ifc.DefaultRoute {
			where += " (default route)"
		}
		why := d.Reason
		if multicastOff && len(d.Families) > 0 {
			why = "would be " + why + ", but multicast is off (--no-multicast)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ifc.Name, strconv.Itoa(ifc.Index), where, why)
	}
	tw.Flush()
}

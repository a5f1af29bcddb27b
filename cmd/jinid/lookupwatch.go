//go:build !jinid_omit_tools

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// watchLease is how long the watch's registrations are leased; it renews
// them at half that, and cancels them when it ends. A watch that dies
// without cancelling leaves nothing behind for longer.
const watchLease = 2 * time.Minute

func lookupWatchCmd(connect connector) *spec {
	var tf templateFlags
	cmd := withOutput(&spec{
		use:   "watch [--type T] [--attr A ...]",
		short: "List the services a template matches, then print each that comes (+), goes (-) or changes (=) until Ctrl-C",
		long: `List the registered services that match a template (all of them
without --type or --attr), one "+" line each, then follow them: a line
for each service that comes (+), goes (-) or changes (=), as it happens,
until interrupted. The events come through an event mailbox of the same
jinid (so the watch needs no address the daemon can reach); its
registrations are leased for 2 minutes, renewed while the watch runs and
cancelled when it ends.`,
		example: `  jinid lookup watch --type com.example.Printer &
  jinid lookup register --type com.example.Printer --duration 1m`,
	}, func(inv *invocation, p *printer, _ []string) error {
		t, err := tf.template()
		if err != nil {
			return err
		}
		c, err := connect()
		if err != nil {
			return err
		}
		return watchLookup(inv.ctx, c, t, p, inv.stderr)
	})
	tf.add(cmd)
	return cmd
}

// watchLookup lists what t matches, then prints its changes until ctx
// ends, through a pull mailbox of the same jinid.
func watchLookup(ctx context.Context, c *client.Client, t apitypes.Template, p *printer, stderr io.Writer) error {
	box, err := c.MailboxRegister(ctx, watchLease.Milliseconds(), true)
	if err != nil {
		return err
	}
	leases := []string{box.Lease.ID}
	// Whatever happens, the registrations go with the watch.
	defer func() {
		end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		c.CancelAll(end, leases)
	}()
	n, err := c.Notify(ctx, client.NotifyRequest{Template: t, Listener: box.Listener.URL, Duration: watchLease.Milliseconds(),
		Transitions: []string{apitypes.NoMatchMatch, apitypes.MatchNoMatch, apitypes.MatchMatch}})
	if err != nil {
		return err
	}
	leases = append(leases, n.Lease.ID)
	// What is there now; what changes after the notify registration
	// comes as its events (one registered in between is in both: a "+"
	// twice says nothing wrong).
	now, err := c.QueryItems(ctx, t, 1000)
	if err != nil {
		return err
	}
	for _, it := range now.Items {
		if err := printChange(p, "+", it.ServiceID, &it); err != nil {
			return err
		}
	}
	it, err := c.MailboxIterator(ctx, box.ID)
	if err != nil {
		return err
	}
	renewAt := time.Now().Add(watchLease / 2)
	for {
		if time.Now().After(renewAt) {
			res, err := c.RenewAll(ctx, []client.Renewal{{ID: leases[0], Duration: watchLease.Milliseconds()}, {ID: leases[1], Duration: watchLease.Milliseconds()}})
			if err == nil {
				for _, r := range res {
					if r.Error != nil {
						err = fmt.Errorf("renewing the watch's registrations: %w", r.Error)
					}
				}
			}
			if err != nil && ctx.Err() == nil {
				return err
			}
			renewAt = time.Now().Add(watchLease / 2)
		}
		ev, err := c.MailboxNext(ctx, box.ID, it, 20_000)
		if ctx.Err() != nil {
			return nil // Ctrl-C: the watch ends, cleanly
		}
		if err != nil {
			return err
		}
		if ev == nil {
			continue
		}
		var se apitypes.ServiceEvent
		if json.Unmarshal(ev, &se) != nil {
			continue
		}
		change := map[string]string{apitypes.NoMatchMatch: "+", apitypes.MatchNoMatch: "-", apitypes.MatchMatch: "="}[se.Transition]
		if err := printChange(p, change, se.ServiceID, se.Item); err != nil {
			return err
		}
	}
}

// printChange prints one line of a watch: the change, the service, and
// (but for one that went) its types, endpoint and attributes.
func printChange(p *printer, change, serviceID string, it *apitypes.Item) error {
	var item apitypes.Item
	if it != nil {
		item = *it
	}
	r := record{{"change", change}, {"serviceID", serviceID}, {"types", item.Types}, {"endpoint", item.Endpoint},
		{"attributes", attrList(item.Attributes)}}
	if p.format != formatTable {
		return p.item(r)
	}
	parts := []string{change, serviceID}
	if it != nil {
		parts = append(parts, text(item.Types), text(item.Endpoint), attrList(item.Attributes).String())
	}
	_, err := fmt.Fprintln(p.w, strings.Join(parts, "  "))
	return err
}

//go:build !jinid_omit_tools

package main

import (
	"errors"
	"fmt"
	"time"
)

func newMailboxCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "mailbox",
		short: "Have jinid keep events for you while you are away (the event mailbox)",
		long: `Client commands for the event mailbox of a running jinid (--server). A
registration has a mailbox listener URL: give it to any event generator
(jinid lookup notify, jinid lds register, ... --listener URL) and jinid
stores the events, on disk, until you take them: pushed to a target
(enable), or pulled (pull). A listener of this jinid's own mailbox is
delivered inside it, whoever names it.`,
		example: `  jinid mailbox register --pull -o json > mailbox.json
  jinid lookup notify --type com.example.Printer --listener "$(jq -r .listener mailbox.json)"
  jinid lookup register --type com.example.Printer
  jinid mailbox pull "$(jq -r .registration mailbox.json)" --wait 10s --max 1`,
	}
	api.add(cmd)
	connect := api.connect
	cmd.AddCommand(mailboxRegisterCmd(connect), mailboxListenerCmd(connect), mailboxEnableCmd(connect), mailboxDisableCmd(connect), mailboxPullCmd(connect))
	return cmd
}

func mailboxRegisterCmd(connect connector) *spec {
	var (
		dur  string
		pull bool
	)
	register := withOutput(&spec{
		use:   "register [--pull] [--duration 1h]",
		short: "Register; prints the registration, its lease and its mailbox listener",
	}, func(inv *invocation, p *printer, _ []string) error {
		d, err := leaseFlag(dur)
		if err != nil {
			return err
		}
		c, err := connect()
		if err != nil {
			return err
		}
		r, err := c.MailboxRegister(inv.ctx, d, pull)
		if err != nil {
			return err
		}
		noteCut(inv.stderr, d, r.Lease)
		return p.one(record{{"registration", r.ID}, {"listener", r.Listener.URL}, {"lease", r.Lease.ID}, {"expires", expiry(r.Lease.Expiration)}})
	})
	register.Flags().StringVar(&dur, "duration", "1h", "lease duration: a duration, any or forever")
	register.Flags().BoolVar(&pull, "pull", false, "a pull registration: events can be pulled with jinid mailbox pull")
	return register
}

func mailboxListenerCmd(connect connector) *spec {
	listener := withOutput(&spec{
		use:   "listener REGISTRATION",
		short: "Print the registration's mailbox listener URL (give it to event generators)",
		args:  exactArgs(1),
	}, func(inv *invocation, p *printer, args []string) error {
		c, err := connect()
		if err != nil {
			return err
		}
		info, err := c.MailboxGet(inv.ctx, args[0])
		if err != nil {
			return err
		}
		l, _ := info["listener"].(map[string]any)
		url, _ := l["url"].(string)
		if p.format == formatTable {
			_, err := fmt.Fprintln(inv.stdout, url) // the URL alone, for $(...)
			return err
		}
		return p.one(record{{"registration", args[0]}, {"listener", url}})
	})
	return listener
}

func mailboxEnableCmd(connect connector) *spec {
	enable := &spec{
		use:   "enable REGISTRATION TARGET-URL",
		short: "Push stored and new events to a target listener, in the order they came",
		args:  exactArgs(2),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			if err := c.MailboxEnable(inv.ctx, args[0], args[1]); err != nil {
				return err
			}
			return done(inv, "mailbox %s pushes its events to %s", args[0], args[1])
		},
	}
	return enable
}

func mailboxDisableCmd(connect connector) *spec {
	disable := &spec{
		use:   "disable REGISTRATION",
		short: "Stop pushing; events are kept",
		args:  exactArgs(1),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			if err := c.MailboxDisable(inv.ctx, args[0]); err != nil {
				return err
			}
			return done(inv, "mailbox %s keeps its events (push stopped)", args[0])
		},
	}
	return disable
}

func mailboxPullCmd(connect connector) *spec {
	var (
		wait time.Duration
		max  int
	)
	pullCmd := withOutput(&spec{
		use:   "pull REGISTRATION [--wait 10s] [--max N]",
		short: "Take the stored events (one JSON object per line); waits up to --wait for more",
		long: `Open an iterator (which disables push delivery), print every stored event,
then wait up to --wait for more; stop after --max events if given. Events
printed are acknowledged and deleted from the mailbox.`,
		args: exactArgs(1),
	}, func(inv *invocation, p *printer, args []string) error {
		if wait < 0 {
			return usagef("--wait %s: must not be negative", wait)
		}
		c, err := connect()
		if err != nil {
			return err
		}
		it, err := c.MailboxIterator(inv.ctx, args[0])
		if err != nil {
			return err
		}
		n := 0
		for max <= 0 || n < max {
			ev, err := c.MailboxNext(inv.ctx, args[0], it, wait.Milliseconds())
			if err != nil {
				return err
			}
			if ev == nil {
				break
			}
			if err := printEvent(p, time.Time{}, ev); err != nil {
				return err
			}
			n++
		}
		// Closing acknowledges the last one printed.
		if err := c.MailboxClose(inv.ctx, args[0], it); err != nil {
			return errors.Join(fmt.Errorf("acknowledging the last event"), err)
		}
		fmt.Fprintf(inv.stderr, "%d events\n", n)
		return nil
	})
	pullCmd.Flags().DurationVar(&wait, "wait", 0, "after the stored events, wait this long for more")
	pullCmd.Flags().IntVar(&max, "max", 0, "stop after this many events (0: no limit)")
	return pullCmd
}

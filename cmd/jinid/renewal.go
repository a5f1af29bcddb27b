//go:build !jinid_omit_tools

package main

import (
	"fmt"
	"time"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

func newRenewalCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "renewal",
		short: "Hand leases to jinid to renew (the lease renewal service)",
		long: `Client commands for the lease renewal service of a running jinid
(--server). Create a set (itself leased), add leases to it, each with how
long you want it kept (--desired); jinid renews them at their grantor
(any jinid, or anything that speaks the API's lease endpoints) until then.
A failure listener hears of each lease that could not be kept; a warning
listener hears before the set's own lease ends.`,
		example: `  SET=$(jinid renewal create --duration 1h -o json | jq -r .set)
  LEASE=$(jinid lookup register --type com.example.Kept --duration 5m -o json | jq -r .lease)
  jinid renewal add "$SET" --grantor http://gw:4162 --lease "$LEASE" --remaining 5m --desired 24h
  jinid renewal failures "$SET" --listener http://10.0.0.5:9000/`,
	}
	api.add(cmd)
	connect := api.connect

	var (
		listener, handback string
		minWarning         time.Duration
		clear              bool
	)
	listenerCmd := func(use, short string, warning bool) *spec {
		c := withOutput(&spec{
			use:   use,
			short: short,
			args:  exactArgs(1),
		}, func(inv *invocation, p *printer, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			if clear {
				if err := c.RenewalClear(inv.ctx, args[0], warning); err != nil {
					return err
				}
				return done(inv, "set %s: listener removed", args[0])
			}
			if listener == "" {
				return usagef("--listener is required (or --clear)")
			}
			var reg client.ListenerRegistration
			if warning {
				if minWarning < 0 {
					return usagef("--min-warning %s: must not be negative", minWarning)
				}
				reg, err = c.RenewalWarning(inv.ctx, args[0], listener, minWarning.Milliseconds(), []byte(handback))
			} else {
				reg, err = c.RenewalFailures(inv.ctx, args[0], listener, []byte(handback))
			}
			if err != nil {
				return err
			}
			return p.one(record{{"set", args[0]}, {"eventID", reg.EventID}, {"seqNum", reg.SeqNum},
				{"lease", reg.Lease.ID}, {"expires", expiry(reg.Lease.Expiration)}})
		})
		c.Flags().StringVar(&listener, "listener", "", "URL events are POSTed to")
		c.Flags().StringVar(&handback, "handback", "", "text handed back in every event")
		c.Flags().BoolVar(&clear, "clear", false, "remove the registration")
		if warning {
			c.Flags().DurationVar(&minWarning, "min-warning", time.Minute, "warn this long before the set's lease ends")
		}
		return c
	}
	warn := listenerCmd("warn SET --listener URL [--min-warning 5m] | --clear", "Be warned before the set's own lease ends (ExpirationWarningEvent)", true)
	failures := listenerCmd("failures SET --listener URL | --clear", "Hear of each lease that could not be kept (RenewalFailureEvent)", false)
	cmd.AddCommand(renewalCreateCmd(connect), renewalAddCmd(connect), renewalRemoveCmd(connect), renewalListCmd(connect), warn, failures)
	return cmd
}

func renewalCreateCmd(connect connector) *spec {
	var dur string
	create := withOutput(&spec{
		use:   "create [--duration 1h]",
		short: "Create a renewal set; prints its ID and lease",
	}, func(inv *invocation, p *printer, _ []string) error {
		d, err := leaseFlag(dur)
		if err != nil {
			return err
		}
		c, err := connect()
		if err != nil {
			return err
		}
		s, err := c.RenewalCreate(inv.ctx, d)
		if err != nil {
			return err
		}
		noteCut(inv.stderr, d, s.Lease)
		return p.one(record{{"set", s.ID}, {"lease", s.Lease.ID}, {"expires", expiry(s.Lease.Expiration)}})
	})
	create.Flags().StringVar(&dur, "duration", "1h", "the set's lease: a duration, any or forever")
	return create
}

func renewalAddCmd(connect connector) *spec {
	var (
		grantor, leaseID   string
		desired, renewFlag string
		remaining          time.Duration
	)
	add := &spec{
		use:   "add SET --grantor URL --lease ID --remaining D --desired D [--renew D]",
		short: "Put a lease in a set (renewFor)",
		long: `Put a lease in a set: jinid renews it at --grantor until --desired from
now ("forever" for as long as possible), each time for --renew (default
forever: as long as the grantor gives). --remaining is how long the lease
has left now (as jinid lease or lookup register printed it).`,
		example: `  jinid renewal add "$SET" --grantor http://gw:4162 --lease "$LEASE" --remaining 5m --desired 24h   # SET: renewal create printed it`,
		args:    exactArgs(1),
		run: func(inv *invocation, args []string) error {
			if grantor == "" || leaseID == "" {
				return usagef("--grantor and --lease are required")
			}
			if remaining <= 0 {
				return usagef("--remaining %s: how long the lease has left, positive", remaining)
			}
			want, err := leaseFlag(desired)
			if err != nil {
				return usagef("--desired: %w", err)
			}
			var renew *int64
			if renewFlag != "" {
				r, err := leaseFlag(renewFlag)
				if err != nil {
					return usagef("--renew: %w", err)
				}
				renew = &r
			}
			c, err := connect()
			if err != nil {
				return err
			}
			rem := remaining.Milliseconds()
			if err := c.RenewFor(inv.ctx, args[0], apitypes.Lease{Grantor: grantor, ID: leaseID, Remaining: rem,
				Expiration: time.Now().Add(remaining).UnixMilli()}, want, renew); err != nil {
				return err
			}
			return done(inv, "set %s keeps lease %s for %s", args[0], leaseID, spanOf(want))
		},
	}
	add.Flags().StringVar(&grantor, "grantor", "", "URL of the lease's grantor, e.g. http://10.0.0.7:4162")
	add.Flags().StringVar(&leaseID, "lease", "", "the lease ID")
	add.Flags().DurationVar(&remaining, "remaining", 0, "how long the lease has left now")
	add.Flags().StringVar(&desired, "desired", "forever", "keep it this long from now: a duration or forever")
	add.Flags().StringVar(&renewFlag, "renew", "", "renew it each time for this long (default forever: what the grantor gives)")
	return add
}

func renewalRemoveCmd(connect connector) *spec {
	remove := withOutput(&spec{
		use:   "remove SET LEASE-ID",
		short: "Take a lease out of a set (it is not cancelled)",
		args:  exactArgs(2),
	}, func(inv *invocation, p *printer, args []string) error {
		c, err := connect()
		if err != nil {
			return err
		}
		l, err := c.RenewalRemove(inv.ctx, args[0], args[1])
		if err != nil {
			return err
		}
		if l == nil {
			return fmt.Errorf("lease %s is not in set %s (jinid renewal list %s lists them)", args[1], args[0], args[0])
		}
		return p.one(record{{"removed", l.ID}, {"grantor", l.Grantor}, {"expires", instant(l.Expiration)}})
	})
	return remove
}

func renewalListCmd(connect connector) *spec {
	return withOutput(&spec{
		use:   "list SET",
		short: "List a set's leases with their last recorded expirations",
		args:  exactArgs(1),
	}, func(inv *invocation, p *printer, args []string) error {
		c, err := connect()
		if err != nil {
			return err
		}
		ls, err := c.RenewalLeases(inv.ctx, args[0])
		if err != nil {
			return err
		}
		rs := make([]record, len(ls))
		for i, l := range ls {
			rs[i] = clientLeaseRecord(l)
		}
		return p.list("leases", rs, clientLeaseRecord(apitypes.ClientLease{}))
	})
}

// clientLeaseRecord is a lease of a renewal set: until when it is kept
// ("forever": as long as can be) and for how long each renewal asks.
func clientLeaseRecord(l apitypes.ClientLease) record {
	var renew any
	if l.RenewDuration != 0 {
		renew = spanOf(l.RenewDuration)
	}
	var keptUntil any = "forever"
	if l.DesiredExpiration != apitypes.Forever {
		keptUntil = instant(l.DesiredExpiration)
	}
	return record{{"lease", l.ID}, {"grantor", l.Grantor}, {"expires", instant(l.Expiration)}, {"keptUntil", keptUntil}, {"renewFor", renew}}
}

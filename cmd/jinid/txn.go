//go:build !jinid_omit_tools

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/txn/participant"
)

func newTxnCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "txn",
		short: "Run transactions on jinid's transaction manager, and try a participant",
		long: `Client commands for the transaction manager of a running jinid (--server),
and a participant to try the two-phase commit from a terminal. The
examples run on the jinid's host, whose administrator may name a
participant on the host itself.`,
		example: `  jinid txn participant --addr 127.0.0.1:9100 --vote prepared &
  T=$(jinid txn create)
  jinid txn join "$T" http://127.0.0.1:9100/
  jinid txn commit "$T" --wait-for 10s`,
	}
	api.add(cmd)
	connect := api.connect

	complete := func(name, short string, op func(inv *invocation, id string, waitFor int64) (string, error)) *spec {
		var waitFor time.Duration
		c := withOutput(&spec{
			use:   name + " TRANSACTION [--wait-for D]",
			short: short,
			args:  exactArgs(1),
		}, func(inv *invocation, p *printer, args []string) error {
			if waitFor < 0 {
				return usagef("--wait-for %s: want 0 or more", waitFor)
			}
			w := int64(-1)
			if inv.flags.Changed("wait-for") {
				w = waitFor.Milliseconds()
			}
			s, err := op(inv, args[0], w)
			if err != nil {
				return err
			}
			return p.bare(record{{"state", s}, {"transaction", args[0]}})
		})
		c.Flags().DurationVar(&waitFor, "wait-for", 0, "also wait, this long at most, for every participant to be told the outcome")
		return c
	}
	commit := complete("commit", "Commit: prints COMMITTED, or fails (CannotCommit, TimeoutExpired, OutcomeUnknown)",
		func(inv *invocation, id string, w int64) (string, error) {
			c, err := connect()
			if err != nil {
				return "", err
			}
			return c.TxnCommit(inv.ctx, id, w)
		})
	abort := complete("abort", "Abort: prints ABORTED, or fails (CannotAbort once committed)",
		func(inv *invocation, id string, w int64) (string, error) {
			c, err := connect()
			if err != nil {
				return "", err
			}
			return c.TxnAbort(inv.ctx, id, w)
		})
	cmd.AddCommand(txnCreateCmd(connect), txnStateCmd(connect), txnEnclosedByCmd(connect), txnJoinCmd(connect), commit, abort, newTxnParticipantCmd())
	return cmd
}

func txnCreateCmd(connect connector) *spec {
	var dur, parent, parentManager, parentTokenFile string
	create := withOutput(&spec{
		use:   "create [--duration 10m] [--parent ID [--parent-manager URL [--parent-token-file FILE]]]",
		short: "Create a transaction, or one nested in a parent; prints its ID",
		long: `Create a transaction; prints its ID. With --parent, the transaction is
nested in that one: on this manager, or with --parent-manager on another
jinid, which this one joins through a link (give --parent-token-file, a
file holding a token of that jinid with the client scope, unless it lets
anonymous clients join).`,
	}, func(inv *invocation, out *printer, _ []string) error {
		d, err := leaseFlag(dur)
		if err != nil {
			return err
		}
		if parent == "" && (parentManager != "" || parentTokenFile != "") {
			return usagef("--parent-manager and --parent-token-file need --parent")
		}
		p := client.TxnParent{ID: parent, Manager: parentManager}
		if parentTokenFile != "" {
			raw, err := os.ReadFile(parentTokenFile)
			if err != nil {
				return usagef("--parent-token-file: %w", err)
			}
			p.Token = strings.TrimSpace(string(raw))
		}
		c, err := connect()
		if err != nil {
			return err
		}
		var tx client.Transaction
		if parent == "" {
			tx, err = c.TxnCreate(inv.ctx, d)
		} else {
			tx, err = c.TxnCreateNested(inv.ctx, d, p)
		}
		if err != nil {
			return err
		}
		noteCut(inv.stderr, d, tx.Lease)
		return out.bare(record{{"transaction", tx.ID}, {"manager", tx.Manager}, {"lease", tx.Lease.ID}, {"expires", expiry(tx.Lease.Expiration)}})
	})
	create.Flags().StringVar(&dur, "duration", "10m", "lease duration: a duration, any or forever")
	create.Flags().StringVar(&parent, "parent", "", "nest the transaction in this one")
	create.Flags().StringVar(&parentManager, "parent-manager", "", "the parent's manager, when it is another jinid (its API URL)")
	create.Flags().StringVar(&parentTokenFile, "parent-token-file", "", "a file with a token for the parent's manager")
	return create
}

func txnStateCmd(connect connector) *spec {
	state := withOutput(&spec{
		use:   "state TRANSACTION",
		short: "Print the transaction's state: ACTIVE, VOTING, COMMITTED or ABORTED",
		args:  exactArgs(1),
	}, func(inv *invocation, p *printer, args []string) error {
		c, err := connect()
		if err != nil {
			return err
		}
		s, err := c.TxnState(inv.ctx, args[0])
		if err != nil {
			return err
		}
		return p.bare(record{{"state", s}, {"transaction", args[0]}})
	})
	return state
}

func txnEnclosedByCmd(connect connector) *spec {
	var ancestorManager string
	enclosedBy := withOutput(&spec{
		use:   "enclosed-by TRANSACTION ANCESTOR [--ancestor-manager URL]",
		short: "Print whether the transaction is nested, at any depth, in ANCESTOR",
		long: `Print true if TRANSACTION is nested, at any depth, in ANCESTOR (enclosedBy),
else false. The parents are followed up from TRANSACTION, each asked of
its own manager; give --ancestor-manager (its API URL) when ANCESTOR is
on another jinid.`,
		args: exactArgs(2),
	}, func(inv *invocation, p *printer, args []string) error {
		c, err := connect()
		if err != nil {
			return err
		}
		in, err := c.TxnEnclosedBy(inv.ctx, args[0], client.TxnRef{Manager: ancestorManager, ID: args[1]})
		if err != nil {
			return err
		}
		return p.bare(record{{"enclosedBy", in}, {"transaction", args[0]}, {"ancestor", args[1]}})
	})
	enclosedBy.Flags().StringVar(&ancestorManager, "ancestor-manager", "", "the ancestor's manager, when it is another jinid (its API URL)")
	return enclosedBy
}

func txnJoinCmd(connect connector) *spec {
	var crashCount int64
	join := &spec{
		use:   "join TRANSACTION PARTICIPANT-URL [--crash-count N]",
		short: "Join a participant (its callback URL) to the transaction",
		args:  exactArgs(2),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			if err := c.TxnJoin(inv.ctx, args[0], args[1], crashCount); err != nil {
				return err
			}
			return done(inv, "%s joined transaction %s", args[1], args[0])
		},
	}
	join.Flags().Int64Var(&crashCount, "crash-count", 1, "the participant's crash count")
	return join
}

// newTxnParticipantCmd serves a participant that votes as told, to try
// the manager from a terminal.
func newTxnParticipantCmd() *spec {
	var (
		addr, vote string
		delay      time.Duration
	)
	cmd := &spec{
		use:   "participant --addr :9100 --vote prepared|notchanged|aborted [--delay D]",
		short: "Serve a participant that votes as told and prints each call",
		long: `Serve a transaction participant on --addr until interrupted: it votes
--vote on every transaction (after --delay, to try a slow participant),
prints every call the manager makes, and answers repeated calls the
same way. Join it with its URL, http://HOST:PORT/.`,
		run: func(inv *invocation, _ []string) error {
			v, ok := map[string]apitypes.Vote{"prepared": apitypes.VotePrepared, "notchanged": apitypes.VoteNotChanged, "aborted": apitypes.VoteAborted}[strings.ToLower(vote)]
			if !ok {
				return usagef("--vote %q: want prepared, notchanged or aborted", vote)
			}
			if delay < 0 {
				return usagef("--delay %s: want 0 or more", delay)
			}
			out := inv.stdout
			h := &participant.Handler{
				Prepare: func(ctx context.Context, id string) (apitypes.Vote, error) {
					fmt.Fprintf(out, "prepare %s\n", id)
					select {
					case <-time.After(delay):
					case <-ctx.Done():
						return 0, ctx.Err()
					}
					fmt.Fprintf(out, "voted %s on %s\n", strings.ToUpper(vote), id)
					return v, nil
				},
				Commit: func(_ context.Context, id string) error { fmt.Fprintf(out, "commit %s\n", id); return nil },
				Abort:  func(_ context.Context, id string) error { fmt.Fprintf(out, "abort %s\n", id); return nil },
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--addr: %w", err)
			}
			fmt.Fprintf(out, "participant at http://%s/\n", ln.Addr())
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-inv.ctx.Done()
				srv.Close()
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", ":9100", "address to serve the participant on")
	cmd.Flags().StringVar(&vote, "vote", "prepared", "the vote: prepared, notchanged or aborted")
	cmd.Flags().DurationVar(&delay, "delay", 0, "time to take before voting")
	return cmd
}

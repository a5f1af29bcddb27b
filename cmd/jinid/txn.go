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

	"github.com/spf13/cobra"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/txn"
	"github.com/jinid/jinid/services/txn/participant"
)

func newTxnCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "Run transactions on jinid's transaction manager, and try a participant",
		Long: `Client commands for the transaction manager of a running jinid (--server),
and a participant to try the two-phase commit from a terminal:

  jinid txn participant --addr :9100 --vote prepared &
  T=$(jinid txn create)
  jinid txn join $T http://THIS-HOST:9100/
  jinid txn commit $T --wait-for 10s`,
	}
	api.add(cmd)
	connect := api.connect

	var dur, parent, parentManager, parentTokenFile string
	create := &cobra.Command{
		Use:   "create [--duration 10m] [--parent ID [--parent-manager URL [--parent-token-file FILE]]]",
		Short: "Create a transaction, or one nested in a parent; prints its ID",
		Long: `Create a transaction; prints its ID. With --parent, the transaction is
nested in that one: on this manager, or with --parent-manager on another
jinid, which this one joins through a link (give --parent-token-file, a
file holding a token of that jinid with the client scope, unless it lets
anonymous clients join).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := leaseFlag(dur)
			if err != nil {
				return err
			}
			if parent == "" && (parentManager != "" || parentTokenFile != "") {
				return usageError{errors.New("--parent-manager and --parent-token-file need --parent")}
			}
			p := client.TxnParent{ID: parent, Manager: parentManager}
			if parentTokenFile != "" {
				raw, err := os.ReadFile(parentTokenFile)
				if err != nil {
					return fmt.Errorf("--parent-token-file: %w", err)
				}
				p.Token = strings.TrimSpace(string(raw))
			}
			c, err := connect()
			if err != nil {
				return err
			}
			var tx client.Transaction
			if parent == "" {
				tx, err = c.TxnCreate(cmd.Context(), d)
			} else {
				tx, err = c.TxnCreateNested(cmd.Context(), d, p)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tx.ID)
			return err
		},
	}
	create.Flags().StringVar(&dur, "duration", "10m", "lease duration: a duration, any or forever")
	create.Flags().StringVar(&parent, "parent", "", "nest the transaction in this one")
	create.Flags().StringVar(&parentManager, "parent-manager", "", "the parent's manager, when it is another jinid (its API URL)")
	create.Flags().StringVar(&parentTokenFile, "parent-token-file", "", "a file with a token for the parent's manager")

	state := &cobra.Command{
		Use:   "state TRANSACTION",
		Short: "Print the transaction's state: ACTIVE, VOTING, COMMITTED or ABORTED",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			s, err := c.TxnState(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), s)
			return err
		},
	}

	var ancestorManager string
	enclosedBy := &cobra.Command{
		Use:   "enclosed-by TRANSACTION ANCESTOR [--ancestor-manager URL]",
		Short: "Print whether the transaction is nested, at any depth, in ANCESTOR",
		Long: `Print true if TRANSACTION is nested, at any depth, in ANCESTOR (enclosedBy),
else false. The parents are followed up from TRANSACTION, each asked of
its own manager; give --ancestor-manager (its API URL) when ANCESTOR is
on another jinid.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			in, err := c.TxnEnclosedBy(cmd.Context(), args[0], client.TxnRef{Manager: ancestorManager, ID: args[1]})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), in)
			return err
		},
	}
	enclosedBy.Flags().StringVar(&ancestorManager, "ancestor-manager", "", "the ancestor's manager, when it is another jinid (its API URL)")

	var crashCount int64
	join := &cobra.Command{
		Use:   "join TRANSACTION PARTICIPANT-URL [--crash-count N]",
		Short: "Join a participant (its callback URL) to the transaction",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			return c.TxnJoin(cmd.Context(), args[0], args[1], crashCount)
		},
	}
	join.Flags().Int64Var(&crashCount, "crash-count", 1, "the participant's crash count")

	complete := func(name, short string, op func(cmd *cobra.Command, id string, waitFor int64) (string, error)) *cobra.Command {
		var waitFor time.Duration
		c := &cobra.Command{
			Use:   name + " TRANSACTION [--wait-for D]",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if waitFor < 0 {
					return usagef("--wait-for %s: want 0 or more", waitFor)
				}
				w := int64(-1)
				if cmd.Flags().Changed("wait-for") {
					w = waitFor.Milliseconds()
				}
				s, err := op(cmd, args[0], w)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), s)
				return err
			},
		}
		c.Flags().DurationVar(&waitFor, "wait-for", 0, "also wait, this long at most, for every participant to be told the outcome")
		return c
	}
	commit := complete("commit", "Commit: prints COMMITTED, or fails (CannotCommit, TimeoutExpired, OutcomeUnknown)",
		func(cmd *cobra.Command, id string, w int64) (string, error) {
			c, err := connect()
			if err != nil {
				return "", err
			}
			return c.TxnCommit(cmd.Context(), id, w)
		})
	abort := complete("abort", "Abort: prints ABORTED, or fails (CannotAbort once committed)",
		func(cmd *cobra.Command, id string, w int64) (string, error) {
			c, err := connect()
			if err != nil {
				return "", err
			}
			return c.TxnAbort(cmd.Context(), id, w)
		})
	cmd.AddCommand(create, state, enclosedBy, join, commit, abort, newTxnParticipantCmd())
	return cmd
}

// newTxnParticipantCmd serves a participant that votes as told, to try
// the manager from a terminal.
func newTxnParticipantCmd() *cobra.Command {
	var (
		addr, vote string
		delay      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "participant --addr :9100 --vote prepared|notchanged|aborted [--delay D]",
		Short: "Serve a participant that votes as told and prints each call",
		Long: `Serve a transaction participant on --addr until interrupted: it votes
--vote on every transaction (after --delay, to try a slow participant),
prints every call the manager makes, and answers repeated calls the
same way. Join it with its URL, http://HOST:PORT/.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, ok := map[string]txn.Vote{"prepared": txn.VotePrepared, "notchanged": txn.VoteNotChanged, "aborted": txn.VoteAborted}[strings.ToLower(vote)]
			if !ok {
				return usagef("--vote %q: want prepared, notchanged or aborted", vote)
			}
			if delay < 0 {
				return usagef("--delay %s: want 0 or more", delay)
			}
			out := cmd.OutOrStdout()
			h := &participant.Handler{
				Prepare: func(ctx context.Context, id string) (txn.Vote, error) {
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
				<-cmd.Context().Done()
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

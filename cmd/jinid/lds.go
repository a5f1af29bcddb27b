//go:build !jinid_omit_tools

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

func newLDSCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "lds",
		short: "Have jinid discover lookup services for you (the lookup discovery service)",
		long: `Client commands for the lookup discovery service of a running jinid
(--server). A registration names groups and locators of interest and a
listener URL; jinid discovers the lookup services they mean and POSTs a
RemoteDiscoveryEvent to the listener whenever one is discovered or
discarded. Try it from two terminals:

  jinid listen --addr :9000
  jinid lds register --groups lab --listener http://127.0.0.1:9000/events

The registration's lease must be renewed (jinid lease renew) or it ends,
and with it the events.`,
	}
	api.add(cmd)
	connect := api.connect
	cmd.AddCommand(ldsRegisterCmd(connect), ldsShowCmd(connect), ldsGroupsCmd(connect), ldsLocatorsCmd(connect), ldsDiscardCmd(connect), ldsRegistrarsCmd(connect))
	return cmd
}

func ldsRegisterCmd(connect connector) *spec {
	var (
		groups, locators  []string
		allGroups, asJSON bool
		listener, dur     string
		handback          string
	)
	register := &spec{
		use:   "register --listener URL [--groups a,b | --all-groups] [--locator jini://host ...]",
		short: "Register; prints the registration's ID, event ID and lease",
		long: `Register with the lookup discovery service. Groups: --groups names them
(the public group is ""; write --groups ''), --all-groups asks for every
lookup service in multicast range, and neither asks for none (locators
only). Events are POSTed to --listener as JSON.`,
		example: `  jinid lds register --groups lab --listener http://10.0.0.5:9000/events
  jinid lds register --all-groups --locator jini://lookup.example.org --listener http://10.0.0.5:9000/ --duration 1h`,
		run: func(inv *invocation, _ []string) error {
			d, err := leaseFlag(dur)
			if err != nil {
				return err
			}
			if listener == "" {
				return usagef("--listener is required: the URL events are POSTed to (see jinid listen)")
			}
			req := client.LDSRequest{Groups: groupsArg(inv, groups), Locators: locators, Listener: listener, Duration: d}
			if allGroups {
				if inv.flags.Changed("groups") {
					return usagef("--all-groups cannot be combined with --groups")
				}
				req.Groups = nil
			}
			if handback != "" {
				req.Handback = []byte(handback)
			}
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.LDSRegister(inv.ctx, req)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(inv.stdout).Encode(r)
			}
			fmt.Fprintf(inv.stdout, "registration %s\neventID      %d\nseqNum       %d\nlease        %s (expires %s)\n",
				r.ID, r.EventID, r.SeqNum, r.Lease.ID, expires(r.Lease.Expiration))
			return nil
		},
	}
	register.Flags().StringSliceVar(&groups, "groups", nil, "groups of interest, comma-separated")
	register.Flags().BoolVar(&allGroups, "all-groups", false, "every lookup service in multicast range (ALL_GROUPS)")
	register.Flags().StringArrayVar(&locators, "locator", nil, "a lookup service to discover by unicast, jini://host[:port] (repeatable)")
	register.Flags().StringVar(&listener, "listener", "", "URL that events are POSTed to")
	register.Flags().StringVar(&handback, "handback", "", "text handed back in every event")
	register.Flags().StringVar(&dur, "duration", "30m", "lease duration: a duration, any or forever")
	register.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return register
}

func ldsShowCmd(connect connector) *spec {
	show := &spec{
		use:   "show REGISTRATION",
		short: "Print a registration's groups, locators, event ID and lease",
		args:  exactArgs(1),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.LDSGet(inv.ctx, args[0])
			if err != nil {
				return err
			}
			return printRegistration(inv.stdout, r)
		},
	}
	return show
}

func ldsGroupsCmd(connect connector) *spec {
	groupsCmd := &spec{
		use:   "groups REGISTRATION add|set|remove [GROUP ...]",
		short: "Change a registration's groups",
		long: `Add, set or remove groups of interest. "set" with no groups means none
(NO_GROUPS); "set --all" means every group (ALL_GROUPS). Adding to or
removing from ALL_GROUPS is refused (UnsupportedOperation), as the
specification says. Write the public group as ''.`,
		example: `  jinid lds groups 3f2a... add lab ops
  jinid lds groups 3f2a... set --all
  jinid lds groups 3f2a... remove ops`,
		args: minArgs(2),
		run: func(inv *invocation, args []string) error {
			m, err := mutation(args[1])
			if err != nil {
				return err
			}
			gs := append([]string{}, args[2:]...)
			if all, _ := inv.flags.GetBool("all"); all {
				if m != client.Set || len(gs) > 0 {
					return usagef("--all goes with set and no groups")
				}
				gs = nil
			}
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.LDSGroups(inv.ctx, args[0], m, gs)
			if err != nil {
				return err
			}
			return printRegistration(inv.stdout, r)
		},
	}
	groupsCmd.Flags().Bool("all", false, "with set: all groups")
	return groupsCmd
}

func ldsLocatorsCmd(connect connector) *spec {
	locatorsCmd := &spec{
		use:     "locators REGISTRATION add|set|remove [jini://host[:port] ...]",
		short:   "Change a registration's locators",
		example: `  jinid lds locators 3f2a... add jini://10.0.0.7 jini://lookup.example.org:4170`,
		args:    minArgs(2),
		run: func(inv *invocation, args []string) error {
			m, err := mutation(args[1])
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.LDSLocators(inv.ctx, args[0], m, append([]string{}, args[2:]...))
			if err != nil {
				return err
			}
			return printRegistration(inv.stdout, r)
		},
	}
	return locatorsCmd
}

func ldsDiscardCmd(connect connector) *spec {
	discard := &spec{
		use:   "discard REGISTRATION SERVICE-ID",
		short: "Tell jinid a lookup service is unreachable: it is discarded and rediscovered",
		args:  exactArgs(2),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			// Discarding one the registration does not hold does
			// nothing (LD.4.1); the command says so rather than
			// succeed at nothing, as a mistyped ID most often is.
			rs, err := c.LDSRegistrars(inv.ctx, args[0])
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(rs, func(r apitypes.Registrar) bool { return strings.EqualFold(r.ServiceID, args[1]) }) {
				return fmt.Errorf("lookup service %s is not among registration %s's (jinid lds registrars %s lists them)", args[1], args[0], args[0])
			}
			if err := c.LDSDiscard(inv.ctx, args[0], args[1]); err != nil {
				return err
			}
			return done(inv, "discarded %s from registration %s: it is rediscovered when it is heard again", args[1], args[0])
		},
	}
	return discard
}

func ldsRegistrarsCmd(connect connector) *spec {
	var regsJSON bool
	registrars := &spec{
		use:   "registrars REGISTRATION",
		short: "List the lookup services discovered for a registration (to resynchronise after a gap)",
		args:  exactArgs(1),
		run: func(inv *invocation, args []string) error {
			c, err := connect()
			if err != nil {
				return err
			}
			rs, err := c.LDSRegistrars(inv.ctx, args[0])
			if err != nil {
				return err
			}
			if regsJSON {
				return json.NewEncoder(inv.stdout).Encode(map[string]any{"registrars": rs})
			}
			printRegistrars(inv.stdout, rs)
			return nil
		},
	}
	registrars.Flags().BoolVar(&regsJSON, "json", false, "print JSON")
	return registrars
}

// groupsArg: --groups given means those (possibly none); not given means
// none, unless --all-groups.
func groupsArg(inv *invocation, groups []string) []string {
	if !inv.flags.Changed("groups") {
		return []string{}
	}
	return append([]string{}, groups...)
}

func mutation(s string) (client.Mutation, error) {
	switch s {
	case "add":
		return client.Add, nil
	case "set":
		return client.Set, nil
	case "remove":
		return client.Remove, nil
	}
	return 0, fmt.Errorf("%q: want add, set or remove", s)
}

func printRegistration(w io.Writer, r apitypes.LDSRegistration) error {
	groups := "(all groups)"
	if r.Groups != nil {
		groups = discovery.GroupsText(r.Groups, ",")
	}
	locs := strings.Join(r.Locators, " ")
	if locs == "" {
		locs = "(none)"
	}
	_, err := fmt.Fprintf(w, "registration %s\neventID      %d\nseqNum       %d\ngroups       %s\nlocators     %s\nlease        %s (expires %s)\n",
		r.ID, r.EventID, r.SeqNum, groups, locs, r.Lease.ID, expires(r.Lease.Expiration))
	return err
}

func printRegistrars(w io.Writer, rs []apitypes.Registrar) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE ID\tADDRESS\tGROUPS\tREGISTRAR")
	for _, r := range rs {
		reg := fmt.Sprintf("java (proxy %d bytes)", len(r.Marshalled))
		if r.APIURL != nil {
			reg = "jinid " + *r.APIURL
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ServiceID, net.JoinHostPort(r.Host, fmt.Sprint(r.Port)), discovery.GroupsText(r.Groups, ","), reg)
	}
	tw.Flush()
}

func newListenCmd() *spec {
	var (
		addr    string
		asJSON  bool
		refuse  bool
		maxBody int64 = 1 << 20
	)
	cmd := &spec{
		use:   "listen [--addr :9000]",
		short: "Receive remote events and print each one (a listener for trying things out)",
		long: `Serve HTTP on --addr and print every remote event POSTed to it (any
path), answering 200. With --unknown it answers 410 UnknownEvent instead,
as a listener that no longer wants the events does: jinid then cancels
the registration. Runs until interrupted.`,
		example: `  jinid listen --addr :9000
  jinid listen --addr 127.0.0.1:9000 --json`,
		run: func(inv *invocation, _ []string) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--addr %s: %w", addr, err)
			}
			fmt.Fprintf(inv.stderr, "listening on http://%s/\n", ln.Addr())
			out := inv.stdout
			srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					http.Error(w, "events are POSTed", http.StatusMethodNotAllowed)
					return
				}
				body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				printEvent(out, time.Now(), body, asJSON)
				if refuse {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusGone)
					json.NewEncoder(w).Encode(apitypes.ErrorBody{Error: faultUnknownEvent()})
				}
			})}
			go func() {
				<-inv.ctx.Done()
				srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", ":9000", "address (host:port) to listen on")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as received (one JSON object per line)")
	cmd.Flags().BoolVar(&refuse, "unknown", false, "answer 410 UnknownEvent to every event")
	return cmd
}

// printEvent writes one received event: a summary line, or its JSON.
func printEvent(w io.Writer, at time.Time, body []byte, asJSON bool) {
	if asJSON {
		var v any
		if json.Unmarshal(body, &v) == nil {
			b, _ := json.Marshal(v)
			fmt.Fprintln(w, string(b))
			return
		}
	}
	var ev struct {
		Source struct {
			Service string `json:"service"`
			ID      string `json:"id"`
		} `json:"source"`
		EventID    int64                `json:"eventID"`
		SeqNum     int64                `json:"seqNum"`
		Type       string               `json:"type"`
		Handback   []byte               `json:"handback"`
		Discarded  *bool                `json:"discarded"`
		Registrars []apitypes.Registrar `json:"registrars"`
		Transition string               `json:"transition"`
		ServiceID  string               `json:"serviceID"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		fmt.Fprintf(w, "%s  (not a remote event: %v) %q\n", at.UTC().Format(time.RFC3339Nano), err, body)
		return
	}
	line := fmt.Sprintf("%s  %s  from %s %s  eventID=%d seq=%d", at.UTC().Format(time.RFC3339Nano), ev.Type, ev.Source.Service, ev.Source.ID, ev.EventID, ev.SeqNum)
	switch {
	case ev.Discarded != nil:
		kind := "discovered"
		if *ev.Discarded {
			kind = "discarded"
		}
		var ls []string
		for _, r := range ev.Registrars {
			ls = append(ls, fmt.Sprintf("%s@%s groups=%s", r.ServiceID, net.JoinHostPort(r.Host, fmt.Sprint(r.Port)), discovery.GroupsText(r.Groups, ",")))
		}
		line += "  " + kind + " " + strings.Join(ls, "; ")
	case ev.Transition != "":
		line += "  " + ev.Transition + " " + ev.ServiceID
	}
	if ev.Handback != nil {
		line += fmt.Sprintf("  handback=%q", ev.Handback)
	}
	fmt.Fprintln(w, line)
}

func faultUnknownEvent() apitypes.Error {
	return apitypes.Error{Code: apitypes.UnknownEvent, Message: "this listener wants no more events"}
}

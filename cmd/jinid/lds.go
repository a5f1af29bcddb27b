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
	"strconv"
	"strings"
	"sync"
	"time"

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
discarded. The registration's lease must be renewed (jinid lease renew)
or it ends, and with it the events. The examples run on the jinid's host,
whose administrator may name a listener on the host itself.`,
		example: `  jinid listen --addr 127.0.0.1:9000 &
  jinid lds register --groups lab --listener http://127.0.0.1:9000/events`,
	}
	api.add(cmd)
	connect := api.connect
	cmd.AddCommand(ldsRegisterCmd(connect), ldsShowCmd(connect), ldsGroupsCmd(connect), ldsLocatorsCmd(connect), ldsDiscardCmd(connect), ldsRegistrarsCmd(connect))
	return cmd
}

func ldsRegisterCmd(connect connector) *spec {
	var (
		groups, locators    []string
		allGroups, noGroups bool
		listener, dur       string
		handback            string
		out                 outputFlags
	)
	register := &spec{
		use:   "register --listener URL [--groups a,b | --all-groups] [--locator jini://host ...]",
		short: "Register; prints the registration's ID, event ID and lease",
		long: `Register with the lookup discovery service. Groups: --groups names them
(the public group is ""; write --groups ''), --all-groups asks for every
lookup service in multicast range, and --no-groups for none (locators
only): one of the three is required. Events are POSTed to --listener as
JSON.`,
		example: `  jinid lds register --groups lab --listener http://10.0.0.5:9000/events
  jinid lds register --all-groups --locator jini://lookup.example.org --listener http://10.0.0.5:9000/ --duration 1h`,
		run: func(inv *invocation, _ []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			d, err := leaseFlag(dur)
			if err != nil {
				return err
			}
			if listener == "" {
				return usagef("--listener is required: the URL events are POSTed to (see jinid listen)")
			}
			req := client.LDSRequest{Groups: groupsArg(inv, groups), Locators: locators, Listener: listener, Duration: d}
			// Unlike discover, where no groups means all, a
			// registration says which it wants: the API's missing
			// groups means every group, an empty list none.
			switch n := countTrue(inv.flags.Changed("groups"), allGroups, noGroups); {
			case n == 0:
				return usagef("say which groups: --groups a,b, --all-groups (every lookup service in range) or --no-groups (--locator only)")
			case n > 1:
				return usagef("--groups, --all-groups and --no-groups: give one")
			case allGroups:
				req.Groups = nil
			case noGroups:
				req.Groups = []string{}
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
			noteCut(inv.stderr, d, r.Lease)
			return p.one(record{{"registration", r.ID}, {"eventID", r.EventID}, {"seqNum", r.SeqNum},
				{"lease", r.Lease.ID}, {"expires", expiry(r.Lease.Expiration)}})
		},
	}
	out.add(register)
	register.Flags().StringSliceVar(&groups, "groups", nil, "groups of interest, comma-separated")
	register.Flags().BoolVar(&allGroups, "all-groups", false, "every lookup service in multicast range (ALL_GROUPS)")
	register.Flags().BoolVar(&noGroups, "no-groups", false, "no groups: only the lookup services --locator names")
	register.Flags().StringArrayVar(&locators, "locator", nil, "a lookup service to discover by unicast, jini://host[:port] (repeatable)")
	register.Flags().StringVar(&listener, "listener", "", "URL that events are POSTed to")
	register.Flags().StringVar(&handback, "handback", "", "text handed back in every event")
	register.Flags().StringVar(&dur, "duration", "30m", "lease duration: a duration, any or forever")
	return register
}

func ldsShowCmd(connect connector) *spec {
	var out outputFlags
	show := &spec{
		use:   "show REGISTRATION",
		short: "Print a registration's groups, locators, event ID and lease",
		args:  exactArgs(1),
		run: func(inv *invocation, args []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.LDSGet(inv.ctx, args[0])
			if err != nil {
				return err
			}
			return p.one(registrationRecord(r))
		},
	}
	out.add(show)
	return show
}

func ldsGroupsCmd(connect connector) *spec {
	var out outputFlags
	groupsCmd := &spec{
		use:   "groups REGISTRATION add|set|remove [GROUP ...]",
		short: "Change a registration's groups",
		long: `Add, set or remove groups of interest. "set" with no groups means none
(NO_GROUPS); "set --all" means every group (ALL_GROUPS). Adding to or
removing from ALL_GROUPS is refused (UnsupportedOperation), as the
specification says. Write the public group as ''.`,
		example: `  jinid lds groups "$REG" add lab ops      # REG: the registration lds register printed
  jinid lds groups "$REG" remove ops
  jinid lds groups "$REG" set --all`,
		args: minArgs(2),
		run: func(inv *invocation, args []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
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
			return p.one(registrationRecord(r))
		},
	}
	out.add(groupsCmd)
	groupsCmd.Flags().Bool("all", false, "with set: all groups")
	return groupsCmd
}

func ldsLocatorsCmd(connect connector) *spec {
	var out outputFlags
	locatorsCmd := &spec{
		use:     "locators REGISTRATION add|set|remove [jini://host[:port] ...]",
		short:   "Change a registration's locators",
		example: `  jinid lds locators "$REG" add jini://10.0.0.7 jini://lookup.example.org:4170`,
		args:    minArgs(2),
		run: func(inv *invocation, args []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
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
			return p.one(registrationRecord(r))
		},
	}
	out.add(locatorsCmd)
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
	var out outputFlags
	registrars := &spec{
		use:   "registrars REGISTRATION",
		short: "List the lookup services discovered for a registration (to resynchronise after a gap)",
		args:  exactArgs(1),
		run: func(inv *invocation, args []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			rs, err := c.LDSRegistrars(inv.ctx, args[0])
			if err != nil {
				return err
			}
			return printRegistrars(p, rs)
		},
	}
	out.add(registrars)
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
	return 0, usagef("%q: want add, set or remove", s)
}

// registrationRecord is an LDS registration as the commands print it:
// groups null (JSON) or "all" (table) for every group.
func registrationRecord(r apitypes.LDSRegistration) record {
	var groups any = "all"
	if r.Groups != nil {
		groups = groupList(r.Groups)
	}
	return record{{"registration", r.ID}, {"eventID", r.EventID}, {"seqNum", r.SeqNum},
		{"groups", groups}, {"locators", orEmpty(r.Locators)}, {"lease", r.Lease.ID}, {"expires", expiry(r.Lease.Expiration)}}
}

// countTrue is how many of bs are true.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func registrarRecord(r apitypes.Registrar) record {
	kind := "java"
	var api any
	if r.APIURL != nil {
		kind, api = "jinid", *r.APIURL
	}
	return record{{"serviceID", r.ServiceID}, {"endpoint", net.JoinHostPort(r.Host, fmt.Sprint(r.Port))},
		{"groups", groupList(r.Groups)}, {"locator", r.Locator}, {"kind", kind}, {"api", api}}
}

func printRegistrars(p *printer, rs []apitypes.Registrar) error {
	out := make([]record, len(rs))
	for i, r := range rs {
		out[i] = registrarRecord(r)
	}
	return p.list("registrars", out, registrarRecord(apitypes.Registrar{}))
}

func newListenCmd() *spec {
	var (
		addr    string
		output  outputFlags
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
			p, err := output.printer(inv.stdout)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("--addr %s: %w", addr, err)
			}
			fmt.Fprintf(inv.stderr, "listening on http://%s/\n", ln.Addr())
			var mu sync.Mutex // one event printed at a time
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
				mu.Lock()
				printEvent(p, time.Now(), body)
				mu.Unlock()
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
	output.add(cmd)
	cmd.Flags().BoolVar(&refuse, "unknown", false, "answer 410 UnknownEvent to every event")
	return cmd
}

// printEvent prints one received event, at when it came (zero: not
// said), one line (or YAML document) each.
func printEvent(p *printer, at time.Time, body []byte) error {
	r, err := eventRecord(at, body)
	if err != nil {
		return p.item(record{{"time", at.UTC()}, {"notAnEvent", err.Error()}, {"body", string(body)}})
	}
	return p.item(r)
}

// eventRecord is the fields of a remote event a person reads: what it is,
// which registration of which service sent it, and what it says.
func eventRecord(at time.Time, body []byte) (record, error) {
	var ev struct {
		apitypes.RemoteEvent
		Discarded  *bool                `json:"discarded"`
		Registrars []apitypes.Registrar `json:"registrars"`
		Transition string               `json:"transition"`
		ServiceID  string               `json:"serviceID"`
		Lease      json.RawMessage      `json:"lease"`
		Expiration int64                `json:"expiration"`
		Error      *apitypes.Error      `json:"error"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, err
	}
	var r record
	if !at.IsZero() {
		r = record{{"time", at.UTC()}}
	}
	r = append(r, field{"type", ev.Type}, field{"service", ev.Source.Service}, field{"registration", ev.Source.ID},
		field{"eventID", ev.EventID}, field{"seqNum", ev.SeqNum})
	switch {
	case ev.Discarded != nil:
		kind := "discovered"
		if *ev.Discarded {
			kind = "discarded"
		}
		var ls []string
		for _, reg := range ev.Registrars {
			ls = append(ls, reg.ServiceID+"@"+net.JoinHostPort(reg.Host, fmt.Sprint(reg.Port)))
		}
		r = append(r, field{kind, ls})
	case ev.Transition != "":
		r = append(r, field{"transition", ev.Transition}, field{"serviceID", ev.ServiceID})
	case len(ev.Lease) > 0:
		// A RenewalFailureEvent's lease is an object, an
		// ExpirationWarningEvent's the set's lease ID.
		var l apitypes.Lease
		if json.Unmarshal(ev.Lease, &l) != nil {
			json.Unmarshal(ev.Lease, &l.ID)
			l.Expiration = ev.Expiration
		}
		r = append(r, field{"lease", l.ID}, field{"grantor", l.Grantor}, field{"expires", instant(l.Expiration)})
		if ev.Error != nil {
			r = append(r, field{"reason", string(ev.Error.Code) + ": " + ev.Error.Message})
		}
	}
	if ev.Handback != nil {
		r = append(r, field{"handback", quoted(ev.Handback)})
	}
	return r, nil
}

func faultUnknownEvent() apitypes.Error {
	return apitypes.Error{Code: apitypes.UnknownEvent, Message: "this listener wants no more events"}
}

// quoted is a handback: Go-quoted text in a table (it may be any bytes),
// the text itself in JSON.
type quoted string

func (q quoted) String() string { return strconv.Quote(string(q)) }

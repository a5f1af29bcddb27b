package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
)

func newDiscoverCmd(g *globalFlags) *cobra.Command {
	var (
		groups      []string
		public      bool
		allGroups   bool
		locators    []string
		timeout     time.Duration
		include     []string
		exclude     []string
		noMulticast bool
		ttl         int
		asJSON      bool
		dnssd       bool
		watchMode   bool
		announce    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "discover [--groups a,b | --all-groups] [--locator jini://host[:port] ...]",
		Short: "Find the Jini lookup services on the LAN and at given locators",
		Long: `Find Jini lookup services, Java (Apache River) and jinid alike, the way a
Jini client does: send multicast requests (protocol versions 1 and 2) on
every suitable interface, listen for announcements, run unicast discovery
with every lookup service that answers or announces, and with each
--locator. After --timeout it prints what it found: ServiceID, host, port,
groups, the interface it was seen on, how it was found, the protocol
version, and the registrar: a jinid one with its API URL, or a Java one
(an opaque proxy, with its size). A lookup service that could not be
reached is listed with the error.

Groups: by default all groups. The public group is the empty name; ask for
it with --public.

With --watch it keeps discovering until interrupted (or --timeout) and
prints each change as it happens, with a timestamp: "discovered" when a
lookup service is found (or found again), "changed" when its groups change
and it is still of interest, "discarded" when it leaves (with the reason:
communication when its announcements stopped for 3 announcement intervals
and it no longer answers, no-interest when its groups left the groups of
interest, locator-removed), and "identified" when a Java lookup service,
listed until then under a stand-in ServiceID (a Java proxy hides its own;
--json marks it serviceIDFromProxy), announces its real one (the line
gives the stand-in it replaces). Lookup services found by --locator are never
discarded for silence: only the announcements of those found by group are
watched. --announce-interval says how often lookup services are expected
to announce (120s, the Java default), from which the discard window
follows.`,
		Example: `  jinid discover
  jinid discover --groups lab,ops --public --timeout 10s
  jinid discover --locator jini://lookup.example.org --no-multicast --json
  jinid discover --interfaces 'eth*'
  jinid discover --dns-sd
  jinid discover --watch --groups lab --announce-interval 10s
  jinid discover --watch --locator jini://lookup.example.org --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg := finder.Config{Timeout: timeout, Include: include, NoMulticast: noMulticast, TTL: ttl, Logger: log, DNSSD: dnssd}
			if dnssd && noMulticast {
				return errors.New("--dns-sd browses over multicast DNS: it cannot be combined with --no-multicast")
			}
			if cmd.Flags().Changed("exclude-interfaces") {
				cfg.Exclude = exclude
			}
			switch {
			case allGroups && (len(groups) > 0 || public):
				return errors.New("--all-groups cannot be combined with --groups or --public")
			case len(groups) > 0 || public:
				cfg.Groups = append([]string{}, groups...)
				if public {
					cfg.Groups = append(cfg.Groups, "")
				}
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: must be positive", timeout)
			}
			for _, s := range locators {
				l, err := discovery.ParseLocator(s)
				if err != nil {
					return fmt.Errorf("--locator: %w", err)
				}
				cfg.Locators = append(cfg.Locators, l)
			}
			if noMulticast && len(cfg.Locators) == 0 {
				return errors.New("--no-multicast leaves nothing to do without --locator")
			}
			if announce <= 0 {
				return fmt.Errorf("--announce-interval %s: must be positive", announce)
			}
			if cmd.Flags().Changed("announce-interval") && !watchMode {
				return errors.New("--announce-interval applies to --watch only")
			}
			if watchMode {
				if dnssd {
					return errors.New("--dns-sd cannot be combined with --watch")
				}
				ctx := cmd.Context()
				if cmd.Flags().Changed("timeout") {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				return watch(ctx, cmd.OutOrStdout(), watchOptions{groups: cfg.Groups, locators: cfg.Locators,
					announcementInterval: announce, noMulticast: noMulticast, include: include, exclude: cfg.Exclude,
					ttl: ttl, json: asJSON, log: log})
			}
			results, err := finder.Find(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			if asJSON {
				enc := json.NewEncoder(out)
				for _, r := range results {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
			} else {
				writeResults(out, results)
			}
			if len(results) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no lookup services found")
			}
			return out.Flush()
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&groups, "groups", nil, "groups of interest, comma-separated (default: all groups)")
	f.BoolVar(&public, "public", false, `include the public group ("")`)
	f.BoolVar(&allGroups, "all-groups", false, "look for lookup services of any group (the default)")
	f.StringArrayVar(&locators, "locator", nil, "also run unicast discovery with jini://host[:port] (repeatable)")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to listen before printing the results (with --watch: stop after this; default never)")
	f.StringSliceVar(&include, "interfaces", nil, "multicast only on interfaces matching these patterns (e.g. eth*,wlan0; default: all suitable); a name given outright is used even if --exclude-interfaces matches it")
	f.StringSliceVar(&exclude, "exclude-interfaces", mcast.DefaultExclude, "never multicast on interfaces matching these patterns")
	f.BoolVar(&noMulticast, "no-multicast", false, "do not multicast; only try the --locator addresses")
	f.IntVar(&ttl, "ttl", mcast.DefaultTTL, "multicast TTL (IPv6 hop limit) of requests")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per lookup service")
	f.BoolVar(&dnssd, "dns-sd", false, "also browse _jini._tcp.local over multicast DNS (DNS-SD)")
	f.BoolVar(&watchMode, "watch", false, "keep discovering and print each discovered, changed, discarded or identified event as it happens")
	f.DurationVar(&announce, "announce-interval", group.DefaultAnnouncementInterval, "with --watch: how often lookup services are expected to announce; silent for 3 intervals means discarded")
	return cmd
}

func writeResults(w io.Writer, results []finder.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE ID\tADDRESS\tGROUPS\tINTERFACE\tFOUND BY\tVERSION\tREGISTRAR")
	for _, r := range results {
		id := r.ServiceID
		if id == "" {
			id = "-"
		}
		port := strconv.Itoa(r.Port)
		if r.Port == 0 {
			port = "?"
		}
		iface := r.Interface
		if iface == "" {
			iface = "-"
		}
		reg := ""
		switch {
		case r.Error != "":
			reg = "unreachable: " + r.Error
		case r.Kind == "jinid":
			reg = "jinid " + r.APIURL
		default:
			reg = fmt.Sprintf("java (proxy %d bytes)", r.ProxySize)
		}
		version := "-"
		if r.Version != 0 {
			version = "v" + strconv.Itoa(r.Version)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, r.Host+":"+port, groupsText(r.Groups), iface, strings.Join(r.How, ","), version, reg)
	}
	tw.Flush()
}

func groupsText(gs []string) string {
	if len(gs) == 0 {
		return "(none)"
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		if g == "" {
			g = "(public)"
		}
		out[i] = g
	}
	return strings.Join(out, ",")
}

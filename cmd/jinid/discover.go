//go:build !jinid_omit_tools

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/internal/printable"
)

// discoverLong is discover's help.
const discoverLong = `Find Jini lookup services, Java (Apache River) and jinid alike, the way a
Jini client does: send multicast requests (protocol versions 1 and 2) on
every suitable interface, listen for announcements, run unicast discovery
with every lookup service that answers or announces, and with each
--locator. Then it prints what it found, like avahi-browse: one line per
lookup service per interface and family it was seen on (--merge: one line
per lookup service, at its best address), with its ServiceID, address,
groups, the protocol versions it spoke (v1,v2), how it was found, and the
registrar: a jinid one with its API URL, or a Java one (an opaque proxy,
with its size). A lookup service that could not be reached is listed with
the error.

Addresses are written to be dialed: IPv6 in brackets, a link-local one
with the zone of the interface it was heard on ([fe80::1%eth0]:4160); a
port of "?" is not known (a Java lookup service's version 1 answer). With
--merge the best address is shown: a global IPv6 address, then IPv4, then
an IPv6 unique local address, then link-local ones (RFC 6724's order), the
same whatever order the answers came in.

The round ends once it has gone quiet: no new answer for --settle after
the last request (requests go out twice, half a second apart) and no
unicast discovery under way; --timeout is the most it takes.

Groups: by default all groups. The public group is the empty name; ask for
it with --public-group (the daemon's name for it too).

Output: a table for people; --json, one object per line; -p/--parsable, one
line per result of fields separated by ";", in this order:
  status;interface;family;serviceID;address;groups;versions;how;kind;registrar;error
status is "=" (found) or "!" (unreachable); family IPv4 or IPv6; lists
inside a field are separated by ","; groups are "(public)" for the public
group and "(none)" for no group; registrar is a jinid API URL or a Java
proxy's size in bytes. A ";", ",", "\" or control character in a value
(and a "(" starting one) is written \DDD, its byte in decimal, as
avahi-browse does. With --merge, interface lists every interface.

Exit status: 0 when a lookup service was found, 1 when none was (or
discovery failed), 2 when the command line is wrong.

With --watch it keeps discovering until interrupted (or --timeout) and
prints each change as it happens, with a timestamp: "discovered" when a
lookup service is found (or found again), "changed" when its groups change
and it is still of interest, "discarded" when it leaves (with the reason:
communication when its announcements stopped for 3 announcement intervals
and it no longer answers, no-interest when its groups left the groups of
interest, locator-removed), and "gone" when it announced that it is a
member of no group any more (what a lookup service does as it shuts
down). A lookup service is listed under the ServiceID its registrar proxy
carries (Reggie's and jinid's do) from its first line on; one whose proxy
is of a class jinid cannot read is listed under a stand-in (marked
"stand-in", serviceIDStandIn in --json) until it announces its real one,
and is then discarded under the stand-in (reason identified) and
discovered under the real one: every discarded line names a ServiceID
a discovered line named before. Lookup services found by --locator are
never discarded for silence: only the announcements of those found by
group are watched.
--announce-interval says how often lookup services are expected to
announce (120s, the Java default), from which the discard window follows.`

func newDiscoverCmd(g *globalFlags) *spec {
	o := &discoverOptions{g: g}
	cmd := &spec{
		use:   "discover [--groups a,b | --all-groups] [--locator jini://host[:port] ...]",
		short: "Find the Jini lookup services on the LAN and at given locators",
		long:  discoverLong,
		example: `  jinid discover
  jinid discover --groups lab,ops --public-group --timeout 10s
  jinid discover --merge
  jinid discover -p | grep '^=;eth0;IPv4;'
  jinid discover --locator jini://lookup.example.org --no-multicast --json
  jinid discover --interfaces 'eth*'
  jinid discover --dns-sd
  jinid discover --watch --groups lab --announce-interval 10s
  jinid discover --watch --locator jini://lookup.example.org --json`,
		run: func(inv *invocation, _ []string) error { return o.run(inv) },
	}
	o.bind(cmd.Flags())
	return cmd
}

// discoverOptions are discover's flags.
type discoverOptions struct {
	g         *globalFlags
	scope     scopeFlags
	timeout   time.Duration
	settle    time.Duration
	ttl       int
	asJSON    bool
	parsable  bool
	yaml      bool
	output    string
	merge     bool
	dnssd     bool
	watchMode bool
	announce  time.Duration
}

func (o *discoverOptions) bind(f *pflag.FlagSet) {
	o.scope.bind(f, "do not multicast; only try the --locator addresses")
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "the longest a round takes (with --watch: stop after this; default never)")
	f.DurationVar(&o.settle, "settle", finder.DefaultSettle, "end the round once nothing new has arrived for this long after the last request")
	f.BoolVar(&o.merge, "merge", false, "one line per lookup service (its best address, every interface) instead of one per interface and family")
	f.BoolVarP(&o.parsable, "parsable", "p", false, `print one ";"-separated line per result, fields in a fixed order (see above)`)
	f.IntVar(&o.ttl, "ttl", mcast.DefaultTTL, "multicast TTL (IPv6 hop limit) of requests")
	f.BoolVar(&o.asJSON, "json", false, "the same as -o json")
	f.StringVarP(&o.output, "output", "o", formatTable, "output format: table, json (one object per line), yaml (one document per result) or parsable")
	f.BoolVar(&o.dnssd, "dns-sd", false, "also browse _jini._tcp.local over multicast DNS (DNS-SD)")
	f.BoolVar(&o.watchMode, "watch", false, "keep discovering and print each discovered, changed, discarded or gone event as it happens")
	f.DurationVar(&o.announce, "announce-interval", group.DefaultAnnouncementInterval, "with --watch: how often lookup services are expected to announce; silent for 3 intervals means discarded")
}

// scopeFlags are the flags that say which lookup services a command
// looks for, discover's and browse's: groups, locators, interfaces.
type scopeFlags struct {
	groups, locators, include, exclude []string
	public, allGroups                  bool
	noDefault, noMulticast             bool
}

func (s *scopeFlags) bind(f *pflag.FlagSet, noMulticast string) {
	f.StringSliceVar(&s.groups, "groups", nil, "groups of interest, comma-separated (default: all groups)")
	f.BoolVar(&s.public, "public-group", false, `include the public group ("")`)
	// The name it had, before the daemon's: still taken, not shown.
	f.BoolVar(&s.public, "public", false, "")
	f.MarkHidden("public")
	f.BoolVar(&s.allGroups, "all-groups", false, "look for lookup services of any group (the default)")
	f.StringArrayVar(&s.locators, "locator", nil, "also run unicast discovery with jini://host[:port] (repeatable; a link-local IPv6 address with its zone: jini://[fe80::1%eth0])")
	interfaceFlags(f, &s.include, &s.exclude, &s.noDefault)
	f.BoolVar(&s.noMulticast, "no-multicast", false, noMulticast)
}

// scope is what the flags say, checked: groups nil for all; exclude nil
// for the default.
type scope struct {
	groups, include, exclude []string
	locators                 []discovery.Locator
	noDefault, noMulticast   bool
}

func (s *scopeFlags) resolve(inv *invocation) (scope, error) {
	sc := scope{include: s.include, noDefault: s.noDefault, noMulticast: s.noMulticast}
	if inv.flags.Changed("exclude-interfaces") {
		sc.exclude = s.exclude
	}
	switch {
	case s.allGroups && (len(s.groups) > 0 || s.public):
		return scope{}, usagef("--all-groups cannot be combined with --groups or --public-group")
	case len(s.groups) > 0 || s.public:
		sc.groups = append([]string{}, s.groups...)
		if s.public {
			sc.groups = append(sc.groups, "")
		}
	}
	for _, raw := range s.locators {
		l, err := discovery.ParseLocator(raw)
		if err == nil {
			err = l.Dialable()
		}
		if err != nil {
			return scope{}, usagef("--locator: %w", err)
		}
		sc.locators = append(sc.locators, l)
	}
	if s.noMulticast && len(sc.locators) == 0 {
		return scope{}, usagef("--no-multicast leaves nothing to do without --locator")
	}
	return sc, nil
}

// run checks the flags, makes the finder's configuration of them and
// runs one round, or watches.
func (o *discoverOptions) run(inv *invocation) error {
	log, err := o.g.commandLogger(inv)
	if err != nil {
		return usageError{err: err}
	}
	sc, err := o.scope.resolve(inv)
	if err != nil {
		return err
	}
	cfg := finder.Config{Timeout: o.timeout, Settle: o.settle, Merge: o.merge, Include: sc.include, ExcludeDefaultRoute: sc.noDefault,
		NoMulticast: sc.noMulticast, TTL: o.ttl, Logger: log, DNSSD: o.dnssd, Groups: sc.groups, Locators: sc.locators, Exclude: sc.exclude}
	if o.dnssd && sc.noMulticast {
		return usagef("--dns-sd browses over multicast DNS: it cannot be combined with --no-multicast")
	}
	switch strings.ToLower(o.output) {
	case formatTable:
	case formatJSON:
		o.asJSON = true
	case formatParsable:
		o.parsable = true
	case formatYAML:
		o.yaml = true
	default:
		return usagef("-o %q: want table, json, yaml or parsable", o.output)
	}
	if countTrue(o.asJSON, o.parsable, o.yaml) > 1 {
		return usagef("--json, --parsable and -o name output formats: give one")
	}
	if o.timeout <= 0 {
		return usagef("--timeout %s: must be positive", o.timeout)
	}
	if o.settle <= 0 {
		return usagef("--settle %s: must be positive", o.settle)
	}
	if o.announce <= 0 {
		return usagef("--announce-interval %s: must be positive", o.announce)
	}
	if inv.flags.Changed("announce-interval") && !o.watchMode {
		return usagef("--announce-interval applies to --watch only")
	}
	if o.watchMode {
		if o.yaml {
			return usagef("-o yaml applies to one-shot discovery; --watch prints table or json")
		}
		for _, f := range []string{"dns-sd", "settle", "merge", "parsable"} {
			if inv.flags.Changed(f) {
				return usagef("--%s applies to one-shot discovery, not to --watch", f)
			}
		}
	}
	if o.watchMode {
		ctx := inv.ctx
		if inv.flags.Changed("timeout") {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.timeout)
			defer cancel()
		}
		return watch(ctx, inv.stdout, watchOptions{groups: cfg.Groups, locators: cfg.Locators,
			announcementInterval: o.announce, noMulticast: sc.noMulticast, include: sc.include, exclude: cfg.Exclude,
			excludeDefaultRoute: sc.noDefault, ttl: o.ttl, json: o.asJSON, log: log})
	}
	results, err := finder.Find(inv.ctx, cfg)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(inv.stdout)
	switch {
	case o.asJSON:
		enc := json.NewEncoder(out)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	case o.parsable:
		writeParsable(out, results)
	case o.yaml:
		p := &printer{w: out, format: formatYAML}
		for _, r := range results {
			b, _ := json.Marshal(r) // plain data: cannot fail
			if err := p.raw(b); err != nil {
				return err
			}
		}
	default:
		writeResults(out, results, o.merge)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if !slices.ContainsFunc(results, func(r finder.Result) bool { return r.Error == "" }) {
		return errors.New("no lookup services found")
	}
	return nil
}

// writeResults prints the table: a line per lookup service, interface
// and family, or per lookup service when merged.
func writeResults(w io.Writer, results []finder.Result, merged bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if merged {
		fmt.Fprintln(tw, "SERVICE ID\tADDRESS\tINTERFACES\tGROUPS\tVERSIONS\tFOUND BY\tREGISTRAR")
	} else {
		fmt.Fprintln(tw, "INTERFACE\tFAMILY\tSERVICE ID\tADDRESS\tGROUPS\tVERSIONS\tFOUND BY\tREGISTRAR")
	}
	for _, r := range results {
		id := cmp.Or(r.ServiceID, "-")
		iface := cmp.Or(r.Interface, "-")
		reg := ""
		switch {
		case r.Error != "":
			reg = "unreachable: " + r.Error
		case r.Kind == "jinid":
			reg = "jinid " + r.APIURL
		default:
			reg = fmt.Sprintf("java (proxy %d bytes)", r.ProxySize)
		}
		// What a lookup service said (its groups, ServiceID, address,
		// API URL, an error) is shown, never sent to the terminal.
		shown := func(s string) string { return printable.String(s) }
		if merged {
			ifaces := iface
			if len(r.Interfaces) > 0 {
				ifaces = strings.Join(r.Interfaces, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shown(id), shown(r.Address), ifaces, shown(discovery.GroupsText(r.Groups, ",")), versionsText(r.Versions),
				strings.Join(r.How, ","), shown(reg))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", iface, familyText(r.Family), shown(id), shown(r.Address), shown(discovery.GroupsText(r.Groups, ",")),
			versionsText(r.Versions), strings.Join(r.How, ","), shown(reg))
	}
	tw.Flush()
}

// writeParsable prints a line per result, fields in a fixed order (see
// the command's help).
func writeParsable(w io.Writer, results []finder.Result) {
	for _, r := range results {
		status, registrar := "=", ""
		switch {
		case r.Error != "":
			status = "!"
		case r.Kind == "jinid":
			registrar = r.APIURL
		default:
			registrar = strconv.Itoa(r.ProxySize)
		}
		ifaces := []string{r.Interface}
		if len(r.Interfaces) > 0 {
			ifaces = r.Interfaces
		}
		groups := make([]string, len(r.Groups))
		for i, g := range r.Groups {
			groups[i] = cmp.Or(escapeField(g), "(public)")
		}
		if len(groups) == 0 {
			groups = []string{"(none)"}
		}
		var versions []string
		for _, v := range r.Versions {
			versions = append(versions, strconv.Itoa(v))
		}
		family := ""
		if r.Family != 0 {
			family = familyText(r.Family)
		}
		fields := []string{status, joinEscaped(ifaces), family, r.ServiceID, escapeField(r.Address), strings.Join(groups, ","),
			strings.Join(versions, ","), strings.Join(r.How, ","), r.Kind, escapeField(registrar), escapeField(r.Error)}
		fmt.Fprintln(w, strings.Join(fields, ";"))
	}
}

func joinEscaped(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = escapeField(s)
	}
	return strings.Join(out, ",")
}

func familyText(f int) string {
	if f == 0 {
		return "-"
	}
	return "IPv" + strconv.Itoa(f)
}

func versionsText(vs []int) string {
	if len(vs) == 0 {
		return "-"
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "v" + strconv.Itoa(v)
	}
	return strings.Join(out, ",")
}

//go:build !jinid_omit_tools

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/finder"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/manager"
	"github.com/jinid/jinid/discovery/mcast"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/printable"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

const browseLong = `List every service registered in the lookup services on the LAN, as
avahi-browse -a -r lists DNS-SD services: discover the lookup services
(multicast and --locator, as "jinid discover"), read each one's services
(a jinid's over its HTTP API, a Java lookup service's, such as Reggie,
over Jini ERI as a Java client would), and print each service once,
merged by ServiceID, with its types, name, endpoint and the lookup
services that hold it.

Columns: SERVICE ID, TYPES, NAME (of its Name or ServiceInfo entry),
ENDPOINT (what the service says of where it is: a jinid item's endpoint,
a Jini ERI proxy's host and port), LOOKUP SERVICES (host:port of each
lookup service holding it), ATTRIBUTES. -o json prints
{"services":[...],"lookupServices":[...]} with every attribute and each
lookup service's ServiceID, kind and, for one that could not be read,
why. A lookup service that cannot be read is named on stderr; the exit
status is 1 when none could be.

Each lookup service is read as soon as it answers; the listing ends once
every one found has been read and nothing new came for --settle (0.3 s)
after the last of discovery's two requests (half a second apart), or at
--timeout.

--type and --attr narrow the list as a template does (as "jinid lookup
query"); a Java lookup service is asked with the same template.

--watch lists what is there, then prints a line per service that comes
(+), goes (-) or changes (=: its types, attributes, endpoint or the
lookup services holding it) until Ctrl-C, checking every lookup service
every --interval and following lookup services as they come and go. A
jinid whose API stops answering is looked for where it announces from
now (a cluster whose holder changed, a jinid started on another host),
and read there. -t stamps each line with the time it was seen.`

// browseOptions are browse's flags.
type browseOptions struct {
	g         *globalFlags
	tf        templateFlags
	out       outputFlags
	scope     scopeFlags
	timeout   time.Duration
	settle    time.Duration
	watchMode bool
	interval  time.Duration
	stamps    bool
}

func newBrowseCmd(g *globalFlags) *spec {
	o := &browseOptions{g: g}
	cmd := &spec{
		use:   "browse [--groups a,b | --all-groups] [--locator jini://host[:port] ...] [--type T] [--attr A ...] [--watch]",
		short: "List every service in every lookup service on the LAN (jinid and Java), once each",
		long:  browseLong,
		example: `  jinid browse
  jinid browse --type com.example.Printer -o json
  jinid browse --locator jini://lookup.example.org --no-multicast -o parsable
  jinid browse --watch --groups lab`,
		run: func(inv *invocation, _ []string) error { return o.run(inv) },
	}
	o.bind(cmd.Flags())
	o.tf.add(cmd)
	o.out.add(cmd)
	return cmd
}

func (o *browseOptions) bind(f *pflag.FlagSet) {
	o.scope.bind(f, "do not multicast; only the --locator lookup services")
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "the longest discovery takes, and reading each lookup service")
	f.DurationVar(&o.settle, "settle", browseSettle, "end once every lookup service found is read and nothing new came for this long after the last request")
	f.BoolVar(&o.watchMode, "watch", false, "keep listing: print each service that comes (+), goes (-) or changes (=) until Ctrl-C")
	f.DurationVar(&o.interval, "interval", time.Second/2, "with --watch: how often every lookup service is read")
	f.BoolVarP(&o.stamps, "timestamps", "t", false, "with --watch: begin each line with the time it was seen (RFC 3339, UTC)")
}

func (o *browseOptions) run(inv *invocation) error {
	log, err := o.g.commandLogger(inv)
	if err != nil {
		return usageError{err: err}
	}
	p, err := o.out.printer(inv.stdout)
	if err != nil {
		return err
	}
	t, err := o.tf.template()
	if err != nil {
		return err
	}
	sc, err := o.scope.resolve(inv)
	if err != nil {
		return err
	}
	if o.timeout <= 0 || o.interval <= 0 || o.settle <= 0 {
		return usagef("--timeout, --settle and --interval must be positive")
	}
	if inv.flags.Changed("settle") && o.watchMode {
		return usagef("--settle applies to one listing, not --watch")
	}
	if inv.flags.Changed("interval") && !o.watchMode {
		return usagef("--interval applies to --watch only")
	}
	if o.stamps && !o.watchMode {
		return usagef("--timestamps applies to --watch only")
	}
	b := &browser{tmpl: t, timeout: o.timeout, log: log, stderr: inv.stderr, dial: (&net.Dialer{}).DialContext, stamps: o.stamps}
	if o.watchMode {
		if p.format == formatYAML {
			return usagef("-o yaml applies to one listing; --watch prints table, json or parsable lines")
		}
		return b.watch(inv.ctx, p, watchOptions{groups: sc.groups, locators: sc.locators, announcementInterval: group.DefaultAnnouncementInterval,
			noMulticast: sc.noMulticast, include: sc.include, exclude: sc.exclude, excludeDefaultRoute: sc.noDefault, ttl: mcast.DefaultTTL, log: log}, o.interval)
	}
	// Each lookup service is read as soon as it answers, while the round
	// goes on: the round ends once every one found is read and nothing
	// new came for --settle (it read them all after a fixed round: 1.5
	// times avahi-browse's time).
	var mu sync.Mutex
	early := map[string]sourceView{}
	sem := make(chan struct{}, maxParallelReads)
	found := func(r finder.Result) {
		sem <- struct{}{}
		defer func() { <-sem }()
		s := &source{id: r.ServiceID, addr: r.Address, kind: r.Kind, apiURL: r.APIURL}
		rctx, cancel := context.WithTimeout(inv.ctx, b.timeout)
		defer cancel()
		items, err := b.read(rctx, s)
		mu.Lock()
		defer mu.Unlock()
		early[r.ServiceID] = sourceView{src: s, items: items, err: err}
	}
	results, err := finder.Find(inv.ctx, finder.Config{Groups: sc.groups, Locators: sc.locators, Timeout: o.timeout, Settle: o.settle, Merge: true,
		NoMulticast: sc.noMulticast, Include: sc.include, Exclude: sc.exclude, ExcludeDefaultRoute: sc.noDefault, Logger: log, Found: found})
	defer func() {
		for _, v := range early {
			closeSources([]*source{v.src})
		}
	}()
	if err != nil {
		return err
	}
	var srcs []*source
	var why []string
	for _, r := range results {
		if r.Error != "" || r.ServiceID == "" {
			// What a locator gave instead (as discover prints it).
			if r.Error != "" {
				why = append(why, r.Address+": "+printable.String(r.Error))
			}
			continue
		}
		srcs = append(srcs, &source{id: r.ServiceID, addr: r.Address, kind: r.Kind, apiURL: r.APIURL})
	}
	defer closeSources(srcs)
	if len(srcs) == 0 {
		if len(why) > 0 {
			return fmt.Errorf("no lookup services found (%s)", strings.Join(why, "; "))
		}
		return errors.New("no lookup services found")
	}
	// What was read during the round is shown at the lookup service's
	// best address, as the round's results give it; the rest is read now.
	views := make([]sourceView, len(srcs))
	var unread []*source
	var at []int
	for i, s := range srcs {
		if v, ok := early[s.id]; ok {
			v.src.addr = s.addr
			views[i] = v
			continue
		}
		unread, at = append(unread, s), append(at, i)
	}
	for j, v := range b.readAll(inv.ctx, unread) {
		views[at[j]] = v
	}
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(inv.stderr, "jinid browse: lookup service at %s: %s\n", printable.String(r.Address), printable.String(r.Error))
		}
	}
	for _, v := range views {
		if v.err != nil {
			fmt.Fprintf(inv.stderr, "jinid browse: %s\n", printable.String(v.err.Error()))
		}
	}
	if err := printBrowse(p, mergeViews(views), views); err != nil {
		return err
	}
	if !slices.ContainsFunc(views, func(v sourceView) bool { return v.err == nil }) {
		return errors.New("no lookup service could be read")
	}
	return nil
}

// browser reads lookup services' contents with one template.
type browser struct {
	tmpl    apitypes.Template
	timeout time.Duration
	log     *slog.Logger
	stderr  io.Writer
	dial    reggie.DialFunc

	once   sync.Once
	codec  *reggie.Codec
	cdcErr error
	// stamps: --watch lines begin with the time they were seen.
	stamps bool
}

// source is one lookup service browse reads.
type source struct {
	id, addr, kind, apiURL string
	// marshalled is a Java registrar's proxy, when discovery gave it.
	marshalled []byte

	api    *client.Client
	remote *reggie.Remote
}

func closeSources(srcs []*source) {
	for _, s := range srcs {
		if s.remote != nil {
			s.remote.Close()
		}
	}
}

// sourceView is what one read of a lookup service gave.
type sourceView struct {
	src   *source
	items []apitypes.Item
	err   error
}

// browseSettle is how long a listing waits for more answers after its
// last request and its reads: a LAN's lookup services answer a request
// within milliseconds.
const browseSettle = 300 * time.Millisecond

// maxBrowseItems bounds what is read of one lookup service.
const maxBrowseItems = reggie.MaxRemoteMatches

// maxParallelReads bounds the lookup services read at once.
const maxParallelReads = 8

// readAll reads every source, a few at a time; a source that cannot be
// read is named on stderr.
func (b *browser) readAll(ctx context.Context, srcs []*source) []sourceView {
	out := make([]sourceView, len(srcs))
	sem := make(chan struct{}, maxParallelReads)
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rctx, cancel := context.WithTimeout(ctx, b.timeout)
			defer cancel()
			items, err := b.read(rctx, s)
			out[i] = sourceView{src: s, items: items, err: err}
		}()
	}
	wg.Wait()
	return out
}

// read lists what a lookup service holds that the template matches.
func (b *browser) read(ctx context.Context, s *source) ([]apitypes.Item, error) {
	if s.kind == "jinid" && s.apiURL != "" {
		if s.api == nil {
			hc, err := apiHTTP(s.apiURL, "")
			if err != nil {
				return nil, err
			}
			if s.api, err = client.New(s.apiURL, hc); err != nil {
				return nil, err
			}
		}
		items, err := s.api.QueryItems(ctx, b.tmpl, maxBrowseItems)
		if err != nil {
			return nil, fmt.Errorf("reading %s over its API (%s): %w", s.addr, s.apiURL, err)
		}
		return items.Items, nil
	}
	if s.remote == nil {
		b.once.Do(func() {
			l, err := lineage.JGDMS()
			if err == nil {
				b.codec, err = reggie.NewCodec(l)
			}
			b.cdcErr = err
		})
		if b.cdcErr != nil {
			return nil, b.cdcErr
		}
		m := s.marshalled
		if m == nil {
			// Discovery told where, not the proxy: ask for it.
			loc, err := discovery.ParseLocator("jini://" + s.addr)
			if err != nil {
				return nil, fmt.Errorf("lookup service at %s: %w", s.addr, err)
			}
			resp, err := unicast.DialLocator(ctx, b.dial, loc)
			if err != nil {
				return nil, fmt.Errorf("unicast discovery of %s: %w", s.addr, err)
			}
			m = resp.Registrar.Marshalled
		}
		r, err := b.codec.NewRemote(m, b.dial)
		if err != nil {
			return nil, fmt.Errorf("lookup service at %s: %w", s.addr, err)
		}
		s.remote = r
	}
	items, _, err := s.remote.Lookup(ctx, javaTemplate(b.tmpl), maxBrowseItems)
	if err != nil {
		return nil, fmt.Errorf("reading %s over Jini ERI (%s): %w", s.addr, s.remote.Address(), err)
	}
	out := make([]apitypes.Item, 0, len(items))
	for _, it := range items {
		ai := apitypes.Item{ServiceID: it.ServiceID, Types: it.Types, Endpoint: it.Endpoint, Attributes: []apitypes.Attribute{}}
		if ai.Types == nil && it.Class != "" {
			ai.Types = []string{it.Class}
		}
		for _, a := range it.Attributes {
			ai.Attributes = append(ai.Attributes, apitypes.Attribute{Type: a.Type, Supertypes: a.Supertypes, Fields: a.Fields})
		}
		out = append(out, ai)
	}
	return out, nil
}

func javaTemplate(t apitypes.Template) reggie.Template {
	out := reggie.Template{ServiceID: t.ServiceID, Types: t.Types}
	for _, a := range t.Attributes {
		out.Attributes = append(out.Attributes, reggie.Entry{Type: a.Type, Fields: a.Fields})
	}
	return out
}

// browsed is one service as browse prints it.
type browsed struct {
	item    apitypes.Item
	holders holderList
}

// holder is a lookup service that holds a service.
type holder struct {
	ServiceID string `json:"serviceID"`
	Address   string `json:"address"`
	Kind      string `json:"kind"`
}

// holderList prints as addresses in a table, as objects in JSON.
type holderList []holder

func (h holderList) String() string { return strings.Join(h.elems(), ",") }

func (h holderList) elems() []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = x.Address
	}
	return out
}

// mergeViews merges what every lookup service gave by ServiceID, in
// ServiceID order: a service's types are all any lookup service gave,
// its attributes and endpoint the first's that has them — first in one
// order whatever order the reads came back in (jinids before Java
// lookup services, then by address): a service two of them hold is
// shown in one form, not in each's by turns (a watch printed an "="
// line for it every second, its attributes with and without their
// supertypes).
func mergeViews(views []sourceView) []browsed {
	views = slices.Clone(views)
	slices.SortStableFunc(views, func(x, y sourceView) int {
		if xj, yj := x.src.kind == "jinid", y.src.kind == "jinid"; xj != yj {
			if xj {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.src.addr, y.src.addr)
	})
	by := map[string]*browsed{}
	for _, v := range views {
		for _, it := range v.items {
			b := by[it.ServiceID]
			if b == nil {
				b = &browsed{item: it}
				b.item.Types = slices.Clone(it.Types)
				by[it.ServiceID] = b
			} else {
				for _, t := range it.Types {
					if !slices.Contains(b.item.Types, t) {
						b.item.Types = append(b.item.Types, t)
					}
				}
				if len(b.item.Attributes) == 0 {
					b.item.Attributes = it.Attributes
				}
				b.item.Endpoint = cmp.Or(b.item.Endpoint, it.Endpoint)
			}
			b.holders = append(b.holders, holder{ServiceID: v.src.id, Address: v.src.addr, Kind: v.src.kind})
		}
	}
	out := make([]browsed, 0, len(by))
	for _, b := range by {
		slices.SortFunc(b.holders, func(x, y holder) int { return cmp.Compare(x.Address, y.Address) })
		out = append(out, *b)
	}
	slices.SortFunc(out, func(x, y browsed) int { return cmp.Compare(x.item.ServiceID, y.item.ServiceID) })
	return out
}

// serviceName is what a service's well-known entries call it: a Name
// entry's name, else a ServiceInfo's.
func serviceName(attrs []apitypes.Attribute) string {
	for _, class := range []string{"net.jini.lookup.entry.Name", "net.jini.lookup.entry.ServiceInfo"} {
		for _, a := range attrs {
			if a.Type == class {
				if n, ok := a.Fields["name"].(string); ok && n != "" {
					return n
				}
			}
		}
	}
	return ""
}

func browsedRecord(b browsed) record {
	return record{{"serviceID", b.item.ServiceID}, {"types", b.item.Types}, {"name", serviceName(b.item.Attributes)},
		{"endpoint", b.item.Endpoint}, {"lookupServices", b.holders}, {"attributes", attrList(b.item.Attributes)}}
}

// lookupRecord is a lookup service read, in -o json and yaml.
func lookupRecord(v sourceView) record {
	r := record{{"serviceID", v.src.id}, {"address", v.src.addr}, {"kind", v.src.kind}, {"services", len(v.items)}}
	if v.err != nil {
		r = append(r, field{"error", v.err.Error()})
	}
	return r
}

// printBrowse prints the merged services; in JSON and YAML also the
// lookup services read.
func printBrowse(p *printer, services []browsed, views []sourceView) error {
	rs := make([]record, len(services))
	for i, b := range services {
		rs[i] = browsedRecord(b)
	}
	if p.format == formatJSON || p.format == formatYAML {
		ls := make([]record, len(views))
		for i, v := range views {
			ls[i] = lookupRecord(v)
		}
		return p.one(record{{"services", rs}, {"lookupServices", ls}})
	}
	return p.list("services", rs, record{{"serviceID", nil}, {"types", nil}, {"name", nil}, {"endpoint", nil}, {"lookupServices", nil}, {"attributes", nil}})
}

// watch follows the lookup services discovery finds, reading each every
// interval, and prints what changes.
func (b *browser) watch(ctx context.Context, p *printer, o watchOptions, interval time.Duration) error {
	var mu sync.Mutex
	srcs := map[discovery.ServiceID]*source{}
	onEvent := func(e manager.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == discovery.Discarded {
			if s := srcs[e.ID]; s != nil {
				closeSources([]*source{s})
				delete(srcs, e.ID)
			}
			return
		}
		s := &source{id: e.ID.String(), addr: discovery.HostPort(e.Host, e.Port), kind: "java", marshalled: e.Registrar.Marshalled}
		if d := e.Registrar.Descriptor; d != nil {
			s.kind, s.apiURL, s.marshalled = "jinid", d.APIURL, nil
		}
		if old := srcs[e.ID]; old != nil {
			closeSources([]*source{old})
		}
		srcs[e.ID] = s
	}
	// Where each lookup service last announced from, and the manager once
	// it runs: when a jinid's API stops answering (a cluster's holder
	// changed, a jinid started again elsewhere), its announcements say
	// where it is now, but no event does, and the registrar discovery
	// holds is the one first found. The watch asks the lookup service
	// there for its registrar, as a one-shot browse would.
	var mgr atomic.Pointer[manager.Manager]
	heard := map[discovery.ServiceID]string{}
	o.started = func(m *manager.Manager) { mgr.Store(m) }
	o.announced = func(a discovery.Announcement) {
		mu.Lock()
		defer mu.Unlock()
		if srcs[a.ServiceID] != nil {
			heard[a.ServiceID] = discovery.HostPort(a.Host, a.Port)
		}
	}
	followMoves := func(ctx context.Context, failed []*source) {
		var where []string
		mu.Lock()
		for _, s := range failed {
			id, _ := discovery.ParseServiceID(s.id)
			where = append(where, heard[id])
		}
		mu.Unlock()
		if m := mgr.Load(); m != nil {
			for _, d := range m.Discovered() {
				for i, s := range failed {
					if where[i] == "" && d.ID.String() == s.id && d.Port != 0 {
						where[i] = discovery.HostPort(d.Host, d.Port)
					}
				}
			}
		}
		moved := make([]string, len(failed)) // the API URL each is at now
		var wg sync.WaitGroup
		for i, s := range failed {
			if where[i] == "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				moved[i] = apiURLAt(ctx, where[i], s)
			}()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for i, s := range failed {
			id, _ := discovery.ParseServiceID(s.id)
			if moved[i] != "" && srcs[id] == s {
				closeSources([]*source{s})
				srcs[id] = &source{id: s.id, addr: where[i], kind: "jinid", apiURL: moved[i]}
			}
		}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- runDiscovery(ctx, o, onEvent) }()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range srcs {
			closeSources([]*source{s})
		}
	}()

	last := map[string]string{}   // ServiceID: its line, as JSON
	held := map[string][]string{} // ServiceID: the lookup services holding it
	failing := map[string]bool{}  // lookup services whose last read failed
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if m := mgr.Load(); m != nil {
			mu.Lock()
			learnPorts(srcs, m.Discovered())
			mu.Unlock()
		}
		mu.Lock()
		list := make([]*source, 0, len(srcs))
		for _, s := range srcs {
			list = append(list, s)
		}
		mu.Unlock()
		views := b.readAll(ctx, list)
		if ctx.Err() != nil {
			break
		}
		var failed []*source
		for _, v := range views {
			if v.err != nil && v.src.kind == "jinid" {
				failed = append(failed, v.src)
			}
		}
		followMoves(ctx, failed)
		for _, v := range views {
			if v.err != nil && !failing[v.src.id] {
				fmt.Fprintf(b.stderr, "jinid browse: %s\n", printable.String(v.err.Error()))
			}
			failing[v.src.id] = v.err != nil
		}
		now, nowHeld := map[string]string{}, map[string][]string{}
		var changes []record
		for _, s := range mergeViews(views) {
			r := browsedRecord(s)
			line := string(jsonOf(r))
			now[s.item.ServiceID] = line
			for _, h := range s.holders {
				nowHeld[s.item.ServiceID] = append(nowHeld[s.item.ServiceID], h.ServiceID)
			}
			switch prev, ok := last[s.item.ServiceID]; {
			case !ok:
				changes = append(changes, append(record{{"change", "+"}}, r...))
			case prev != line:
				changes = append(changes, append(record{{"change", "="}}, r...))
			}
		}
		for sid, line := range last {
			if _, ok := now[sid]; ok {
				continue
			}
			// A lookup service that could not be read this time says
			// nothing of what it holds: a service goes when every one
			// that held it was read without it.
			if slices.ContainsFunc(held[sid], func(id string) bool { return failing[id] }) {
				now[sid], nowHeld[sid] = line, held[sid]
				continue
			}
			changes = append(changes, record{{"change", "-"}, {"serviceID", sid}})
		}
		slices.SortFunc(changes, func(x, y record) int { return cmp.Compare(text(x[1].value), text(y[1].value)) })
		seen := time.Now().UTC().Format(time.RFC3339)
		for _, c := range changes {
			if b.stamps {
				c = append(record{{"time", seen}}, c...)
			}
			if err := printBrowseChange(p, c); err != nil {
				return err
			}
		}
		last, held = now, nowHeld
		select {
		case <-ctx.Done():
		case err := <-errc:
			return err
		case <-tick.C:
			continue
		}
		break
	}
	// Ctrl-C: the watch ends, cleanly, once discovery has stopped.
	stop()
	return <-errc
}

// apiURLAt asks the lookup service at addr (host:port) for its registrar
// by unicast discovery and returns its API URL if it is s's lookup
// service and the URL is not the one s reads ("" otherwise).
func apiURLAt(ctx context.Context, addr string, s *source) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := unicast.DiscoverAt(ctx, (&net.Dialer{}).DialContext, addr, discovery.ProtocolV2)
	if err != nil {
		return ""
	}
	ls := unicast.NewLookupService(resp, discovery.ServiceID{})
	d := ls.Registrar.Descriptor
	if ls.ID.String() != s.id || d == nil || d.APIURL == s.apiURL {
		return ""
	}
	return d.APIURL
}

// learnPorts gives a lookup service first known without its port (a Java
// one's version 1 answer lacks it: "host:?") the port discovery has learnt
// since, from an announcement or another answer, as a one-shot browse
// shows it. No event tells of it: the manager keeps it in its view. Only
// an unknown port is filled in, so that a lookup service heard over two
// links does not flip between its addresses.
func learnPorts(srcs map[discovery.ServiceID]*source, now []manager.Discovered) {
	for _, d := range now {
		s := srcs[d.ID]
		if s == nil || d.Port == 0 || !strings.HasSuffix(s.addr, ":?") {
			continue
		}
		s.addr = discovery.HostPort(d.Host, d.Port)
	}
}

// printBrowseChange prints one line of --watch.
func printBrowseChange(p *printer, r record) error {
	if p.format != formatTable {
		return p.item(r)
	}
	parts := make([]string, 0, len(r))
	for _, f := range r {
		parts = append(parts, text(f.value))
	}
	_, err := fmt.Fprintln(p.w, strings.Join(parts, "  "))
	return err
}

// runDiscovery runs a discovery manager until ctx ends, as discover
// --watch does, handing each event to onEvent.
func runDiscovery(ctx context.Context, o watchOptions, onEvent func(manager.Event)) error {
	cfg := manager.Config{Groups: o.groups, Locators: o.locators, OnEvent: onEvent, Logger: o.log,
		Group: group.Config{AnnouncementInterval: o.announcementInterval, Network: group.UnicastNetwork{}}}
	if o.noMulticast {
		cfg.Groups = []string{}
		return runManager(ctx, cfg, nil, o)
	}
	host, err := mcast.NewNetlinkHost(mcast.HostConfig{Logger: o.log, Include: o.include, Exclude: o.exclude, ExcludeDefaultRoute: o.excludeDefaultRoute, TTL: o.ttl})
	if err != nil {
		return err
	}
	defer host.Shutdown(context.Background())
	if err := host.Start(ctx); err != nil {
		return err
	}
	mc, err := group.NewMulticast(group.MulticastConfig{Host: host, Logger: o.log})
	if err != nil {
		return err
	}
	cfg.Group.Network = mc
	return runManager(ctx, cfg, mc, o)
}

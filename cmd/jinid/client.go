//go:build !jinid_omit_tools

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jinid/jinid/internal/printable"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// leaseFlag parses a lease duration: a Go duration, "any" or "forever".
func leaseFlag(s string) (int64, error) {
	switch strings.ToLower(s) {
	case "any":
		return apitypes.Any, nil
	case "forever":
		return apitypes.Forever, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, usagef("--duration %q: want a positive duration (30s, 10m, 2h), any or forever", s)
	}
	return d.Milliseconds(), nil
}

// parseAttr reads TYPE or TYPE:field=value,field=value. A value is text
// unless its field says its type: floor:int=2, ratio:float=0.5,
// ok:bool=true, or any JSON with :json (tags:json=["a","b"]). An entry's
// fields are typed in Java, and a query matches only a value of the same
// type: text "2" is not the number 2, so the type is said, not guessed.
func parseAttr(s string) (apitypes.Attribute, error) {
	typ, fields, _ := strings.Cut(s, ":")
	if typ == "" {
		return apitypes.Attribute{}, usagef("--attr %q: want TYPE or TYPE:field=value,...", s)
	}
	if !apitypes.JavaName(typ) {
		return apitypes.Attribute{}, usagef("--attr %q: %q is not a Java class name (such as net.jini.lookup.entry.Name)", s, typ)
	}
	a := apitypes.Attribute{Type: typ, Fields: map[string]any{}}
	if fields == "" {
		return a, nil
	}
	for _, kv := range strings.Split(fields, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return apitypes.Attribute{}, usagef("--attr %q: %q is not field=value (or field:int=2, :float, :bool, :json)", s, kv)
		}
		name, kind, _ := strings.Cut(k, ":")
		val, err := typedValue(kind, v)
		if err != nil {
			return apitypes.Attribute{}, usagef("--attr %q: field %s: %v", s, name, err)
		}
		a.Fields[name] = val
	}
	return a, nil
}

// typedValue is v as the type kind names ("" for text).
func typedValue(kind, v string) (any, error) {
	switch kind {
	case "", "string":
		return v, nil
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", v)
		}
		return n, nil
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		return f, nil
	case "bool":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", v)
		}
		return b, nil
	case "json":
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			return nil, fmt.Errorf("%q is not JSON", v)
		}
		return x, nil
	}
	return nil, fmt.Errorf("type %q: want int, float, bool, json or string", kind)
}

// templateFlags are the flags that build a template or an item.
type templateFlags struct {
	serviceID string
	types     []string
	attrs     []string
}

// connector opens a client of the API a command's flags name.
type connector = func() (*client.Client, error)

// add puts the API flags on a command group.
func (f *apiFlags) add(cmd *spec) { f.bind(cmd.PersistentFlags()) }

func (f *templateFlags) add(cmd *spec) {
	cmd.Flags().StringVar(&f.serviceID, "service-id", "", "ServiceID (UUID form)")
	cmd.Flags().StringSliceVar(&f.types, "type", nil, "type name, e.g. com.example.Printer (repeatable)")
	cmd.Flags().StringArrayVar(&f.attrs, "attr", nil, "attribute TYPE[:field=value,...] (repeatable), e.g. net.jini.lookup.entry.Name:name=lobby; values are text unless typed: floor:int=2, ok:bool=true, x:float=0.5, or any JSON with :json")
}

func (f *templateFlags) attributes() ([]apitypes.Attribute, error) {
	var out []apitypes.Attribute
	for _, s := range f.attrs {
		a, err := parseAttr(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// item checks what a registration gives: a type or an attribute, Java
// names.
func (f *templateFlags) check() error {
	if len(f.types) == 0 && len(f.attrs) == 0 {
		return usagef("give --type or --attr: an item with neither is found by nothing but its ServiceID")
	}
	for _, t := range f.types {
		if !apitypes.JavaName(t) {
			return usagef("--type %q: not a Java class or interface name (such as com.example.Printer)", t)
		}
	}
	return nil
}

func (f *templateFlags) template() (apitypes.Template, error) {
	for _, t := range f.types {
		if !apitypes.JavaName(t) {
			return apitypes.Template{}, usagef("--type %q: not a Java class or interface name (such as com.example.Printer)", t)
		}
	}
	attrs, err := f.attributes()
	return apitypes.Template{ServiceID: f.serviceID, Types: f.types, Attributes: attrs}, err
}

func newLookupCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "lookup",
		short: "Register, find and watch services in a jinid lookup service",
		long: `Client commands for the lookup service of a running jinid (--server).
Types and attributes follow the Jini matching rules: a template matches an
item when every type it names is among the item's, and each attribute
template matches one of the item's attributes (fields left out match
anything).`,
	}
	api.add(cmd)
	connect := api.connect
	cmd.AddCommand(lookupRegisterCmd(connect), lookupQueryCmd(connect), lookupListCmd(connect), lookupNotifyCmd(connect), lookupWatchCmd(connect))
	return cmd
}

func lookupRegisterCmd(connect connector) *spec {
	var reg templateFlags
	var out outputFlags
	var endpoint, dur string
	register := &spec{
		use:   "register --type T [--attr A ...] [--duration 5m]",
		short: "Register a service; prints its ServiceID and lease",
		example: `  jinid lookup register --type com.example.Printer --attr net.jini.lookup.entry.Name:name=lobby --duration 10m
  jinid lookup register --service-id 01234567-89ab-cdef-fedc-ba9876543210 --type com.example.Printer --duration forever`,
		run: func(inv *invocation, _ []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			d, err := leaseFlag(dur)
			if err != nil {
				return err
			}
			if err := reg.check(); err != nil {
				return err
			}
			attrs, err := reg.attributes()
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			r, err := c.Register(inv.ctx, apitypes.Item{ServiceID: reg.serviceID, Types: reg.types, Attributes: attrs, Endpoint: endpoint}, d)
			if err != nil {
				return err
			}
			noteCut(inv.stderr, d, r.Lease)
			if q, _ := inv.flags.GetBool("quiet"); q {
				return nil // -q: nothing printed on success, as every change
			}
			return p.one(record{{"serviceID", r.ServiceID}, {"lease", r.Lease.ID}, {"expires", expiry(r.Lease.Expiration)}})
		},
	}
	out.add(register)
	reg.add(register)
	register.Flags().StringVar(&endpoint, "endpoint", "", "where clients reach the service (any text, e.g. a URL)")
	register.Flags().StringVar(&dur, "duration", "5m", "lease duration: a duration, any or forever (a jinid grants at most its limits.serviceLeaseMax, 1 h by default: renew, or give the service to the renewal service)")
	return register
}

func lookupQueryCmd(connect connector) *spec {
	var q templateFlags
	var max int
	var out outputFlags
	query := &spec{
		use:     "query [--type T] [--attr A ...] [--max N]",
		short:   "Find services matching a template",
		example: `  jinid lookup query --type com.example.Printer --attr net.jini.lookup.entry.Name:name=lobby`,
		run: func(inv *invocation, _ []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			t, err := q.template()
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			got, err := c.QueryItems(inv.ctx, t, max)
			if err != nil {
				return err
			}
			if got.TotalMatches == 0 {
				if got.Hint != "" {
					fmt.Fprintf(inv.stderr, "no match: %s\n", printable.String(got.Hint))
				}
				typeHint(inv.stderr, t)
			}
			return printItems(p, inv.stderr, got)
		},
	}
	q.add(query)
	query.Flags().IntVar(&max, "max", 100, "most items to return")
	out.add(query)
	return query
}

func lookupListCmd(connect connector) *spec {
	var out outputFlags
	list := &spec{
		use:   "list",
		short: "List every registered service",
		run: func(inv *invocation, _ []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			all, err := c.Listing(inv.ctx)
			if err != nil {
				return err
			}
			return printItems(p, inv.stderr, all)
		},
	}
	out.add(list)
	return list
}

func lookupNotifyCmd(connect connector) *spec {
	var nt templateFlags
	var transitions []string
	var listenerURL, ndur string
	var out outputFlags
	notify := &spec{
		use:   "notify --listener URL [--type T] [--attr A ...]",
		short: "Have ServiceEvents POSTed to a listener when matching services come, change or go",
		example: `  jinid lookup notify --listener http://127.0.0.1:8080/events --type com.example.Printer --duration 30m
  jinid lookup notify --listener http://10.0.0.5/hook --transitions NOMATCH_MATCH`,
		run: func(inv *invocation, _ []string) error {
			p, err := out.printer(inv.stdout)
			if err != nil {
				return err
			}
			if listenerURL == "" {
				return usagef("--listener URL is required")
			}
			d, err := leaseFlag(ndur)
			if err != nil {
				return err
			}
			t, err := nt.template()
			if err != nil {
				return err
			}
			c, err := connect()
			if err != nil {
				return err
			}
			n, err := c.Notify(inv.ctx, client.NotifyRequest{Template: t, Transitions: transitions, Listener: listenerURL, Duration: d})
			if err != nil {
				return err
			}
			noteCut(inv.stderr, d, n.Lease)
			return p.one(record{{"registration", n.ID}, {"eventID", n.EventID}, {"seqNum", n.SeqNum},
				{"lease", n.Lease.ID}, {"expires", expiry(n.Lease.Expiration)}})
		},
	}
	out.add(notify)
	nt.add(notify)
	notify.Flags().StringSliceVar(&transitions, "transitions", []string{apitypes.MatchNoMatch, apitypes.NoMatchMatch, apitypes.MatchMatch}, "transitions to hear of")
	notify.Flags().StringVar(&listenerURL, "listener", "", "URL that events are POSTed to")
	notify.Flags().StringVar(&ndur, "duration", "30m", "lease duration: a duration, any or forever")
	return notify
}

// noteCut tells, on stderr, of a lease shorter than asked: what was
// granted, what was asked, and the limit that cut it (apitypes.Lease.Cut).
func noteCut(w io.Writer, asked int64, l apitypes.Lease) {
	if l.Cut == "" {
		return
	}
	granted := span(time.Duration(l.Remaining) * time.Millisecond).round()
	fmt.Fprintf(w, "granted %s, not the %s asked: the policy maximum (limits.%s)\n", granted, spanOf(asked), l.Cut)
}

// itemRecord is an item as the lookup commands print it, with when its
// registration ends (ms; 0: not said).
func itemRecord(it apitypes.Item, end int64) record {
	var exp any
	if end != 0 {
		exp = expiry(end)
	}
	return record{{"serviceID", it.ServiceID}, {"types", it.Types}, {"endpoint", it.Endpoint}, {"expires", exp},
		{"attributes", attrList(it.Attributes)}}
}

// expiry is a lease's end as the commands print it: its time, or
// "never" for a lease that is forever.
func expiry(ms int64) any {
	if ms == apitypes.Forever {
		return "never"
	}
	return instant(ms)
}

// attrList is an item's attributes: objects in JSON, TYPE{fields} in a
// table's one column.
type attrList []apitypes.Attribute

func (a attrList) String() string {
	if len(a) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(a))
	for _, at := range a {
		f, _ := json.Marshal(at.Fields) // plain data: cannot fail
		parts = append(parts, at.Type+string(f))
	}
	return strings.Join(parts, " ")
}

func (a attrList) MarshalJSON() ([]byte, error) {
	if a == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]apitypes.Attribute(a))
}

// typeHint says, when a query found nothing, which of its values are
// text that reads as another type: an entry's field of the number 2 is
// not matched by the text "2".
func typeHint(w io.Writer, t apitypes.Template) {
	for _, a := range t.Attributes {
		for k, v := range a.Fields {
			s, ok := v.(string)
			if !ok {
				continue
			}
			kind := ""
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				kind = "int"
			} else if _, err := strconv.ParseFloat(s, 64); err == nil {
				kind = "float"
			} else if _, err := strconv.ParseBool(s); err == nil {
				kind = "bool"
			}
			if kind != "" {
				fmt.Fprintf(w, "no match; %s=%s asks for the text %q: for a value of another type, say it (%s:%s=%s)\n", k, s, s, k, kind, s)
			}
		}
	}
}

func printItems(p *printer, stderr io.Writer, got apitypes.Items) error {
	items, total := got.Items, got.TotalMatches
	rs := make([]record, len(items))
	for i, it := range items {
		var end int64
		if i < len(got.Expirations) {
			end = got.Expirations[i]
		}
		rs[i] = itemRecord(it, end)
	}
	if p.format == formatJSON || p.format == formatYAML {
		// One object: the items, and how many matched in all.
		objs := make([]json.RawMessage, len(rs))
		for i, r := range rs {
			objs[i] = jsonOf(r)
		}
		return p.one(record{{"items", objs}, {"totalMatches", total}})
	}
	if err := p.list("items", rs, itemRecord(apitypes.Item{}, 0)); err != nil {
		return err
	}
	if total > len(items) {
		fmt.Fprintf(stderr, "(%d of %d matches shown)\n", len(items), total)
	}
	return nil
}

func newLeaseCmd() *spec {
	var api apiFlags
	var dur string
	var renewOut, cancelOut outputFlags
	cmd := &spec{
		use:   "lease",
		short: "Renew or cancel leases granted by a jinid",
	}
	api.add(cmd)
	renew := &spec{
		use:     "renew LEASE-ID... [--duration 5m]",
		short:   "Renew leases for a new duration from now (several: one batch)",
		example: `  jinid lease renew "$LEASE" --duration 10m      # LEASE: a lease ID lookup register (say) printed`,
		args:    minArgs(1),
		run: func(inv *invocation, args []string) error {
			p, err := renewOut.printer(inv.stdout)
			if err != nil {
				return err
			}
			d, err := leaseFlag(dur)
			if err != nil {
				return err
			}
			c, err := api.connect()
			if err != nil {
				return err
			}
			var rs []client.Renewal
			for _, id := range args {
				rs = append(rs, client.Renewal{ID: id, Duration: d})
			}
			res, err := c.RenewAll(inv.ctx, rs)
			if err != nil {
				return err
			}
			return printBatch(p, res, "renewed")
		},
	}
	renew.Flags().StringVar(&dur, "duration", "5m", "new duration: a duration, any or forever")
	cancel := &spec{
		use:   "cancel LEASE-ID...",
		short: "Cancel leases now (their resources go, as at expiry)",
		args:  minArgs(1),
		run: func(inv *invocation, args []string) error {
			p, err := cancelOut.printer(inv.stdout)
			if err != nil {
				return err
			}
			c, err := api.connect()
			if err != nil {
				return err
			}
			res, err := c.CancelAll(inv.ctx, args)
			if err != nil {
				return err
			}
			return printBatch(p, res, "cancelled")
		},
	}
	renewOut.add(renew)
	cancelOut.add(cancel)
	cmd.AddCommand(renew, cancel)
	return cmd
}

// printBatch prints one record per lease of a batch and fails if any
// did.
func printBatch(p *printer, res []apitypes.BatchResult, done string) error {
	failed := 0
	rs := make([]record, len(res))
	for i, r := range res {
		result, why := done, ""
		if r.Error != nil {
			failed++
			result, why = "failed", r.Error.Error()
		}
		var exp any
		if r.Expiration != 0 {
			exp = expiry(r.Expiration)
		}
		if r.Cut != "" {
			why = "cut to the policy maximum (limits." + r.Cut + ")"
		}
		rs[i] = record{{"lease", r.ID}, {"result", result}, {"expires", exp}, {"error", why}}
	}
	if err := p.list("leases", rs, record{{"lease", nil}, {"result", nil}, {"expires", nil}, {"error", nil}}); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d leases not %s", failed, len(res), done)
	}
	return nil
}

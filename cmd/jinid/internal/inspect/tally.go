package inspect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jinid/jinid/discovery"
)

// Statistics (-z) over the messages decoded, as tshark's -z gives them
// for the protocols it knows:
//
//	lookup     per lookup service: announcements, the interval observed
//	           between them, versions, groups, unicast responses
//	requester  per requester: multicast requests, versions, groups asked,
//	           unicast requests, responses received
//	jeri       per Jini ERI method: calls, exceptions, unanswered, latency
var TallyNames = []string{"lookup", "requester", "jeri"}

// Tally gathers the statistics asked for.
type Tally struct {
	want       map[string]bool
	lookups    map[string]*lookupTally
	requesters map[string]*requesterTally
	methods    map[string]*methodTally
}

// maxTallied bounds the lookup services, requesters and methods counted
// (a capture of a flood of made-up ones): the rest are left out.
const maxTallied = 10_000

type lookupTally struct {
	addrs         map[string]bool
	announcements int
	versions      map[int]bool
	groups        []string
	last          map[int]time.Time // the last announcement, by version
	gaps          []time.Duration
	responses     int
}

type requesterTally struct {
	multicast, unicast, responses int
	versions                      map[int]bool
	groups                        map[string]bool
}

type methodTally struct {
	calls, throws, unanswered int
	latencies                 []time.Duration
}

// NewTally returns a tally of the statistics named (TallyNames).
func NewTally(names []string) (*Tally, error) {
	t := &Tally{want: map[string]bool{}, lookups: map[string]*lookupTally{}, requesters: map[string]*requesterTally{}, methods: map[string]*methodTally{}}
	for _, n := range names {
		if !slices.Contains(TallyNames, n) {
			return nil, fmt.Errorf("-z %q: want one of %s", n, strings.Join(TallyNames, ", "))
		}
		t.want[n] = true
	}
	return t, nil
}

// Add counts a record.
func (t *Tally) Add(r Record) {
	if r.Error != "" {
		return
	}
	switch f := r.Fields.(type) {
	case *AnnouncementFields:
		l := t.lookup(f.ServiceID)
		if l == nil {
			return
		}
		l.addrs[discovery.HostPort(f.Host, f.Port)] = true
		l.announcements++
		l.versions[r.Version] = true
		l.groups = f.Groups
		if prev, ok := l.last[r.Version]; ok && len(l.gaps) < maxTallied {
			l.gaps = append(l.gaps, r.Time.Sub(prev))
		}
		l.last[r.Version] = r.Time
	case *UnicastResponseFields:
		if l := t.lookup(f.Registrar.ServiceID); l != nil {
			l.responses++
			l.addrs[discovery.HostPort(f.Host, f.Port)] = true
		}
		if q := t.requester(hostOnly(r.Destination)); q != nil {
			q.responses++
		}
	case *RequestFields:
		if q := t.requester(f.Host); q != nil {
			q.multicast++
			q.versions[r.Version] = true
			for _, g := range f.Groups {
				if len(q.groups) < 64 {
					q.groups[g] = true
				}
			}
		}
	case *UnicastRequestFields:
		if q := t.requester(hostOnly(r.Source)); q != nil {
			q.unicast++
			q.versions[r.Version] = true
		}
	case *JERICallFields:
		m := t.methods[f.Method]
		if m == nil {
			if len(t.methods) >= maxTallied {
				return
			}
			m = &methodTally{}
			t.methods[f.Method] = m
		}
		m.calls++
		switch f.Status {
		case "throw":
			m.throws++
		case "unanswered":
			m.unanswered++
		}
		if f.LatencyMicros > 0 && len(m.latencies) < maxTallied {
			m.latencies = append(m.latencies, time.Duration(f.LatencyMicros)*time.Microsecond)
		}
	}
}

func hostOnly(hostport string) string {
	h, _, _ := strings.Cut(strings.TrimPrefix(hostport, "["), "]:")
	if !strings.HasPrefix(hostport, "[") {
		h, _, _ = strings.Cut(hostport, ":")
	}
	return h
}

func (t *Tally) lookup(id string) *lookupTally {
	if id == "" {
		return nil
	}
	l := t.lookups[id]
	if l == nil {
		if len(t.lookups) >= maxTallied {
			return nil
		}
		l = &lookupTally{addrs: map[string]bool{}, versions: map[int]bool{}, last: map[int]time.Time{}}
		t.lookups[id] = l
	}
	return l
}

func (t *Tally) requester(host string) *requesterTally {
	if host == "" {
		return nil
	}
	q := t.requesters[host]
	if q == nil {
		if len(t.requesters) >= maxTallied {
			return nil
		}
		q = &requesterTally{versions: map[int]bool{}, groups: map[string]bool{}}
		t.requesters[host] = q
	}
	return q
}

// addresses are where a lookup service was seen, sorted; a host's
// "host:?" (a Java lookup service's version 1 answer, which lacks its
// port) only when no port of it is known.
func (l *lookupTally) addresses() []string {
	ported := map[string]bool{} // hosts with a port known
	for a := range l.addrs {
		if i := strings.LastIndexByte(a, ':'); i >= 0 && a[i+1:] != "?" {
			ported[a[:i]] = true
		}
	}
	var out []string
	for _, a := range slices.Sorted(maps.Keys(l.addrs)) {
		if host, ok := strings.CutSuffix(a, ":?"); ok && ported[host] {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Write prints the statistics asked for, a table each.
func (t *Tally) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if t.want["lookup"] {
		fmt.Fprintln(tw, "=== Lookup services ===")
		fmt.Fprintln(tw, "SERVICE ID\tADDRESS\tANNOUNCEMENTS\tINTERVAL\tVERSIONS\tGROUPS\tRESPONSES")
		for _, id := range slices.Sorted(maps.Keys(t.lookups)) {
			l := t.lookups[id]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\n", id, strings.Join(l.addresses(), ","), l.announcements,
				median(l.gaps), versions(l.versions), groupList(l.groups, "-"), l.responses)
		}
	}
	if t.want["requester"] {
		fmt.Fprintln(tw, "=== Requesters ===")
		fmt.Fprintln(tw, "HOST\tMULTICAST REQUESTS\tUNICAST REQUESTS\tRESPONSES\tVERSIONS\tGROUPS ASKED")
		for _, h := range slices.Sorted(maps.Keys(t.requesters)) {
			q := t.requesters[h]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", h, q.multicast, q.unicast, q.responses, versions(q.versions),
				groupList(slices.Sorted(maps.Keys(q.groups)), "(any)"))
		}
	}
	if t.want["jeri"] {
		fmt.Fprintln(tw, "=== Jini ERI methods ===")
		fmt.Fprintln(tw, "METHOD\tCALLS\tEXCEPTIONS\tUNANSWERED\tLATENCY MEDIAN\tLATENCY MAX")
		for _, m := range slices.Sorted(maps.Keys(t.methods)) {
			mt := t.methods[m]
			var most time.Duration
			for _, l := range mt.latencies {
				most = max(most, l)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", m, mt.calls, mt.throws, mt.unanswered, median(mt.latencies), dash(most))
		}
	}
	return tw.Flush()
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Microsecond).String()
}

func dash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Microsecond).String()
}

func versions(vs map[int]bool) string {
	var out []string
	for _, v := range slices.Sorted(maps.Keys(vs)) {
		out = append(out, fmt.Sprintf("v%d", v))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

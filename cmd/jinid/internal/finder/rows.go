package finder

import (
	"cmp"
	"slices"
	"strings"

	"github.com/jinid/jinid/discovery"
)

// howOrder is the order ways of being found are listed in.
var howOrder = []string{ViaAnnouncement, ViaRequest, ViaLocator, ViaSRV, ViaDNSSD}

// rows turns what was seen into results: one per lookup service,
// interface and family, or one per lookup service with merge. Which
// lookup service a sighting is of: its ServiceID; else (a Java lookup
// service's answer, whose ServiceID is inside its proxy) that of another
// sighting at the same host and port (a port of 0, not known, matching
// any); else its address. Nothing in a result depends on the order the
// sightings came in, but for groups that changed during the round (the
// newest are shown).
func rows(seen []sighting, merge bool) []Result {
	keys := serviceKeys(seen)
	type rowKey struct {
		service string
		iface   string
		family  int
	}
	groups := map[rowKey][]int{}
	var order []rowKey
	for i, s := range seen {
		k := rowKey{service: keys[i]}
		if !merge {
			k.iface, k.family = s.iface, discovery.Family(s.host)
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out []Result
	failed := map[string]bool{} // services already reported unreachable
	for _, k := range order {
		var ss []sighting
		for _, i := range groups[k] {
			ss = append(ss, seen[i])
		}
		r, ok := row(ss)
		if !ok {
			continue
		}
		if r.Error != "" && !merge {
			// Nothing answered on this interface and family: report it
			// only if nothing answered anywhere, once.
			if answeredAnywhere(seen, keys, k.service) || failed[k.service] {
				continue
			}
			failed[k.service] = true
		}
		if !strings.HasPrefix(k.service, "@") {
			r.ServiceID = k.service
		}
		if !merge {
			r.Interface, r.Family = k.iface, k.family
		}
		out = append(out, r)
	}
	slices.SortFunc(out, compareResults)
	return out
}

// compareResults orders results: those found first, by ServiceID (none
// last), then by their address, interface and family.
func compareResults(a, b Result) int {
	if (a.Error == "") != (b.Error == "") {
		if a.Error == "" {
			return -1
		}
		return 1
	}
	if (a.ServiceID == "") != (b.ServiceID == "") {
		if a.ServiceID != "" {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.ServiceID, b.ServiceID), cmp.Compare(a.Interface, b.Interface), cmp.Compare(a.Family, b.Family),
		discovery.CompareAddresses(a.Host, a.Port, b.Host, b.Port))
}

// serviceKeys says which lookup service each sighting is of: its
// ServiceID, or "@" and an address.
func serviceKeys(seen []sighting) []string {
	keys := make([]string, len(seen))
	sameAddr := func(a, b sighting) bool {
		return discovery.SameHost(a.host, b.host) && (a.port == b.port || a.port == 0 || b.port == 0)
	}
	for i, s := range seen {
		if s.id != "" {
			keys[i] = s.id
			continue
		}
		// The ServiceID of another sighting at its address: the smallest,
		// should there be several (for a result that does not depend on
		// arrival order).
		for _, o := range seen {
			if o.id != "" && sameAddr(s, o) && (keys[i] == "" || o.id < keys[i]) {
				keys[i] = o.id
			}
		}
		if keys[i] != "" {
			continue
		}
		// By address: at its port, or, a port not known, at the lowest
		// port known at its host.
		port := s.port
		for _, o := range seen {
			if o.id == "" && port == 0 && o.port != 0 && discovery.SameHost(s.host, o.host) && (port == 0 || o.port < port) {
				port = o.port
			}
		}
		keys[i] = "@" + discovery.HostPort(strings.ToLower(s.host), port)
	}
	return keys
}

func answeredAnywhere(seen []sighting, keys []string, service string) bool {
	for i, s := range seen {
		if keys[i] == service && s.err == "" {
			return true
		}
	}
	return false
}

// row builds the result of one lookup service's sightings (over one
// interface and family, or all); ok is false if there is nothing to say.
func row(ss []sighting) (r Result, ok bool) {
	type addr struct {
		host  string
		port  int
		iface string
	}
	var addrs []addr
	var ok2 []sighting // those not failures
	for _, s := range ss {
		if s.err != "" {
			continue
		}
		ok2 = append(ok2, s)
		i := slices.IndexFunc(addrs, func(a addr) bool {
			return discovery.SameHost(a.host, s.host) && (a.port == s.port || a.port == 0 || s.port == 0)
		})
		switch {
		case i < 0:
			addrs = append(addrs, addr{s.host, s.port, s.iface})
		case addrs[i].port == 0:
			addrs[i].port = s.port
		}
	}
	if len(ok2) == 0 {
		// Only failures: the first one says why.
		if len(ss) == 0 {
			return Result{}, false
		}
		f := ss[0]
		return Result{Host: f.host, Port: f.port, Address: discovery.HostPort(f.host, f.port), Groups: []string{}, How: []string{f.how},
			Error: f.err}, true
	}
	slices.SortFunc(addrs, func(a, b addr) int { return discovery.CompareAddresses(a.host, a.port, b.host, b.port) })
	best := addrs[0]
	r = Result{Host: best.host, Port: best.port, Address: discovery.HostPort(best.host, best.port), Family: discovery.Family(best.host)}
	for _, a := range addrs[1:] {
		r.Addresses = append(r.Addresses, discovery.HostPort(a.host, a.port))
	}
	for _, a := range addrs {
		if a.iface != "" && !slices.Contains(r.Interfaces, a.iface) {
			r.Interfaces = append(r.Interfaces, a.iface)
		}
	}
	slices.Sort(r.Interfaces)
	if len(r.Interfaces) == 1 {
		r.Interface = r.Interfaces[0]
	}
	for _, h := range howOrder {
		if slices.ContainsFunc(ss, func(s sighting) bool { return s.how == h && s.err == "" }) {
			r.How = append(r.How, h)
		}
	}
	var answers []sighting
	for _, s := range ok2 {
		if !slices.Contains(r.Versions, s.version) && s.version != 0 {
			r.Versions = append(r.Versions, s.version)
		}
		if s.answered {
			answers = append(answers, s)
		}
	}
	slices.Sort(r.Versions)
	// Groups: as the newest answer, or announcement, says.
	r.Groups = []string{}
	if len(answers) > 0 {
		r.Groups = answers[len(answers)-1].groups
	} else {
		r.Groups = ok2[len(ok2)-1].groups
	}
	if len(answers) == 0 {
		// Announced, but unicast discovery with it failed (the failure
		// says why) or did not end before the round did.
		r.Error = "announced, but unicast discovery did not answer in time"
		for _, s := range ss {
			if s.err != "" {
				r.Error = s.err
				break
			}
		}
		return r, true
	}
	// The registrar: a jinid one's API URL as answered at the best
	// address; a Java one's proxy as answered in the newest version.
	slices.SortStableFunc(answers, func(a, b sighting) int {
		return cmp.Or(discovery.CompareAddresses(a.host, a.port, b.host, b.port), cmp.Compare(b.version, a.version))
	})
	if i := slices.IndexFunc(answers, func(s sighting) bool { return s.kind == "jinid" }); i >= 0 {
		r.Kind, r.APIURL = "jinid", answers[i].apiURL
	} else {
		newest := slices.MaxFunc(answers, func(a, b sighting) int { return cmp.Compare(a.version, b.version) })
		r.Kind, r.ProxySize = "java", newest.proxy
	}
	if len(r.Interfaces) <= 1 {
		r.Interfaces = nil
	}
	return r, true
}

package status

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/access"
)

// style is the page's only style sheet, inlined: no external asset.
//
//go:embed page.css
var style string

// Page is everything the status page shows, gathered at the request.
type Page struct {
	Now      time.Time
	Version  string
	Identity Identity
	Ready    bool
	Checks   []Check
	// Multicast says how multicast discovery stands ("on (eth0)", "off",
	// "waiting ..."); Interfaces, each with its multicast state.
	Multicast  string
	Interfaces []Interface
	// LookupServices discovered by the daemon (its lookup discovery
	// service, and announcements heard), its own excluded.
	LookupServices []LookupService
	// Registered are the services registered in this lookup service: a
	// page of them (by ServiceID, after the page's cursor), how many
	// there are in all, and the cursor of the next page ("" for none).
	Registered      []Registered
	RegisteredTotal int
	RegisteredNext  string
	Counts          []Count
	Events          []Notable
	// Refresh is the reload period in seconds.
	Refresh int
}

// Identity is the daemon's own lookup service.
type Identity struct {
	ServiceID string
	Groups    []string
	// API and Unicast are where the API and unicast discovery listen.
	API, Unicast string
	DataDir      string
	Started      time.Time
}

// Check is a readiness check.
type Check struct {
	Name, Detail string
	OK           bool
}

// Interface is one of the host's interfaces.
type Interface struct {
	Name      string
	Addresses []string
	Served    bool
	State     string // why it is or is not served
}

// LookupService is one discovered.
type LookupService struct {
	ServiceID string
	Address   string
	Groups    []string
	Versions  []int
	How       string // "group (eth0)", "locator jini://…", "announcement (eth0)"
	Since     time.Time
	Kind      string // "jinid", "java", "announcing"
}

// Registered is one service registered here.
type Registered struct {
	ServiceID string
	Types     []string
	// Name is its net.jini.lookup.entry.Name, if it has one.
	Name, Endpoint string
	// Owner is who registered it (a token's ID, an anonymous caller's
	// address; "" an administrator): shown to administrators only.
	Owner string
	// Expires is when its registration ends; zero for never.
	Expires time.Time
}

// Count is one number of one service.
type Count struct {
	Service, What string
	N             int
}

// Handler serves the page gathered by gather at each request; after is
// the page of registered services asked for (?after=SERVICEID, the
// previous page's last).
func Handler(gather func(after string) Page) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		after := r.URL.Query().Get("after")
		if len(after) > 64 {
			after = "" // no ServiceID is that long
		}
		p := gather(after)
		if access.PrincipalOf(r.Context()).Scope != access.ScopeAdmin {
			// Where the store is on the host, and who registered what,
			// are for its administrator.
			p.Identity.DataDir = ""
			for i := range p.Registered {
				p.Registered[i].Owner = "-"
			}
		}
		Render(&b, p)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		// Nothing but the page itself: no script, no frame, no fetch.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodHead {
			w.Write(b.Bytes())
		}
	}
}

// Render writes the page. It is written in Go rather than with
// html/template: a template's reflection keeps the linker from dropping
// unused methods anywhere in the binary, which costs over 2 MB on mips.
// Every string from outside (names, groups, addresses, error details)
// is escaped.
func Render(b *bytes.Buffer, p Page) {
	e := func(s string) string { return html.EscapeString(s) }
	b.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(b, "<meta http-equiv=\"refresh\" content=\"%d\">\n<title>jinid %s</title>\n<style>\n%s</style>\n</head>\n<body>\n",
		p.Refresh, e(p.Identity.ServiceID), style)

	state := `<span class="ok" id="readiness">ready</span>`
	if !p.Ready {
		state = `<span class="bad" id="readiness">not ready</span>`
	}
	fmt.Fprintf(b, "<h1>jinid <span class=\"muted\">%s</span> — %s</h1>\n<dl id=\"identity\">\n", e(p.Version), state)
	for _, kv := range [][2]string{
		{"Lookup service", "<code>" + e(p.Identity.ServiceID) + "</code>"},
		{"Groups", e(discovery.GroupsText(p.Identity.Groups, ", "))},
		{"API", "<code>" + e(p.Identity.API) + "</code>"},
		{"Unicast discovery", "<code>" + e(p.Identity.Unicast) + "</code>"},
		{"Multicast", e(p.Multicast)},
		{"Store", store(p.Identity.DataDir)},
		{"Up", e(since(p.Now, p.Identity.Started)) + " (since " + stamp(p.Identity.Started) + ")"},
	} {
		fmt.Fprintf(b, "<dt>%s</dt><dd>%s</dd>\n", kv[0], kv[1])
	}
	b.WriteString("</dl>\n")

	table(b, "Readiness", "checks", []string{"Check", "State", "Detail"}, len(p.Checks), "", func(i int) (string, []string) {
		c := p.Checks[i]
		s := `<span class="ok">ok</span>`
		if !c.OK {
			s = `<span class="bad">failing</span>`
		}
		return "", []string{e(c.Name), s, e(c.Detail)}
	})
	table(b, "Interfaces", "interfaces", []string{"Interface", "Addresses", "Multicast discovery"}, len(p.Interfaces), "none",
		func(i int) (string, []string) {
			ifc := p.Interfaces[i]
			var addrs strings.Builder
			for _, a := range ifc.Addresses {
				addrs.WriteString("<code>" + e(a) + "</code> ")
			}
			cls := "muted"
			if ifc.Served {
				cls = "ok"
			}
			return `class="interface" data-name="` + e(ifc.Name) + `"`,
				[]string{e(ifc.Name), addrs.String(), `<span class="` + cls + `">` + e(ifc.State) + `</span>`}
		})
	table(b, "Lookup services discovered ("+strconv.Itoa(len(p.LookupServices))+")", "lookup-services",
		[]string{"ServiceID", "Address", "Groups", "Versions", "Found by", "Age"}, len(p.LookupServices), "none yet",
		func(i int) (string, []string) {
			ls := p.LookupServices[i]
			vs := make([]string, len(ls.Versions))
			for i, v := range ls.Versions {
				vs[i] = "v" + strconv.Itoa(v)
			}
			return `class="lookup-service" data-id="` + e(ls.ServiceID) + `"`, []string{
				"<code>" + e(ls.ServiceID) + "</code> <span class=\"muted\">" + e(ls.Kind) + "</span>",
				"<code>" + e(ls.Address) + "</code>", e(discovery.GroupsText(ls.Groups, ", ")), strings.Join(vs, ", "), e(ls.How), e(since(p.Now, ls.Since))}
		})
	table(b, "Registered services ("+strconv.Itoa(p.RegisteredTotal)+")", "registered",
		[]string{"ServiceID", "Types", "Name", "Endpoint", "Owner", "Expires"}, len(p.Registered), "none",
		func(i int) (string, []string) {
			s := p.Registered[i]
			exp := "never"
			if !s.Expires.IsZero() {
				exp = stamp(s.Expires)
			}
			owner := s.Owner
			if owner == "" {
				owner = "administrator"
			}
			return `class="registered" data-id="` + e(s.ServiceID) + `"`, []string{"<code>" + e(s.ServiceID) + "</code>",
				e(strings.Join(s.Types, ", ")), e(s.Name), "<code>" + e(s.Endpoint) + "</code>", e(owner), exp}
		})
	if p.RegisteredNext != "" {
		fmt.Fprintf(b, "<p><a id=\"registered-next\" href=\"/?after=%s\">next page</a></p>\n", e(url.QueryEscape(p.RegisteredNext)))
	}
	table(b, "Services", "counts", []string{"Service", "What", "Count"}, len(p.Counts), "", func(i int) (string, []string) {
		c := p.Counts[i]
		return "", []string{e(c.Service), e(c.What), strconv.Itoa(c.N)}
	})
	table(b, "Recent events", "events", []string{"Time", "Event", "What"}, len(p.Events), "none yet", func(i int) (string, []string) {
		ev := p.Events[i]
		return "", []string{stamp(ev.At), e(ev.Kind), e(ev.Text)}
	})
	fmt.Fprintf(b, "<p class=\"muted\">Rendered %s; reloads every %d s. Metrics: <a href=\"/metrics\">/metrics</a>, health: <a href=\"/healthz\">/healthz</a>, <a href=\"/readyz\">/readyz</a>.</p>\n</body>\n</html>\n",
		stamp(p.Now), p.Refresh)
}

// table writes a titled table of n rows; row returns a row's attributes
// and its cells, already escaped. With no rows, empty (if not "") is
// said in one.
func table(b *bytes.Buffer, title, id string, head []string, n int, empty string, row func(int) (string, []string)) {
	fmt.Fprintf(b, "<h2>%s</h2>\n<div class=\"wrap\"><table id=\"%s\"><tr>", html.EscapeString(title), id)
	for _, h := range head {
		b.WriteString("<th>" + h + "</th>")
	}
	b.WriteString("</tr>\n")
	for i := range n {
		attrs, cells := row(i)
		if attrs != "" {
			attrs = " " + attrs
		}
		b.WriteString("<tr" + attrs + ">")
		for _, c := range cells {
			b.WriteString("<td>" + c + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	if n == 0 && empty != "" {
		fmt.Fprintf(b, "<tr><td colspan=\"%d\" class=\"muted\">%s</td></tr>\n", len(head), empty)
	}
	b.WriteString("</table></div>\n")
}

func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05") }

// since says how long ago t was the way a person reads it: 42s, 5m, 3h,
// 2d; "-" for never.
func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// store is the data directory as the page shows it: to an administrator.
func store(dir string) string {
	if dir == "" {
		return `<span class="muted">shown to administrators</span>`
	}
	return "<code>" + html.EscapeString(dir) + "</code>"
}

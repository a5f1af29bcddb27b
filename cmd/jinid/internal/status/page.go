package status

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

//go:embed page.html
var files embed.FS

// Page is everything the status page shows, gathered at the request.
type Page struct {
	Now      time.Time
	Version  string
	Identity Identity
	Ready    bool
	Checks   []Check
	// Multicast is "on", "off" or "waiting"; Interfaces, each with its
	// multicast state.
	Multicast  string
	Interfaces []Interface
	// LookupServices discovered by the daemon (its lookup discovery
	// service, and announcements heard), its own excluded.
	LookupServices []LookupService
	Counts         []Count
	Events         []Notable
	// Refresh is the reload period in seconds.
	Refresh int
}

// Identity is the daemon's own lookup service.
type Identity struct {
	ServiceID string
	Groups    []string
	// Addresses: the API and unicast discovery addresses.
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
	Kind      string // "jinid", "java"
}

// Count is one number of one service.
type Count struct {
	Service, What string
	N             int
}

var funcs = template.FuncMap{
	"age": func(now, t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return age(now.Sub(t))
	},
	"groups": func(gs []string) string {
		if len(gs) == 0 {
			return "(none)"
		}
		s := ""
		for i, g := range gs {
			if i > 0 {
				s += ", "
			}
			if g == "" {
				g = "(public)"
			}
			s += g
		}
		return s
	},
	"stamp": func(t time.Time) string { return t.Format("2006-01-02 15:04:05") },
}

var tmpl = template.Must(template.New("page.html").Funcs(funcs).ParseFS(files, "page.html"))

// age says a duration the way a person reads it: 42s, 5m, 3h, 2d.
func age(d time.Duration) string {
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

// Handler serves the page gathered by gather at each request.
func Handler(gather func() Page) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if err := tmpl.Execute(&b, gather()); err != nil {
			http.Error(w, "rendering the status page failed", http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		// Nothing but the page itself: no script, no frame, no fetch.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodHead {
			w.Write(b.Bytes())
		}
	}
}

// Render writes the page (tests and benchmarks).
func Render(w *bytes.Buffer, p Page) error { return tmpl.Execute(w, p) }

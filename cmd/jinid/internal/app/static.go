package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/lookup"
)

// Static services are the daemon's own registrations, one JSON file each
// in the services directory (--services-dir, /etc/jinid/services.d), as
// avahi's services/*.service: a printer or a sensor gateway published
// for good. Each is registered in this lookup service for as long as
// the directory names it, beyond the client lease policy, and owned by
// the configuration (no client may change it). They are read at the
// start and at every reload (SIGHUP): a file added, changed or removed
// takes effect then.
type StaticService struct {
	// Name names a service of the config file's services section (a
	// file's is its file name): what its ServiceID is made of when it
	// gives none.
	Name string `json:"name,omitempty"`
	// ServiceID is the service's own; left out, one is made of its name
	// and this lookup service's ServiceID, the same at every start.
	ServiceID  string             `json:"serviceID,omitempty"`
	Types      []string           `json:"types"`
	Attributes []lookup.Attribute `json:"attributes"`
	Endpoint   string             `json:"endpoint"`
	// Join, if given, has the service registered in the other lookup
	// services the daemon discovers too (jinid's and Java's), by group and
	// by locator, as Java's JoinManager registers a Java service: the
	// join manager (internal/joiner).
	Join *StaticJoin `json:"join,omitempty"`
	// DNSSD, if given, publishes the service over DNS-SD (mDNS) too,
	// under a type of its own, for avahi-browse and Bonjour users.
	DNSSD *StaticDNSSD `json:"dnsSD,omitempty"`
}

// StaticDNSSD says how a static service is published over DNS-SD: its
// type ("_ipp._tcp"), and optionally its instance name (default: its
// Name attribute, else its name), port (default: the endpoint's) and
// TXT strings. Its address is the endpoint's, which must be an IP
// address (published as <instance>.local).
type StaticDNSSD struct {
	Type     string   `json:"type"`
	Instance string   `json:"instance,omitempty"`
	Port     int      `json:"port,omitempty"`
	TXT      []string `json:"txt,omitempty"`
}

// published is a static service as DNS-SD publishes it.
type published struct {
	instance, typ, hostLabel string
	addr                     netip.Addr
	port                     int
	txt                      []string
}

// dnssdType reports whether t is a DNS-SD service type: _name._tcp or
// _name._udp, the name 1 to 15 letters, digits and hyphens (RFC 6763
// §7). (No regexp: the router build links none.)
func dnssdType(t string) bool {
	name, proto, ok := strings.Cut(t, ".")
	if !ok || proto != "_tcp" && proto != "_udp" || len(name) < 2 || len(name) > 16 || name[0] != '_' {
		return false
	}
	for _, r := range name[1:] {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return name[1] != '-'
}

// publication checks the service's DNS-SD settings; name is its own
// (a file's, or "config:" and its name in the config file).
func (s StaticService) publication(name string) (*published, error) {
	d := s.DNSSD
	if d == nil {
		return nil, nil
	}
	if !dnssdType(d.Type) {
		return nil, fmt.Errorf("dnsSD.type %q: want a DNS-SD service type such as _ipp._tcp or _http._tcp", d.Type)
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("dnsSD: the endpoint %q is not a URL with a host; DNS-SD publishes the endpoint's address and port", s.Endpoint)
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("dnsSD: the endpoint's host %q is not an IP address; jinid publishes the address under the service's own .local name", u.Hostname())
	}
	p := &published{typ: d.Type, addr: addr.WithZone(""), port: d.Port, txt: d.TXT, instance: d.Instance}
	if p.port == 0 {
		p.port, _ = strconv.Atoi(u.Port())
	}
	if p.port <= 0 || p.port > 65535 {
		return nil, fmt.Errorf("dnsSD: give a port (dnsSD.port, or one in the endpoint %q)", s.Endpoint)
	}
	for _, t := range p.txt {
		if len(t) > 255 {
			return nil, errors.New("dnsSD.txt: a string is longer than 255 bytes")
		}
	}
	if p.instance == "" {
		for _, a := range s.Attributes {
			if n, ok := a.Fields["name"].(string); ok && a.Type == "net.jini.lookup.entry.Name" && n != "" {
				p.instance = n
				break
			}
		}
	}
	if p.instance == "" {
		p.instance = strings.TrimSuffix(strings.TrimPrefix(name, "config:"), ".json")
	}
	if len(p.instance) > 63 {
		return nil, fmt.Errorf("dnsSD: the instance name %q is longer than 63 bytes", p.instance)
	}
	p.hostLabel = strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, p.instance), "-")
	if p.hostLabel == "" {
		p.hostLabel = "service"
	}
	return p, nil
}

// StaticJoin says which other lookup services hold a static service.
type StaticJoin struct {
	// Groups: every lookup service of these groups ("" is the public
	// group).
	Groups []string `json:"groups,omitempty"`
	// Locators: the lookup services at these jini://host[:port].
	Locators []string `json:"locators,omitempty"`
}

// staticEntry is a static service as read: its item, and where else it
// is to be registered.
type staticEntry struct {
	item     lookup.Item
	groups   []string
	locators []discovery.Locator
	publish  *published // nil: not over DNS-SD
	// from names where it was read (its file, or its place in the
	// config file), for errors.
	from string
}

// joins reports whether the entry is to be registered elsewhere too.
func (e staticEntry) joins() bool { return len(e.groups) > 0 || len(e.locators) > 0 }

// entry checks the service's join settings and returns its entry.
func (s StaticService) entry(name, lookupID string) (staticEntry, error) {
	e := staticEntry{item: s.item(name, lookupID)}
	var err error
	if e.publish, err = s.publication(name); err != nil {
		return staticEntry{}, err
	}
	if s.Join == nil {
		return e, nil
	}
	e.groups = s.Join.Groups
	for _, raw := range s.Join.Locators {
		l, err := discovery.ParseLocator(raw)
		if err == nil {
			err = l.Dialable()
		}
		if err != nil {
			return staticEntry{}, fmt.Errorf("join.locators: %w", err)
		}
		e.locators = append(e.locators, l)
	}
	if s.Join.Groups != nil && len(s.Join.Groups) == 0 && len(e.locators) == 0 {
		return staticEntry{}, errors.New(`join: give groups (["lab"], or [""] for the public group) or locators, or leave "join" out`)
	}
	return e, nil
}

// item is the service's lookup item; name makes its ServiceID when it
// gives none.
func (s StaticService) item(name, lookupID string) lookup.Item {
	id := s.ServiceID
	if id == "" {
		// The same name on the same lookup service is the same service.
		sum := sha256.Sum256([]byte("jinid static service\x00" + lookupID + "\x00" + name))
		sum[6], sum[8] = sum[6]&0x0f|0x50, sum[8]&0x3f|0x80 // a name-based UUID (version 5, RFC 9562)
		id = discovery.ServiceID(sum[:16]).String()
	}
	return lookup.Item{ServiceID: id, Types: s.Types, Attributes: s.Attributes, Endpoint: s.Endpoint}
}

// DefaultServicesDir is where the static services are unless told.
const DefaultServicesDir = "/etc/jinid/services.d"

// Bounds of the services directory: what a mistaken directory (a home,
// a mount of something else) costs.
const (
	maxStaticFiles = 1000
	maxStaticBytes = 64 << 10
)

// readStatic reads dir's *.json files: the items they give, by file,
// and an error for each file that gives none (by file: the caller may
// keep what it gave last), and what else is amiss. A directory that is
// not there gives none.
func readStatic(dir, lookupID string) (byFile map[string]staticEntry, failed map[string]error, errs []error) {
	byFile, failed = map[string]staticEntry{}, map[string]error{}
	if dir == "" {
		return byFile, failed, nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return byFile, failed, []error{fmt.Errorf("static services %s: %w", dir, err)}
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return byFile, failed, nil
	}
	// avahi's service files (XML) sit in such directories: said once a
	// read, by name, rather than passed over without a word.
	others, _ := filepath.Glob(filepath.Join(dir, "*.service"))
	for _, o := range others {
		errs = append(errs, fmt.Errorf("static service %s: not read: jinid reads *.json files (an avahi .service file is avahi's own)", o))
	}
	if len(names) > maxStaticFiles {
		errs = append(errs, fmt.Errorf("static services %s: %d files; the first %d are read", dir, len(names), maxStaticFiles))
		names = names[:maxStaticFiles]
	}
	for _, name := range names {
		e, warn, err := readStaticFile(dir, name, lookupID)
		if warn != nil {
			errs = append(errs, warn)
		}
		if err != nil {
			failed[name] = err
			continue
		}
		e.from = name
		byFile[name] = e
	}
	return byFile, failed, errs
}

// readStaticFile reads one service's file: a regular file (a FIFO, a
// device or a socket is refused, opened without blocking so that none
// can hang the daemon), or a symbolic link to one in the same
// directory; the file itself is checked once open. A file others may
// write is read, with a warning: whoever can write it registers
// services as this daemon.
func readStaticFile(dir, name, lookupID string) (e staticEntry, warn, err error) {
	fail := func(format string, args ...any) (staticEntry, error, error) {
		return staticEntry{}, warn, fmt.Errorf("static service %s: "+format, append([]any{name}, args...)...)
	}
	li, err := os.Lstat(name)
	if err != nil {
		return fail("%w", err)
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(name)
		if err != nil {
			return fail("a symbolic link that leads nowhere: %w", err)
		}
		realDir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return fail("%w", err)
		}
		if filepath.Dir(target) != realDir {
			return fail("a symbolic link out of the directory (to %s): left out; link only to files in %s", target, dir)
		}
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fail("%w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail("%w", err)
	}
	if !fi.Mode().IsRegular() {
		return fail("not a regular file (%s): left out", fileKind(fi.Mode()))
	}
	if fi.Mode().Perm()&0o022 != 0 {
		warn = fmt.Errorf("static service %s: writable by others (mode %04o): whoever can write it registers services as this daemon; chmod go-w it", name, fi.Mode().Perm())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxStaticBytes+1))
	if err != nil {
		return fail("%w", err)
	}
	if len(raw) > maxStaticBytes {
		return fail("larger than %d bytes", maxStaticBytes)
	}
	var s StaticService
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return fail("%s: want {\"types\": [...], \"attributes\": [...], \"endpoint\": \"...\"}: %w", jsonPlace(raw, err), err)
	}
	e, err = s.entry(filepath.Base(name), lookupID)
	if err != nil {
		return fail("%w", err)
	}
	return e, warn, nil
}

// jsonPlace is where in raw a decoding error is, as LINE:COLUMN (the
// start when the error says nothing of it).
func jsonPlace(raw []byte, err error) string {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1
	case errors.As(err, &te):
		off = te.Offset - 1
	}
	off = min(max(off, 0), int64(len(raw)))
	line := 1 + bytes.Count(raw[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(raw[:off], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// fileKind names a file's type for an error.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// joinStatic hands the services that name other lookup services to the
// join manager; in a build without one, each is an error (it is still
// registered here).
func (d *Daemon) joinStatic(want map[string]staticEntry) []error {
	var joining []staticEntry
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if want[id].joins() {
			joining = append(joining, want[id])
		}
	}
	if d.joinSet != nil {
		if err := d.joinSet(joining); err != nil {
			return []error{err}
		}
		return nil
	}
	var errs []error
	for _, e := range joining {
		errs = append(errs, fmt.Errorf("static service %s: registered here only: joining other lookup services takes Jini ERI, which this build leaves out (the full build has it)", e.item.ServiceID))
	}
	return errs
}

// publishStatic hands the services that ask for it to DNS-SD; when it
// is off (or left out of the build) each is an error (it is still
// registered).
func (d *Daemon) publishStatic(want map[string]staticEntry) []error {
	var out []published
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if p := want[id].publish; p != nil {
			if d.publishSet == nil {
				errs = append(errs, fmt.Errorf("static service %s: registered, not published over DNS-SD: %s", id, d.publishOff))
				continue
			}
			out = append(out, *p)
		}
	}
	if d.publishSet != nil {
		d.publishSet(out)
	}
	return errs
}

// syncStatic registers the static services dir and the config file's
// section (listed) give (again: a changed one replaces its
// registration) and cancels those they no longer give. It returns what
// it did, a line each, and what it could not.
func (d *Daemon) syncStatic(dir string, listed []StaticService) ([]string, []error) {
	lookupID := d.registrar.Meta().ServiceID.String()
	byFile, failed, errs := readStatic(dir, lookupID)
	// A file that does not read now (half written by an editor, say)
	// keeps what it gave last, as a bad config file keeps the running
	// configuration.
	d.staticMu.Lock()
	if d.staticGood == nil {
		d.staticGood = map[string]staticEntry{}
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		err := failed[name]
		if last, ok := d.staticGood[name]; ok {
			byFile[name] = last
			err = fmt.Errorf("kept the last good version of %s: %w", name, err)
		}
		errs = append(errs, err)
	}
	clear(d.staticGood)
	maps.Copy(d.staticGood, byFile)
	d.staticMu.Unlock()
	want := map[string]staticEntry{}
	for _, name := range slices.Sorted(maps.Keys(byFile)) {
		e := byFile[name]
		if _, dup := want[e.item.ServiceID]; dup {
			errs = append(errs, fmt.Errorf("static service %s: ServiceID %s is another file's too", name, e.item.ServiceID))
			continue
		}
		want[e.item.ServiceID] = e
	}
	for i, s := range listed {
		e, err := s.entry("config:"+s.Name, lookupID)
		e.from = fmt.Sprintf("static service %d (%s) of the config file", i, s.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("static service %d (%s) of the config file: %w", i, s.Name, err))
			continue
		}
		if _, dup := want[e.item.ServiceID]; dup {
			errs = append(errs, fmt.Errorf("static service %d (%s) of the config file: ServiceID %s is another's too", i, s.Name, e.item.ServiceID))
			continue
		}
		want[e.item.ServiceID] = e
	}
	errs = append(errs, d.joinStatic(want)...)
	errs = append(errs, d.publishStatic(want)...)
	var did []string
	refused := map[string]bool{} // not registered: not counted
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range want {
			if !yield(id) {
				return
			}
		}
	}) {
		if _, err := d.registrar.RegisterStatic(want[id].item); err != nil {
			// Named by where it was written, not by a ServiceID.
			errs = append(errs, fmt.Errorf("%s (ServiceID %s): %w", want[id].from, id, err))
			refused[id] = true
		}
	}
	for _, id := range d.registrar.Static() {
		if _, ok := want[id]; ok {
			continue
		}
		rec, err := d.registrar.Lease(id)
		if err == nil {
			err = d.grantor.Cancel(rec.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("static service %s, removed: %w", id, err))
			continue
		}
		did = append(did, "static service removed: "+id)
	}
	// Said when what is registered changed (at start, the first time):
	// a reload that changes nothing of them says nothing of them.
	registered := maps.Clone(want)
	for id := range refused {
		delete(registered, id)
	}
	sig := staticSignature(registered)
	d.staticMu.Lock()
	changed := sig != d.staticSig
	d.staticSig = sig
	d.staticMu.Unlock()
	if changed && len(registered) > 0 {
		did = append(did, fmt.Sprintf("static services: %d registered (%s and the config file)", len(registered), dir))
	}
	return did, errs
}

// staticSignature sums up the static services registered, to tell a
// change.
func staticSignature(want map[string]staticEntry) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&b, "%s=%v;", id, want[id].item)
	}
	return b.String()
}

// CheckServicesDir reads the services directory dir as the daemon does
// and returns an error for each file in it that gives no service:
// config check's look at it. (What the daemon only warns of, a file
// others may write, an avahi file, is no error here either.)
func CheckServicesDir(dir string) []error {
	_, failed, _ := readStatic(dir, "00000000-0000-0000-0000-000000000000")
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		errs = append(errs, failed[name])
	}
	return errs
}

package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
)

// Static services: registered at start for as long as the directory
// names them (a lease beyond the client policy, FOREVER), changed and
// removed at a reload, and removed at the next start when their file
// went while the daemon was down; a bad file is left out, the others
// stand.
func TestStaticServices(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("printer.json", `{"types": ["com.example.Printer"], "attributes": [{"type": "net.jini.lookup.entry.Name", "fields": {"name": "lobby"}}], "endpoint": "ipp://10.0.0.9/q"}`)
	write("sensor.json", `{"serviceID": "01234567-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Sensor"]}`)
	write("broken.json", `{"types": ["not a java name!!"]}`)
	write("typo.json", `{"tpyes": ["com.example.X"]}`)
	start := func() *Daemon {
		d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: data, NoMulticast: true, ServicesDir: dir,
			Services: []StaticService{{Name: "door", Types: []string{"com.example.Door"}}}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stop := func(d *Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d := start()
	ids := d.registrar.Static()
	if len(ids) != 3 || !slices.Contains(ids, "01234567-89ab-cdef-fedc-ba9876543210") {
		t.Fatalf("static services at start: %v", ids)
	}
	door, _, _ := d.registrar.Query(lookup.Template{Types: []string{"com.example.Door"}}, 1)
	pr, _, _ := d.registrar.Query(lookup.Template{Types: []string{"com.example.Printer"}}, 1)
	if len(door) != 1 || len(pr) != 1 {
		t.Fatalf("the config file's service %v, the printer %v", door, pr)
	}
	printer := pr[0].ServiceID
	for _, id := range ids {
		if rec, err := d.registrar.Lease(id); err != nil || rec.Expiration != lease.Never || rec.Kind != lookup.StaticLease {
			t.Fatalf("%s's lease: %+v %v", id, rec, err)
		}
	}
	// Changed and removed, then reloaded.
	write("printer.json", `{"types": ["com.example.Printer"], "endpoint": "ipp://10.0.0.10/q"}`)
	os.Remove(filepath.Join(dir, "sensor.json"))
	cfg := d.cfg
	cfg.Services = nil // and the config file's section emptied
	if _, err := d.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	items, _, err := d.registrar.Query(lookup.Template{}, 10)
	// jinid's own services, as Java finds them, stand beside the
	// static ones, and are none of the configuration's business.
	items = slices.DeleteFunc(items, func(it lookup.Item) bool { return slices.Contains(d.registrar.Services(), it.ServiceID) })
	if err != nil || len(items) != 1 || items[0].ServiceID != printer || items[0].Endpoint != "ipp://10.0.0.10/q" {
		t.Fatalf("after the reload: %+v %v", items, err)
	}
	stop(d)
	// Gone while the daemon was down: removed at the start.
	os.Remove(filepath.Join(dir, "printer.json"))
	d = start()
	defer stop(d)
	if ids := d.registrar.Static(); len(ids) != 1 || ids[0] != door[0].ServiceID {
		t.Fatalf("static services after a start without their files (the config file's door stays): %v", ids)
	}
}

// A static service's join and DNS-SD settings: what is accepted, and a
// clear error for what is not.
func TestStaticServiceSettings(t *testing.T) {
	printer := func(endpoint string, join *StaticJoin, d *StaticDNSSD) StaticService {
		return StaticService{Types: []string{"com.example.Printer"}, Endpoint: endpoint, Join: join, DNSSD: d,
			Attributes: []lookup.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "Lobby printer"}}}}
	}
	for _, c := range []struct {
		name    string
		s       StaticService
		wantErr string
		check   func(e staticEntry) bool
	}{
		{"no settings", printer("ipp://10.0.0.9/q", nil, nil), "", func(e staticEntry) bool { return !e.joins() && e.publish == nil }},
		{"join by group", printer("", &StaticJoin{Groups: []string{"lab", ""}}, nil), "", func(e staticEntry) bool {
			return e.joins() && slices.Equal(e.groups, []string{"lab", ""})
		}},
		{"join by locator", printer("", &StaticJoin{Locators: []string{"jini://reggie.example.org"}}, nil), "", func(e staticEntry) bool {
			return len(e.locators) == 1 && e.locators[0].Host == "reggie.example.org" && e.locators[0].Port == 4160
		}},
		{"a bad locator", printer("", &StaticJoin{Locators: []string{"http://x"}}, nil), "join.locators", nil},
		{"join of nothing", printer("", &StaticJoin{Groups: []string{}}, nil), "give groups", nil},
		{"DNS-SD", printer("ipp://10.0.0.9:631/q", nil, &StaticDNSSD{Type: "_ipp._tcp"}), "", func(e staticEntry) bool {
			p := e.publish
			return p != nil && p.instance == "Lobby printer" && p.hostLabel == "lobby-printer" && p.addr.String() == "10.0.0.9" && p.port == 631
		}},
		{"DNS-SD port given", printer("ipp://[2001:db8::9]/q", nil, &StaticDNSSD{Type: "_ipp._tcp", Port: 631, Instance: "Hall"}), "", func(e staticEntry) bool {
			return e.publish.port == 631 && e.publish.instance == "Hall" && e.publish.addr.Is6()
		}},
		{"DNS-SD no port", printer("ipp://10.0.0.9/q", nil, &StaticDNSSD{Type: "_ipp._tcp"}), "give a port", nil},
		{"DNS-SD host name", printer("ipp://printer.lan:631/q", nil, &StaticDNSSD{Type: "_ipp._tcp"}), "not an IP address", nil},
		{"DNS-SD no endpoint", printer("", nil, &StaticDNSSD{Type: "_ipp._tcp"}), "not a URL with a host", nil},
		{"DNS-SD bad type", printer("ipp://10.0.0.9:631/q", nil, &StaticDNSSD{Type: "ipp"}), "dnsSD.type", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := c.s.entry("printer.json", "5a7e1c00-0000-4000-8000-00000000000a")
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !c.check(e):
				t.Fatalf("entry %+v (published %+v)", e, e.publish)
			}
		})
	}
}

// The services directory cannot hang the daemon nor read what it should
// not: a FIFO is refused (opened without blocking), a symbolic link out
// of the directory or to what is no regular file is refused (one to a
// file in it is read), a file others may write is read with a warning,
// and a file that stops reading (half written) keeps the service it
// gave, said so.
func TestStaticServicesDirectory(t *testing.T) {
	data, dir, outside := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path, body string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "printer.json"), `{"serviceID": "11111111-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Printer"]}`, 0o644)
	write(filepath.Join(dir, "shared.json"), `{"serviceID": "22222222-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Shared"]}`, 0o666)
	write(filepath.Join(dir, "real.txt"), `{"serviceID": "33333333-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Linked"]}`, 0o644)
	write(filepath.Join(outside, "secret"), `{"serviceID": "44444444-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Outside"]}`, 0o644)
	if err := os.Symlink("real.txt", filepath.Join(dir, "linked.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "outside.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "adir.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: data, NoMulticast: true, ServicesDir: dir}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- d.Start(t.Context()) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testenv.WaitLimit):
		t.Fatal("start-up hangs on the services directory (a FIFO)")
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	}()
	ids := d.registrar.Static()
	slices.Sort(ids)
	want := []string{"11111111-89ab-cdef-fedc-ba9876543210", "22222222-89ab-cdef-fedc-ba9876543210", "33333333-89ab-cdef-fedc-ba9876543210"}
	if !slices.Equal(ids, want) {
		t.Fatalf("registered %v, want %v (the printer, the shared file, the link in the directory)", ids, want)
	}
	_, errs := d.syncStatic(dir, nil)
	said := fmt.Sprint(errs)
	for _, w := range []string{"pipe.json: not a regular file (a FIFO)", "outside.json: a symbolic link out of the directory",
		"adir.json: a symbolic link out of the directory", "shared.json: writable by others (mode 0666)"} {
		if !strings.Contains(said, w) {
			t.Errorf("what the directory's reading said has no %q:\n%s", w, said)
		}
	}
	// Half written: the printer stays, as it was.
	write(filepath.Join(dir, "printer.json"), `{"serviceID": "11111111-89ab-cdef-fedc-ba9876543210", "typ`, 0o644)
	_, errs = d.syncStatic(dir, nil)
	if got := d.registrar.Static(); !slices.Contains(got, "11111111-89ab-cdef-fedc-ba9876543210") {
		t.Errorf("a half-written file cancelled its service: %v", got)
	}
	if !strings.Contains(fmt.Sprint(errs), "kept the last good version of "+filepath.Join(dir, "printer.json")) {
		t.Errorf("a half-written file's service kept without a word: %v", errs)
	}
	// Removed for good: cancelled.
	os.Remove(filepath.Join(dir, "printer.json"))
	d.syncStatic(dir, nil)
	if got := d.registrar.Static(); slices.Contains(got, "11111111-89ab-cdef-fedc-ba9876543210") {
		t.Errorf("a removed file's service stays: %v", got)
	}
}

// What the services directory says: an avahi *.service file is named,
// not passed over; bad JSON says its line and column; a service the
// lookup service refuses is named by its file and not counted as
// registered; a reload that changes nothing of them says nothing of
// them.
func TestStaticServicesSay(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "printer.json"), []byte(`{"serviceID": "11111111-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Printer"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "ssh.service"), []byte(`<service-group><name>ssh</name></service-group>`), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{\"types\": [\"a.B\"],\n  \"endpoint\": 5}"), 0o644)
	os.WriteFile(filepath.Join(dir, "badtype.json"), []byte(`{"serviceID": "22222222-89ab-cdef-fedc-ba9876543210", "types": ["not a type!"]}`), 0o644)
	d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: data, NoMulticast: true, ServicesDir: dir}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	}()
	// The first sync ran at start; a second, with nothing changed, says
	// nothing of the services registered.
	did, errs := d.syncStatic(dir, nil)
	said := fmt.Sprint(errs)
	for _, w := range []string{
		filepath.Join(dir, "ssh.service") + ": not read: jinid reads *.json files",
		filepath.Join(dir, "broken.json") + ": line 2, column",
		filepath.Join(dir, "badtype.json") + " (ServiceID 22222222-89ab-cdef-fedc-ba9876543210)",
	} {
		if !strings.Contains(said, w) {
			t.Errorf("the directory's reading said no %q:\n%s", w, said)
		}
	}
	if len(did) != 0 {
		t.Errorf("a reload that changed nothing said %q", did)
	}
	// A change is said, counting what is registered (the printer and
	// the new one; not the refused one).
	os.WriteFile(filepath.Join(dir, "door.json"), []byte(`{"serviceID": "33333333-89ab-cdef-fedc-ba9876543210", "types": ["com.example.Door"]}`), 0o644)
	did, _ = d.syncStatic(dir, nil)
	if !slices.ContainsFunc(did, func(s string) bool { return strings.HasPrefix(s, "static services: 2 registered") }) {
		t.Errorf("after a new file: %q, want 2 registered", did)
	}
}

package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

// SIGHUP re-reads the config file: new groups and log level apply at
// once, a registration and the listeners stay, a setting that needs a
// restart is named, and a file that does not validate is refused whole,
// the running configuration kept.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "jinid.json")
	write := func(body string) { writeConfigFile(t, conf, body) }
	write(`{"schemaVersion": 1, "groups": ["", "lab"], "logLevel": "info"}`)
	d := jinidtest.StartDaemon(t, bin, filepath.Join(dir, "data"), "--config", conf)
	c := jinidtest.Client(t, d.API)
	ctx := t.Context()
	reg, err := c.Register(ctx, apitypes.Item{Types: []string{"com.example.Printer"}}, 600_000)
	if err != nil {
		t.Fatal(err)
	}
	groups := func() []string {
		info, err := c.Lookup(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(slices.Values(info.Groups))
	}
	if g := groups(); !slices.Equal(g, []string{"", "lab"}) {
		t.Fatalf("groups at start %q", g)
	}
	hup := func(wantLogged string) {
		t.Helper()
		before := strings.Count(d.Log(), wantLogged)
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testenv.Until(t, "the reload logged", func() bool { return strings.Count(d.Log(), wantLogged) > before })
	}

	// Leaving the public group is publicGroup's to say (a list never
	// drops it).
	write(`{"schemaVersion": 1, "groups": ["ops"], "publicGroup": false, "logLevel": "debug", "renewalMargin": "45s"}`)
	hup("configuration reloaded")
	if g := groups(); !slices.Equal(g, []string{"ops"}) {
		t.Errorf("groups after the reload %q, want [ops]", g)
	}
	log := d.Log()
	for _, want := range []string{`change="groups: (public),lab -> ops"`, `change="log level: INFO -> DEBUG"`,
		`takes effect at the next start" setting=renewalMargin`} {
		if !strings.Contains(log, want) {
			t.Errorf("the reload did not log %q:\n%s", want, log)
		}
	}
	if _, err := c.Get(ctx, reg.ServiceID); err != nil {
		t.Errorf("the registration did not survive the reload: %v", err)
	}

	write(`{"schemaVersion": 1, "groups": ["x"], "announceInterval": "often"}`)
	hup("reload refused")
	if !strings.Contains(d.Log(), `jinid.json:1:59: announceInterval: want a duration`) {
		t.Errorf("the refusal does not say where and why:\n%s", d.Log())
	}
	if g := groups(); !slices.Equal(g, []string{"ops"}) {
		t.Errorf("groups after a refused reload %q, want them unchanged", g)
	}
	if _, err := c.Get(ctx, reg.ServiceID); err != nil {
		t.Errorf("the registration did not survive a refused reload: %v", err)
	}
	d.Stop(t)
}

// The interfaces follow a reload: an interface added to "interfaces" is
// joined, one taken out is left, and the one that stays keeps its
// sockets.
func TestReloadInterfaces(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	gw := lab.Host("gw")
	gw.Attach(lab.LAN())
	gw.Attach(lab.LAN())
	conf := filepath.Join(t.TempDir(), "jinid.json")
	write := func(body string) { writeConfigFile(t, conf, body) }
	write(`{"interfaces": ["eth0"]}`)
	d := jinidtest.LabDaemon(t, bin, gw, "--config", conf)
	if !strings.Contains(d.Log(), `multicast="on (eth0)"`) {
		t.Fatalf("start:\n%s", d.Log())
	}
	write(`{"interfaces": ["eth1"]}`)
	d.Process.Signal(syscall.SIGHUP)
	// The change is logged once the reload is done, after the sockets
	// moved: waited for too.
	testenv.Until(t, "eth1 joined and eth0 left after the reload, and the change logged", func() bool {
		l := d.Log()
		return strings.Contains(l, `joined discovery groups" interface=eth1`) && strings.Contains(l, `left discovery groups" interface=eth0`) &&
			strings.Contains(l, `change="interfaces: --interfaces [\"eth1\"]`)
	})
	if strings.Contains(d.Log(), "takes effect at the next start") {
		t.Errorf("the interfaces were said to wait for a restart:\n%s", d.Log())
	}
}

// writeConfigFile writes a config file for a daemon to read (again).
func writeConfigFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

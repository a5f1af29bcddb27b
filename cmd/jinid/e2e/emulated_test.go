package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// emulatedTargets are the router builds run under qemu-user.
var emulatedTargets = []struct{ name, qemu, goarch, env string }{
	{"mips", "qemu-mips", "mips", "GOMIPS=softfloat"},
	{"armv7", "qemu-arm", "arm", "GOARM=7"},
}

// buildRouter cross-builds the router daemon (the router profile) for
// GOARCH goarch with env, and returns its path.
func buildRouter(t *testing.T, name, goarch, env string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jinid-daemon")
	tags, err := exec.Command("sh", "../../../scripts/profile", "router").Output()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-tags", strings.TrimSpace(string(tags)), "-o", bin, "github.com/jinid/jinid/cmd/jinid")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, env)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-building for %s: %v\n%s", name, err, out)
	}
	return bin
}

// The router daemon, cross-built for mips (softfloat) and armv7, runs
// under qemu-user: "jinid version" names its platform, and a
// --no-multicast daemon answers /healthz.
func TestEmulatedRouterBuilds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped with -short: cross-builds and emulates")
	}
	for _, c := range emulatedTargets {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			qemu := testenv.LookPath(t, c.qemu, "qemu-user")
			bin := buildRouter(t, c.name, c.goarch, c.env)
			out, err := exec.Command(qemu, bin, "version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), " linux/"+c.goarch) {
				t.Fatalf("%s jinid version: %v %q", c.qemu, err, out)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, qemu, bin, "daemon", "--no-multicast", "--api-listen", "127.0.0.1:0", "--discovery-port", "0",
				"--data-dir", t.TempDir(), "--api-socket", "none")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(stderr)
			api := ""
			for api == "" && sc.Scan() {
				if m := regexp.MustCompile(`api=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
					api = m[1]
				}
			}
			if api == "" {
				t.Fatalf("the emulated daemon never said where it listens")
			}
			go func() {
				for sc.Scan() {
				}
			}()
			resp, err := http.Get(api + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("/healthz of the emulated %s daemon: %s", c.name, resp.Status)
			}
		})
	}
}

// The router builds on the wire: each, under qemu-user in a lab LAN with
// multicast on (the big-endian mips and armv7), is found by an amd64
// `jinid discover` and by the Java peer's LookupDiscovery, and finds a
// Reggie on the LAN itself (its lookup discovery service reports it).
// They could not join a group under qemu-user before (no
// IP_MULTICAST_ALL there), and the test ran them with --no-multicast.
func TestEmulatedRoutersOnTheWire(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipped with -short: cross-builds and emulates")
	}
	host := jinidtest.Binary(t)
	riverpeer.Java(t)
	for _, c := range emulatedTargets {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			qemu := testenv.LookPath(t, c.qemu, "qemu-user")
			bin := buildRouter(t, c.name, c.goarch, c.env)
			lab := netlab.New(t)
			lan := lab.LAN()
			router, rh, ch := lab.Host("router"), lab.Host("reggie"), lab.Host("client")
			rl, _, cl := router.Attach(lan), rh.Attach(lan), ch.Attach(lan)
			reggie := riverpeer.StartReggie(t, rh, rh.Links()[0].IPv4, "multicastAnnouncementInterval=1000L")

			ctx, cancel := context.WithCancel(context.Background())
			cmd := router.Command(ctx, qemu, bin, "daemon", "--groups", "lab", "--announce-interval", "1s", "--data-dir", t.TempDir(),
				"--api-socket", "none", "--anonymous", "client")
			var log testenv.Buffer
			cmd.Stderr = &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cancel(); cmd.Wait() })
			var id string
			testenv.Until(t, "the emulated daemon to start", func() bool {
				m := regexp.MustCompile(`jinid started.* lookup=(\S+)`).FindStringSubmatch(log.String())
				if m != nil {
					id = m[1]
				}
				return id != ""
			})
			defer func() {
				if t.Failed() {
					t.Logf("the emulated %s daemon logged:\n%s", c.name, log.String())
				}
			}()
			if !strings.Contains(log.String(), "joined discovery groups") {
				t.Fatalf("the emulated daemon joined no discovery group")
			}

			// An amd64 jinid finds it.
			testenv.Until(t, "jinid discover to find the emulated daemon", func() bool {
				out, _ := ch.Command(t.Context(), host, "discover", "--groups", "lab", "--timeout", "3s").Output()
				return strings.Contains(string(out), id)
			})
			// Java's LookupDiscovery hears it and reaches its unicast
			// discovery port; the router build serves no Java client (no
			// Jini ERI in it), so Java is handed no registrar it can
			// use, and says so: a String where a ServiceRegistrar goes.
			out, _ := riverpeer.Run(t, ch, 60*time.Second, nil, "LookupWatch", "--groups", "lab", "--secs", "6",
				"--request-host", cl.IPv4.String())
			heard := regexp.MustCompile(`(?m)^\S+ failed +` + regexp.QuoteMeta(rl.IPv4.String()) + `:\d+ by=group .*ClassCastException: class java.lang.String`)
			if !heard.MatchString(out) || !strings.Contains(out, reggie.ServiceID) {
				t.Fatalf("LookupWatch did not hear the emulated daemon at %s (and Reggie %s):\n%s", rl.IPv4, reggie.ServiceID, out)
			}
			// It finds Reggie: its lookup discovery service reports it.
			api := jinidtest.LabClient(t, ch, "http://"+rl.IPv4.String()+":4162")
			sink := jinidtest.NewSink(t, ch, cl.IPv4.String())
			reg, err := api.LDSRegister(t.Context(), client.LDSRequest{Groups: []string{"lab"}, Listener: sink.URL, Duration: 600_000})
			if err != nil {
				t.Fatal(err)
			}
			testenv.Until(t, "the emulated daemon to discover "+reggie.String(), func() bool {
				rs, err := api.LDSRegistrars(t.Context(), reg.ID)
				return err == nil && slices.ContainsFunc(rs, func(r apitypes.Registrar) bool { return r.ServiceID == reggie.ServiceID })
			})
		})
	}
}

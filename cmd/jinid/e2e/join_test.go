package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// The join manager: a static service naming the group "lab" is
// registered in every other lookup service of the group, a jinid and a
// real Reggie; kept there across three of Reggie's lease maximums;
// registered again in a Reggie restarted (a new lookup service) within
// an announcement interval, and still there after the jinid holding it
// restarts; seen by a Java ServiceDiscoveryManager; and removed from
// both when its file goes and the daemon reloads.
func TestJoinManager(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	riverpeer.Java(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	ah, bh, rh, ch := lab.Host("a"), lab.Host("b"), lab.Host("reggie"), lab.Host("client")
	ah.Attach(lan)
	bh.Attach(lan)
	rl := rh.Attach(lan)
	cl := ch.Attach(lan)
	const announce = time.Second
	leaseMax := 2 * time.Second

	services := t.TempDir()
	file := filepath.Join(services, "printer.json")
	os.WriteFile(file, []byte(`{"serviceID":"5a7e1c00-0000-4000-8000-00000000000a","types":["org.example.Printer"],
		"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"lobby"}}],"endpoint":"ipp://198.18.1.9/lobby",
		"join":{"groups":["lab"]}}`), 0o644)
	const sid = "5a7e1c00-0000-4000-8000-00000000000a"
	common := []string{"--groups", "lab", "--public-group=false", "--java-register-from", "198.18.0.0/16", "--no-dns-sd",
		"--announce-interval", announce.String(), "--lds-announce-interval", announce.String()}
	a := jinidtest.LabDaemon(t, bin, ah, append(common, "--services-dir", services)...)
	bDir := t.TempDir()
	b := jinidtest.LabDaemon(t, bin, bh, append(common, "--data-dir", bDir)...)
	reggieArgs := []string{"multicastAnnouncementInterval=1000L", fmt.Sprintf("minMaxServiceLease=%dL", leaseMax.Milliseconds())}
	reggie := riverpeer.StartReggie(t, rh, rl.IPv4, reggieArgs...)

	bl := &browseLab{bin: bin}
	holders := func() []string {
		out := bl.cli(t, ch, "browse", "--groups", "lab", "--type", "org.example.Printer", "-o", "json", "--timeout", "3s")
		var got struct{ Services []browsedService }
		json.Unmarshal([]byte(out), &got)
		for _, s := range got.Services {
			if s.ServiceID == sid {
				var kinds []string
				for _, l := range s.LookupServices {
					host, _, _ := net.SplitHostPort(l.Address)
					kinds = append(kinds, l.Kind+"@"+host)
				}
				slices.Sort(kinds)
				return kinds
			}
		}
		return nil
	}
	everywhere := func() bool { return len(holders()) == 3 }
	testenv.Until(t, "the static service in a, b and Reggie", everywhere)
	t.Logf("held by %v", holders())
	// Reggie granted its maximum, not the 5 minutes asked.
	if m := regexp.MustCompile(`static service registered.*lookup=` + reggie.ServiceID + ` .*granted=(\S+)`).FindStringSubmatch(a.Log()); m == nil {
		t.Fatalf("no registration in Reggie logged:\n%s", a.Log())
	} else if d, err := time.ParseDuration(m[1]); err != nil || d > leaseMax {
		t.Fatalf("Reggie granted %s, want at most %s", m[1], leaseMax)
	}

	// Three of Reggie's lease maximums: there at every look.
	for end := time.Now().Add(3*leaseMax + time.Second); time.Now().Before(end); {
		if h := holders(); len(h) != 3 {
			t.Fatalf("after %s of %s leases: held by %v", time.Since(end.Add(-3*leaseMax-time.Second)), leaseMax, h)
		}
	}

	// A Java ServiceDiscoveryManager finds it (in Reggie: jinid b's
	// copy too, under the same ServiceID).
	out, err := riverpeer.Run(t, ch, 60*time.Second, []string{"-Dorg.apache.river.sdm.insecureLookup=true"}, "SdmLookup",
		"--locator", reggie.Locator, "--secs", "3", "--listen-host", cl.IPv4.String())
	if err != nil || !strings.Contains(out, "item "+sid+" java.lang.String") {
		t.Fatalf("SdmLookup: %v\n%s", err, out)
	}

	// Reggie restarted (transient: a new lookup service): registered in
	// it again within an announcement interval of its start.
	reggie.Kill()
	started := time.Now()
	reggie = riverpeer.StartReggie(t, rh, rl.IPv4, reggieArgs...)
	testenv.Until(t, "the static service in the new Reggie", func() bool {
		out, err := riverpeer.Run(t, ch, 30*time.Second, nil, "RegistrarClient", "lookup", "--locator", reggie.Locator, "--id", sid, "--want", sid)
		return err == nil && strings.Contains(out, sid)
	})
	m := regexp.MustCompile(`time=(\S+) level=INFO msg="static service registered" .*lookup=` + reggie.ServiceID).FindStringSubmatch(a.Log())
	if m == nil {
		t.Fatalf("the registration in the new Reggie is not logged:\n%s", a.Log())
	}
	at, _ := time.Parse(time.RFC3339Nano, m[1])
	t.Logf("registered in the restarted Reggie %s after it was started, its JVM's start included (announcement interval %s)", at.Sub(started), announce)

	// jinid b restarted: the registration it acknowledged is still there,
	// and kept.
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
	jinidtest.LabDaemon(t, bin, bh, append(common, "--data-dir", bDir)...)
	testenv.Until(t, "the static service in a, b and Reggie after b restarted", everywhere)

	// Removed from the configuration: cancelled everywhere on reload.
	os.Remove(file)
	a.Process.Signal(syscall.SIGHUP)
	var left []string
	for deadline := time.Now().Add(testenv.WaitLimit); time.Now().Before(deadline); {
		if left = holders(); len(left) == 0 {
			return
		}
	}
	t.Fatalf("removed from the configuration, still held by %v; a logged:\n%s", left, a.Log())
}

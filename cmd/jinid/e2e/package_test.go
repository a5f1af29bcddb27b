package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// The .deb: its control fields and file list are what they should be;
// unpacked into two clean roots on two hosts of a LAN, the unit's
// ExecStart line runs as an unprivileged user with no capabilities (the
// unit's sandbox, approximated with setpriv), each daemon becomes ready,
// and each is discovered from the other host.
func TestDebPackageSmoke(t *testing.T) {
	t.Parallel()
	dpkgDeb := testenv.LookPath(t, "dpkg-deb", "dpkg")
	setpriv := testenv.LookPath(t, "setpriv", "util-linux")
	bin := jinidtest.Binary(t)
	base, err := os.MkdirTemp("", "jinid-deb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755) // the unprivileged daemons reach their roots through it
	deb := filepath.Join(base, "jinid.deb")
	if out, err := exec.Command("../../../scripts/package", "deb", bin, "1.2.3", "amd64", deb).CombinedOutput(); err != nil {
		t.Fatalf("scripts/package: %v\n%s", err, out)
	}
	out, err := exec.Command(dpkgDeb, "-f", deb, "Package", "Version", "Architecture", "Section", "Depends").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if want := "Package: jinid\nVersion: 1.2.3\nArchitecture: amd64\nSection: net\n"; string(out) != want {
		t.Errorf("control fields:\n%s\nwant:\n%s", out, want)
	}
	// Maintainer and homepage from firmware/package.env, a real one.
	env, err := os.ReadFile("../../../firmware/package.env")
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(dpkgDeb, "-f", deb, "Maintainer", "Homepage").CombinedOutput()
	for _, field := range regexp.MustCompile(`(?m)^(?:MAINTAINER|HOMEPAGE)='(.*)'$`).FindAllSubmatch(env, -1) {
		if err != nil || !strings.Contains(string(out), string(field[1])) || strings.Contains(string(out), "example.org") {
			t.Errorf("control fields: %v\n%s\nwant %s", err, out, field[1])
		}
	}
	out, err = exec.Command(dpkgDeb, "-c", deb).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-rwxr-xr-x root/root .* ./usr/bin/jinid", "-rw-r--r-- root/root .* ./lib/systemd/system/jinid.service",
		"./usr/share/doc/jinid/operations.md", "drwxr-xr-x root/root .* ./etc/jinid/",
		// The license, the example config, man pages and completions
		// made from the command tree.
		"./usr/share/doc/jinid/copyright", "./usr/share/doc/jinid/examples/jinid.json",
		"./usr/share/man/man1/jinid.1.gz", "./usr/share/man/man1/jinid-lookup-register.1.gz", "./usr/share/man/man1/jinid-lds-register.1.gz",
		"./usr/share/bash-completion/completions/jinid", "./usr/share/zsh/vendor-completions/_jinid",
		"./usr/share/fish/vendor_completions.d/jinid.fish"} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the package lacks %s:\n%s", want, out)
		}
	}

	lab := netlab.New(t)
	lan := lab.LAN()
	hosts := []*netlab.Host{lab.Host("a"), lab.Host("b")}
	var ids []string
	for i, h := range hosts {
		h.Attach(lan)
		root := filepath.Join(base, h.Name)
		if out, err := exec.Command(dpkgDeb, "-x", deb, root).CombinedOutput(); err != nil {
			t.Fatalf("unpacking: %v\n%s", err, out)
		}
		unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/jinid.service"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindSubmatch(unit)
		if m == nil {
			t.Fatalf("no ExecStart in the unit:\n%s", unit)
		}
		// The unit's paths, inside this root: StateDirectory and
		// RuntimeDirectory, made as systemd would, owned by the user.
		state, run := filepath.Join(root, "var/lib/jinid"), filepath.Join(root, "run/jinid")
		for _, d := range []string{state, run} {
			os.MkdirAll(filepath.Dir(d), 0o755)
			os.Mkdir(d, 0o700)
			os.Chown(d, 65534, 65534)
		}
		line := strings.NewReplacer("/usr/bin/jinid", filepath.Join(root, "usr/bin/jinid"), "/var/lib/jinid", state,
			"/run/jinid", run).Replace(string(m[1]))
		args := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
			"--no-new-privs"}, strings.Fields(line)...)
		cmd := h.Command(t.Context(), setpriv, args...)
		logs := &strings.Builder{}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		defer func() {
			if t.Failed() {
				t.Logf("the daemon installed in %s said:\n%s", h.Name, logs)
			}
		}()
		hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: jinidtest.DialFrom(hosts[i])}}
		defer hc.CloseIdleConnections()
		testenv.Until(t, "the daemon installed in "+h.Name+" ready", func() bool {
			resp, err := hc.Get("http://" + h.Links()[0].IPv4.String() + ":4162/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
		body := raw(t, h, "GET", "http://"+h.Links()[0].IPv4.String()+":4162/v1/lookup", "", "", "", "").body
		var info struct {
			ServiceID string `json:"serviceID"`
		}
		if err := json.Unmarshal([]byte(body), &info); err != nil || info.ServiceID == "" {
			t.Fatalf("the installed daemon's lookup service: %q %v", body, err)
		}
		ids = append(ids, info.ServiceID)
	}
	// Each finds the other with the installed binary, unprivileged.
	for i, h := range hosts {
		other := ids[1-i]
		testenv.Until(t, "discovery between the installs", func() bool {
			out, _ := h.Command(t.Context(), setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
				"--bounding-set=-all", filepath.Join(base, h.Name, "usr/bin/jinid"), "discover", "--settle", "500ms").Output()
			return strings.Contains(string(out), other)
		})
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// The .ipk: control fields, conffiles and file list as OpenWrt wants
// them, and its shell scripts pass shellcheck.
func TestIpkPackage(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	for _, b := range []string{"jinid-daemon", "jinid-tools"} {
		raw, _ := os.ReadFile(bin)
		os.WriteFile(filepath.Join(dir, b), raw, 0o755)
	}
	ipk := filepath.Join(dir, "jinid.ipk")
	if out, err := exec.Command("../../../scripts/package", "ipk", dir, "1.2.3", "x86_64", ipk).CombinedOutput(); err != nil {
		t.Fatalf("scripts/package ipk: %v\n%s", err, out)
	}
	x := filepath.Join(dir, "x")
	os.Mkdir(x, 0o755)
	for _, archive := range []string{ipk, filepath.Join(x, "control.tar.gz")} {
		if out, err := exec.Command("tar", "xzf", archive, "-C", x).CombinedOutput(); err != nil {
			t.Fatalf("tar xzf %s: %v\n%s", archive, err, out)
		}
	}
	control, _ := os.ReadFile(filepath.Join(x, "control"))
	for _, want := range []string{"Package: jinid\n", "Version: 1.2.3\n", "Architecture: x86_64\n", "Section: net\n"} {
		if !strings.Contains(string(control), want) {
			t.Errorf("control lacks %q:\n%s", want, control)
		}
	}
	if conf, _ := os.ReadFile(filepath.Join(x, "conffiles")); strings.TrimSpace(string(conf)) != "/etc/config/jinid" {
		t.Errorf("conffiles %q, want /etc/config/jinid (a user's settings survive an upgrade)", conf)
	}
	list, err := exec.Command("tar", "tzvf", filepath.Join(x, "data.tar.gz")).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`-rwxr-xr-x root/root .* \./usr/bin/jinid-daemon`, `-rwxr-xr-x root/root .* \./usr/bin/jinid\n`,
		`-rwxr-xr-x root/root .* \./etc/init\.d/jinid`, `-rw-r--r-- root/root .* \./etc/config/jinid`,
		`-rwxr-xr-x root/root .* \./etc/uci-defaults/90-jinid`, `-rw-r--r-- root/root .* \./etc/capabilities/jinid\.json`} {
		if !regexp.MustCompile(want).Match(list) {
			t.Errorf("the package lacks %s:\n%s", want, list)
		}
	}
}

// Every shell script of the tree passes shellcheck.
func TestShellScripts(t *testing.T) {
	t.Parallel()
	shellcheck := testenv.LookPath(t, "shellcheck", "shellcheck")
	scripts := []string{"../../../.ci/run", "../../../firmware/openwrt/jinid.init", "../../../firmware/openwrt/jinid.uci-defaults",
		"../../../firmware/debian/postinst", "../../../firmware/debian/prerm"}
	more, _ := filepath.Glob("../../../scripts/*")
	if out, err := exec.Command(shellcheck, append(scripts, more...)...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// The init script turns the UCI config into jinid's environment, and
// jinid takes it: procd's functions are stubbed, the defaults of
// /etc/config/jinid with a named group and an interface are read, and
// "jinid config print" under that environment says each value came from
// it.
func TestOpenWrtInitScript(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	stubs := `
config_load() { :; }
config_get_bool() { eval "$1=$4"; }
config_get() { eval "$1=\"$4\""; }
config_list_foreach() { case $2 in group) "$3" lab "$4"; "$3" ops "$4" ;; interface) "$3" br-lan "$4" ;; esac; }
procd_set_param() { [ "$1" = env ] && { shift; for kv in "$@"; do echo "$kv"; done; }; :; }
procd_open_instance() { :; }; procd_close_instance() { :; }; procd_add_jail() { :; }
procd_add_jail_mount() { :; }; procd_add_jail_mount_rw() { :; }
procd_add_mdns() { echo "mdns:$*"; }
mkdir() { :; }; chown() { :; }
. ../../../firmware/openwrt/jinid.init
start_service
`
	out, err := exec.Command("sh", "-c", stubs).CombinedOutput()
	if err != nil {
		t.Fatalf("start_service: %v\n%s", err, out)
	}
	var env []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "JINID_") {
			env = append(env, f)
		}
	}
	// umdns announces what jinid's own advertiser would, in the router
	// build that has none.
	if !strings.Contains(string(out), "mdns:jini tcp 4160 txtvers=1 groups=,lab,ops\n") {
		t.Errorf("the init script does not register _jini._tcp with umdns:\n%s", out)
	}
	for _, want := range []string{"JINID_GROUPS=lab,ops", "JINID_PUBLIC_GROUP=1", "JINID_INTERFACES=br-lan", "JINID_DATA_DIR=/var/lib/jinid",
		"JINID_SNAPSHOT_DIR=/etc/jinid/state", "JINID_SNAPSHOT_INTERVAL=6h", "JINID_ANONYMOUS=read"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("the init script does not set %s:\n%s", want, out)
		}
	}
	// A named config file that is not there would fail: an empty one.
	empty := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(empty, nil, 0o644)
	cmd := exec.Command(bin, "config", "print", "--config", empty)
	cmd.Env = append(os.Environ(), env...)
	printed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jinid config print under the init script's environment: %v\n%s", err, printed)
	}
	for _, want := range []string{`(?m)^groups +\[lab,ops\] +env JINID_GROUPS`, `(?m)^publicGroup +true +env JINID_PUBLIC_GROUP`, `(?m)^snapshotDir +/etc/jinid/state +env JINID_SNAPSHOT_DIR`,
		`(?m)^interfaces +\[br-lan\] +env JINID_INTERFACES`} {
		if !regexp.MustCompile(want).Match(printed) {
			t.Errorf("config print lacks %s:\n%s", want, printed)
		}
	}
}

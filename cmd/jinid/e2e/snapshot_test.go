package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/apitypes"
)

// A store kept on a tmpfs with snapshots on persistent storage, as on
// OpenWrt: a crash loses nothing (the live store is on the tmpfs), a
// reboot (the tmpfs emptied) loses only what came after the last
// snapshot, and a clean stop and "jinid snapshot" each write one.
func TestSnapshotAndRestoreAcrossAReboot(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	live := testenv.Tmpfs(t, "8m")
	snaps := t.TempDir()
	start := func() *jinidtest.Daemon {
		return jinidtest.StartDaemon(t, bin, live, "--snapshot-dir", snaps, "--snapshot-interval", "1h")
	}
	register := func(d *jinidtest.Daemon, typ string) string {
		t.Helper()
		r, err := jinidtest.Client(t, d.API).Register(t.Context(), apitypes.Item{Types: []string{typ}}, 3_600_000)
		if err != nil {
			t.Fatal(err)
		}
		return r.ServiceID
	}
	has := func(d *jinidtest.Daemon, id string) bool {
		_, err := jinidtest.Client(t, d.API).Get(t.Context(), id)
		return err == nil
	}
	reboot := func() {
		t.Helper()
		ents, _ := os.ReadDir(live)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(live, e.Name()))
		}
	}

	d := start()
	a := register(d, "com.example.A")
	out, err := exec.Command(bin, "snapshot", "--server", "unix://"+d.Socket).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "snapshot written: "+filepath.Join(snaps, "jinid.db")) {
		t.Fatalf("jinid snapshot: %v\n%s", err, out)
	}
	b := register(d, "com.example.B")
	d.Stop(t) // a clean stop writes one more
	if !strings.Contains(d.Log(), `snapshot written" component=snapshots reason=stopping`) {
		t.Errorf("no snapshot at the clean stop:\n%s", d.Log())
	}

	reboot()
	d = start()
	if !strings.Contains(d.Log(), "store restored from its snapshot") {
		t.Fatalf("no restore after the reboot:\n%s", d.Log())
	}
	if !has(d, a) || !has(d, b) {
		t.Fatalf("after the reboot: A %v, B %v; want both", has(d, a), has(d, b))
	}
	c := register(d, "com.example.C")
	d.Kill() // a crash: no snapshot
	d = start()
	if strings.Contains(d.Log(), "restored") || !has(d, c) {
		t.Fatalf("after a crash the live store must serve C, not a snapshot:\n%s", d.Log())
	}
	d.Kill()
	reboot()
	d = start()
	if !has(d, a) || !has(d, b) || has(d, c) {
		t.Fatalf("a reboot after a crash: A %v, B %v, C %v; want A and B from the last snapshot, C lost with the tmpfs",
			has(d, a), has(d, b), has(d, c))
	}
	d.Stop(t)
}

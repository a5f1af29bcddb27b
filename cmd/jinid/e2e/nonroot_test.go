package e2e

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// A user with no home (nobody's is /nonexistent) and no runtime
// directory runs the daemon with --data-dir alone: the socket goes beside
// the data, and the CLI reaches it there.
func TestDaemonAsUserWithoutHome(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "becoming nobody needs root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		testenv.Missing(t, "no user nobody: "+err.Error())
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	parent := t.TempDir()
	// nobody reaches the binary (a copy) and the data's directory.
	os.Chmod(filepath.Dir(parent), 0o755)
	os.Chmod(parent, 0o755)
	raw, err := os.ReadFile(jinidtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(parent, "jinid")
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, uid, gid)
	d := jinidtest.StartUserDaemon(t, bin, dir, uint32(uid), uint32(gid), []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"})
	if !strings.Contains(d.Log(), "socket="+filepath.Join(dir, "jinid.sock")) {
		t.Fatalf("the socket is not beside the data:\n%s", d.Log())
	}
	out, err := exec.Command(bin, "lookup", "list", "--server", "unix://"+d.Socket).CombinedOutput()
	if err != nil {
		t.Fatalf("the CLI over the user's socket: %v\n%s", err, out)
	}
	d.Stop(t)
}

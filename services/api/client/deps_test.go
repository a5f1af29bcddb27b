package client

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The client links the wire types, the standard library and the plain
// HTTP/1.1 client (http1, standard library only), nothing of
// the server: a program that talks to jinid should not carry a database,
// netlink or a metrics library, and must build where the daemon does not
// run (Tailscale's client/local deps test is the model). The cross builds
// themselves run in .ci/run.
func TestClientDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	allowed := map[string]bool{
		"github.com/jinid/jinid/services/api/client": true,
		"github.com/jinid/jinid/services/apitypes":   true,
		"github.com/jinid/jinid/internal/http1":      true,
	}
	// Why some would be wrong, to say so if they come back.
	forbidden := map[string]string{
		"go.etcd.io/bbolt":                        "the store is the server's",
		"github.com/vishvananda/netlink":          "interface monitoring is the daemon's (and Linux only)",
		"github.com/VictoriaMetrics/metrics":      "metrics are the daemon's",
		"github.com/jinid/jinid/internal/metrics": "metrics are the daemon's",
		"github.com/jinid/jinid/services/":        "no service package: a client links none of the server",
		"github.com/jinid/jinid/discovery":        "discovery is the daemon's",
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v\n%s", goos, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if allowed[dep] {
				continue
			}
			why := "only the wire types, http1 and the standard library are allowed"
			for prefix, reason := range forbidden {
				if strings.HasPrefix(dep, prefix) {
					why = reason
				}
			}
			t.Errorf("GOOS=%s: the client links %s: %s", goos, dep, why)
		}
	}
}

package conformance

import (
	"os"
	"os/exec"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// The suites mostly wait on daemons and their timers: four at a time on
// the 2-core machine.
func TestMain(m *testing.M) {
	jinidtest.Parallel(4)
	jinidtest.Main(m)
}

// TestSuitesOnEtcd runs the suites again with every daemon's store in
// etcd (a one-member cluster beside it, jinidtest.StoreEnv): the same
// rules hold whichever store keeps the state. It runs this test binary
// again, as `go test` would with the variable set.
func TestSuitesOnEtcd(t *testing.T) {
	t.Parallel() // beside the suites on the embedded store
	if os.Getenv(jinidtest.StoreEnv) != "" {
		t.Skip("already on " + os.Getenv(jinidtest.StoreEnv))
	}
	if testing.Short() {
		t.Skip("runs the suites again")
	}
	args := []string{"-test.count=1", "-test.skip", "^TestSuitesOnEtcd$", "-test.timeout", "20m"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), jinidtest.StoreEnv+"=etcd")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suites on etcd: %v\n%s", err, out)
	}
	t.Logf("the suites on etcd:\n%s", out)
}

package e2e

import (
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// The lab's tests mostly wait (on leases running out, announcements,
// peers' timeouts): three at a time on the 2-core machine (four, with
// three-node clusters on etcd beside the other packages' tests, left
// failovers and floods short of CPU: the suite's failures under load).
func TestMain(m *testing.M) {
	jinidtest.Parallel(3)
	jinidtest.Main(m)
}

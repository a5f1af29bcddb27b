package e2e

import (
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// The lab's tests mostly wait (on leases running out, announcements,
// peers' timeouts): four at a time on the 2-core machine.
func TestMain(m *testing.M) {
	jinidtest.Parallel(4)
	jinidtest.Main(m)
}

package conformance

import (
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

func TestMain(m *testing.M) { jinidtest.Main(m) }

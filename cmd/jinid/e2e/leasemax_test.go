package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// The lease maximums are config keys (limits.serviceLeaseMax, ...): a
// registration for longer gets the maximum, and the CLI says what was
// granted, what was asked and which limit cut it.
func TestLeaseMaximumIsSaid(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	d := jinidtest.StartDaemon(t, bin, t.TempDir(), "--limit", "serviceLeaseMax=90")
	out, err := exec.Command(bin, "lookup", "register", "--type", "com.example.Printer", "--duration", "forever", "--server", d.API).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "granted 1m30s, not the forever asked: the policy maximum (limits.serviceLeaseMax)") {
		t.Fatalf("register forever under serviceLeaseMax=90: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "lookup", "register", "--type", "com.example.Printer", "--duration", "1m", "--server", d.API).CombinedOutput()
	if err != nil || strings.Contains(string(out), "granted") {
		t.Fatalf("register for less than the maximum: %v\n%s", err, out)
	}
}

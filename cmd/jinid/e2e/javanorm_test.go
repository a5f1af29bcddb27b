package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/riverpeer"
)

// summary is a River client's last line.
func summary(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "SUMMARY ") {
			return l
		}
	}
	return ""
}

// An unmodified Java client of a lease renewal service (NormClient)
// finds jinid's at jinid's lookup service, the River proxy
// (ConstrainableNormProxy) pointing at jinid, and passes every step as
// against Norm: a set and its lease, a service's lease handed in and
// kept alive past three and a half of its periods by jinid alone, the
// expiration warning, the renewal failure of a lease cancelled behind
// the set's back, remove, and the set's cancel (issue 50).
func TestJavaNormClient(t *testing.T) {
	t.Parallel()
	jl := newJavaLab(t)
	out, err := riverpeer.Run(t, jl.java, 3*time.Minute, nil, "NormClient",
		"--locator", jl.locator(), "--listen-host", jl.javaIP.String(), "--event-wait", "15000")
	if err != nil {
		t.Fatalf("%v\n%s\njinid's log:\n%s", err, out, jl.proc.Log())
	}
	got, order, events := steps(out)
	if len(order) != 11 || events != 2 {
		t.Fatalf("%d steps, %d events; want 11 and 2:\n%s", len(order), events, out)
	}
	for _, s := range order {
		if got[s] != "OK" {
			t.Errorf("step %s: %s", s, got[s])
		}
	}
	if !strings.Contains(out, "org.apache.river.norm.proxy.NormProxy$ConstrainableNormProxy") {
		t.Errorf("the proxy found is not Norm's:\n%s", out)
	}
	t.Log(summary(out))
}

package javalookup

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/unicast"
	"github.com/jinid/jinid/internal/rig/riverpeer"
	"github.com/jinid/jinid/java/jeri"
)

// Java's own unicast discovery client (JGDMS, through the jar's Decode
// check) accepts jinid's v1 and v2 responses: their registrar proxies
// are ServiceRegistrars with jinid's ServiceID, and the descriptor for
// other jinids in the proxy's custom data is skipped.
func TestJavaAcceptsUnicastResponses(t *testing.T) {
	l := jgdms(t)
	sid, _ := discovery.ParseServiceID("feedface-cafe-4bee-8eef-0123456789ab")
	proxy, err := l.RegistrarBytes(Endpoint{Host: "192.0.2.1", Port: 4170, Object: jeri.Uuid{1, 2, 3}}, sid,
		`{"serviceID":"feedface-cafe-4bee-8eef-0123456789ab","apiURL":"http://192.0.2.1:4162"}`)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, v := range []int{1, 2} {
		r := &unicast.Response{Version: v, Format: discovery.PlaintextFormat, Host: "192.0.2.1", Port: 4160,
			Groups: []string{"", "lab"}, Registrar: discovery.Registrar{Proxy: proxy}}
		b, err := r.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&in, "v%d.response %s\n", v, hex.EncodeToString(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := riverpeer.Command(t, ctx, "Decode")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, out)
	}
	for _, v := range []string{"v1", "v2"} {
		// Version 1 has no host: Decode's stand-in socket gives its own.
		want := "OK response " + v + " host="
		if !strings.Contains(string(out), want) || strings.Count(string(out), "id="+sid.String()+" registrar=yes") != 2 {
			t.Fatalf("Java did not accept the %s response:\n%s", v, out)
		}
	}
}

package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/txn"
)

// docs/api/openapi.yaml documents every route the API serves, with its
// method and what it needs of its caller (x-jinid-scope).
func TestOpenAPIInStep(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	// Every service's routes: registering them touches no state, so zero
	// services will do.
	services := []httpjson.Service{&lease.Grantor{}, &lookup.Registrar{}, &lds.Service{}, &renewal.Service{}, &mailbox.Service{}, &access.Tokens{}, &txn.Service{}}
	routes, needs := api.Routes(services...), api.Needs(services...)
	scope := map[httpjson.Need]string{httpjson.Capability: "none", httpjson.Read: "read", httpjson.Client: "client", httpjson.Admin: "admin"}
	if len(routes) < 40 {
		t.Fatalf("only %d routes: %q", len(routes), routes)
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		at := -1
		for i, l := range lines {
			if l == "  "+path+":" {
				at = i
			}
		}
		if at < 0 {
			t.Errorf("%s is not documented in docs/api/openapi.yaml", path)
			continue
		}
		found, documented := false, ""
		for i, l := range lines[at+1:] {
			if strings.HasPrefix(l, "  /") {
				break
			}
			if strings.HasPrefix(l, "    "+strings.ToLower(method)+":") {
				found = true
				// The scope: on the line (flow style) or the next.
				for _, s := range []string{l, lines[at+2+i]} {
					if _, v, ok := strings.Cut(s, "x-jinid-scope: "); ok {
						documented, _, _ = strings.Cut(v, ",")
					}
				}
			}
		}
		switch {
		case !found:
			t.Errorf("%s %s is not documented in docs/api/openapi.yaml", method, path)
		case documented != scope[needs[r]]:
			t.Errorf("%s %s: x-jinid-scope %q in docs/api/openapi.yaml, the route needs %q", method, path, documented, scope[needs[r]])
		}
	}
}

package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
)

// docs/api/openapi.yaml documents every route the API serves, with its
// method.
func TestOpenAPIInStep(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	// Every service's routes: registering them touches no state, so zero
	// services will do.
	routes := api.Routes(&lease.Grantor{}, &lookup.Registrar{}, &lds.Service{}, &renewal.Service{}, &mailbox.Service{})
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
		found := false
		for _, l := range lines[at+1:] {
			if strings.HasPrefix(l, "  /") {
				break
			}
			if strings.HasPrefix(l, "    "+strings.ToLower(method)+":") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s is not documented in docs/api/openapi.yaml", method, path)
		}
	}
}

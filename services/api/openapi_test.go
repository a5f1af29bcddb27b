package api_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/jinid/jinid/java/javahelpers"
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
// method and what it needs of its caller (x-jinid-scope), read as the
// OpenAPI document it is.
func TestOpenAPIInStep(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../docs/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Every service's routes: registering them touches no state, so zero
	// services will do.
	services := []httpjson.Service{&lease.Grantor{}, &lookup.Registrar{}, &lds.Service{}, &renewal.Service{}, &mailbox.Service{}, &access.Tokens{}, &txn.Service{}, &javahelpers.API{}}
	routes, needs := api.Routes(services...), api.Needs(services...)
	scope := map[httpjson.Need]string{httpjson.Capability: "none", httpjson.Read: "read", httpjson.Client: "client", httpjson.Admin: "admin"}
	if len(routes) < 40 {
		t.Fatalf("only %d routes: %q", len(routes), routes)
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("%s is not documented in docs/api/openapi.yaml", path)
			continue
		}
		op := item.GetOperation(method)
		if op == nil {
			t.Errorf("%s %s is not documented in docs/api/openapi.yaml", method, path)
			continue
		}
		if documented, _ := op.Extensions["x-jinid-scope"].(string); documented != scope[needs[r]] {
			t.Errorf("%s %s: x-jinid-scope %q in docs/api/openapi.yaml, the route needs %q", method, path, documented, scope[needs[r]])
		}
	}
}

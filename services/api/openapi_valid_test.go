package api

import (
	"fmt"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// docs/api/openapi.yaml is a valid OpenAPI document, as a validator reads
// it (kin-openapi), and every operation has an operationId of its own.
func TestOpenAPIValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../docs/api/openapi.yaml")
	if err != nil {
		t.Fatalf("docs/api/openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("docs/api/openapi.yaml is not valid OpenAPI: %v", err)
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := fmt.Sprintf("%s %s", method, path)
			switch prev, dup := ids[op.OperationID]; {
			case op.OperationID == "":
				t.Errorf("%s has no operationId", where)
			case dup:
				t.Errorf("%s and %s share the operationId %q", where, prev, op.OperationID)
			default:
				ids[op.OperationID] = where
			}
		}
	}
}

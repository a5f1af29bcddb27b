package apidoc

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An answer the document describes passes; one it does not (a status it
// does not list, a body its schema refuses, a path it lacks) is named.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		status             int
		body, want         string
	}{
		{"documented error", "POST", "/v1/lookup/services", 400, `{"error":{"code":"InvalidArgument","message":"x"}}`, ""},
		{"undocumented status", "POST", "/v1/lookup/services", 418, `{}`, "answered 418"},
		{"body against its schema", "POST", "/v1/lookup/services", 400, `{"error":"not an object"}`, "not as docs/api/openapi.yaml says"},
		{"outside the API, coded", "GET", "/v1/nothing", 404, `{"error":{"code":"UnsupportedOperation","message":"x"}}`, ""},
		{"outside the API, uncoded", "GET", "/v1/nothing", 200, `{}`, "not in the document"},
	} {
		req := httptest.NewRequest(tc.method, "http://127.0.0.1:4162"+tc.path, nil)
		h := http.Header{"Content-Type": {"application/json"}}
		err := Check(req, tc.status, h, []byte(tc.body))
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

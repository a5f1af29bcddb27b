// Package apidoc holds the API to its document: it checks every answer
// a test receives against docs/api/openapi.yaml (with kin-openapi, a
// validator the tests link and no binary does), so that the server and
// the document cannot drift apart unseen. Handler wraps a server the
// test runs in-process; Transport, the client of a daemon it started.
package apidoc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
)

// MaxBody is the most of an answer's body checked; the API's answers
// are far smaller (its own limits bound them).
const MaxBody = 4 << 20

var loaded struct {
	once   sync.Once
	router routers.Router
	err    error
}

// path is docs/api/openapi.yaml, found from this file's place in the
// repository.
func path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "api", "openapi.yaml")
}

func router() (routers.Router, error) {
	loaded.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(path())
		if err != nil {
			loaded.err = fmt.Errorf("loading %s: %w", path(), err)
			return
		}
		// Any host: the tests' servers listen on loopback ports.
		doc.Servers = nil
		loaded.router, loaded.err = legacyrouter.NewRouter(doc)
	})
	return loaded.router, loaded.err
}

// Check says what is wrong with an answer (status, header, body) to req
// by the document: an operation it does not have, a status it does not
// list, a body its schema refuses. nil when the answer is as documented.
func Check(req *http.Request, status int, header http.Header, body []byte) error {
	r, err := router()
	if err != nil {
		return err
	}
	route, params, err := r.FindRoute(req)
	if err != nil {
		// A path or method outside the API is answered with a coded
		// 404 or 405, which tests ask for on purpose.
		var eb struct {
			Error struct{ Code string } `json:"error"`
		}
		if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) && json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
			return nil
		}
		return fmt.Errorf("%s %s: not in the document: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s answered %d, not as docs/api/openapi.yaml says: %w\n%s", req.Method, req.URL.Path, status, err, trim(body))
	}
	return nil
}

func trim(b []byte) []byte {
	if len(b) > 512 {
		return append(b[:512:512], "..."...)
	}
	return b
}

// Handler serves h and checks each of its answers, failing tb on one the
// document does not describe.
func Handler(tb testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if err := Check(r, rec.status, w.Header(), rec.body.Bytes()); err != nil {
			tb.Errorf("apidoc: %v", err)
		}
	})
}

// recorder passes an answer on and keeps a copy of its status and body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	if r.body.Len() < MaxBody {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Flush passes a flush on (the streams of events).
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Transport sends with rt (nil: http.DefaultTransport) and checks each
// answer, failing tb on one the document does not describe.
func Transport(tb testing.TB, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err := Check(req, resp.StatusCode, resp.Header, body); err != nil {
			tb.Errorf("apidoc: %v", err)
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

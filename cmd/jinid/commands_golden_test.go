//go:build !jinid_omit_tools

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/jinid/jinid/internal/rig/apidoc"
)

// The client commands' answers: fixed, as a daemon would give them (the
// API's document checks each, apidoc), so that what the commands print
// is golden.
var answers = map[string]string{
	"POST /v1/lookup/services":                     `{"serviceID":"01234567-89ab-cdef-fedc-ba9876543210","lease":{"grantor":"http://10.0.0.1:4162","id":"lease-1","expiration":1795685400000,"remaining":600000}}`,
	"POST /v1/lookup/query":                        `{"items":[{"serviceID":"01234567-89ab-cdef-fedc-ba9876543210","types":["com.example.Printer"],"attributes":[{"type":"net.jini.lookup.entry.Name","fields":{"name":"lobby","floor":2}}],"endpoint":"ipp://10.0.0.9/q"}],"totalMatches":1,"expirations":[1795685400000]}`,
	"GET /v1/lookup/services":                      `{"items":[{"serviceID":"01234567-89ab-cdef-fedc-ba9876543210","types":["com.example.Printer"],"attributes":[]},{"serviceID":"fedcba98-7654-3210-0123-456789abcdef","types":["com.example.Thing"],"attributes":[]}],"totalMatches":2,"expirations":[1795685400000,9223372036854775807]}`,
	"POST /v1/lookup/notify":                       `{"id":"notify-1","eventID":3,"seqNum":0,"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-2","expiration":1795686600000,"remaining":1800000,"cut":"notifyLeaseMax"}}`,
	"POST /v1/leases/renew":                        `{"results":[{"id":"lease-1","expiration":1795685400000},{"id":"gone","error":{"code":"UnknownLease","message":"no such lease"}}]}`,
	"POST /v1/leases/cancel":                       `{"results":[{"id":"lease-1"}]}`,
	"POST /v1/lds/registrations":                   `{"id":"reg-1","eventID":1,"seqNum":0,"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-3","expiration":1795686600000,"remaining":1800000}}`,
	"GET /v1/lds/registrations/reg-1":              `{"id":"reg-1","eventID":1,"seqNum":4,"groups":["","lab"],"locators":["jini://10.0.0.7:4160"],"listener":{"url":"http://10.0.0.5:9000/"},"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-3","expiration":1795686600000,"remaining":1800000}}`,
	"PUT /v1/lds/registrations/reg-1/groups":       `{"id":"reg-1","eventID":1,"seqNum":4,"groups":null,"locators":[],"listener":{"url":"http://10.0.0.5:9000/"},"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-3","expiration":1795686600000,"remaining":1800000}}`,
	"GET /v1/lds/registrations/reg-1/registrars":   `{"registrars":[{"serviceID":"9e2c5c52-3a0e-4d5b-8f5e-0a1b2c3d4e5f","host":"10.0.0.7","port":4160,"groups":["lab"],"locator":"jini://10.0.0.7:4160","kind":"jinid","apiURL":"http://10.0.0.7:4162","marshalled":"AAEC"}]}`,
	"POST /v1/lds/registrations/reg-1/discard":     ``,
	"POST /v1/renewal/sets":                        `{"id":"set-1","lease":{"grantor":"http://10.0.0.1:4162","id":"lease-4","expiration":1795688400000,"remaining":3600000}}`,
	"POST /v1/renewal/sets/set-1/leases":           ``,
	"GET /v1/renewal/sets/set-1/leases":            `{"leases":[{"grantor":"http://10.0.0.1:4162","id":"lease-1","expiration":1795685400000,"remaining":600000,"desiredExpiration":9223372036854775807,"renewDuration":9223372036854775807}]}`,
	"DELETE /v1/renewal/sets/set-1/leases/lease-1": `{"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-1","expiration":1795685400000,"remaining":600000}}`,
	"PUT /v1/renewal/sets/set-1/failure-listener":  `{"eventID":0,"seqNum":0,"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-4","expiration":1795688400000,"remaining":3600000}}`,
	"POST /v1/mailbox/registrations":               `{"id":"box-1","listener":{"url":"http://10.0.0.1:4162/v1/mailbox/listeners/t-abc"},"lease":{"grantor":"http://10.0.0.1:4162","id":"lease-5","expiration":1795688400000,"remaining":3600000}}`,
	"GET /v1/mailbox/registrations/box-1":          `{"id":"box-1","listener":{"url":"http://10.0.0.1:4162/v1/mailbox/listeners/t-abc"},"lease":"lease-5","pull":true,"iterator":false,"stored":0}`,
	"PUT /v1/mailbox/registrations/box-1/delivery": ``,
	"POST /v1/tokens":                              `{"id":"t1","name":"build-bot","scope":"client","created":1795681800000,"expires":0,"token":"jnd_secret"}`,
	"GET /v1/tokens":                               `{"tokens":[{"id":"t1","name":"build-bot","scope":"client","created":1795681800000,"expires":0}]}`,
	"DELETE /v1/tokens/build-bot":                  ``,
	"POST /v1/transactions":                        `{"id":"42","manager":"http://10.0.0.1:4162","lease":{"grantor":"http://10.0.0.1:4162","id":"lease-6","expiration":1795685400000,"remaining":600000}}`,
	"GET /v1/transactions/42":                      `{"id":"42","manager":"http://10.0.0.1:4162","state":"ACTIVE","parent":null}`,
	"POST /v1/transactions/42/commit":              `{"state":"COMMITTED"}`,
	"POST /v1/transactions/42/participants":        ``,
}

// fakeDaemon answers the client commands with answers, each checked
// against the API's document.
func fakeDaemon(t *testing.T) string {
	srv := httptest.NewServer(apidoc.Handler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.Method+" "+r.URL.Path]
		switch {
		case !ok:
			t.Errorf("the fake daemon has no answer to %s %s", r.Method, r.URL.Path)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"UnsupportedOperation","message":"not faked"}}`)
		case body == "":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "application/json")
			status := http.StatusOK
			if r.Method == http.MethodPost && r.URL.Path == "/v1/tokens" {
				status = http.StatusCreated
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
	})))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Every client command that prints data, in each format, prints what its
// golden file holds (go test -update rewrites them); every command that
// changes something prints its one line, and nothing with -q.
func TestCommandOutputs(t *testing.T) {
	url := fakeDaemon(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"lookup-register", []string{"lookup", "register", "--type", "com.example.Printer"}},
		{"lookup-query", []string{"lookup", "query", "--type", "com.example.Printer"}},
		{"lookup-list", []string{"lookup", "list"}},
		{"lookup-notify", []string{"lookup", "notify", "--listener", "http://10.0.0.5:9000/", "--type", "com.example.Printer"}},
		{"lease-renew", []string{"lease", "renew", "lease-1", "gone"}},
		{"lease-cancel", []string{"lease", "cancel", "lease-1"}},
		{"lds-register", []string{"lds", "register", "--groups", "lab", "--listener", "http://10.0.0.5:9000/"}},
		{"lds-show", []string{"lds", "show", "reg-1"}},
		{"lds-groups", []string{"lds", "groups", "reg-1", "set", "--all"}},
		{"lds-registrars", []string{"lds", "registrars", "reg-1"}},
		{"renewal-create", []string{"renewal", "create"}},
		{"renewal-list", []string{"renewal", "list", "set-1"}},
		{"renewal-remove", []string{"renewal", "remove", "set-1", "lease-1"}},
		{"renewal-failures", []string{"renewal", "failures", "set-1", "--listener", "http://10.0.0.5:9000/"}},
		{"mailbox-register", []string{"mailbox", "register", "--pull"}},
		{"mailbox-listener", []string{"mailbox", "listener", "box-1"}},
		{"token-create", []string{"token", "create", "--name", "build-bot"}},
		{"token-list", []string{"token", "list"}},
		{"txn-create", []string{"txn", "create"}},
		{"txn-state", []string{"txn", "state", "42"}},
		{"txn-commit", []string{"txn", "commit", "42"}},
		{"txn-enclosed-by", []string{"txn", "enclosed-by", "42", "41"}},
	} {
		for _, format := range []string{formatTable, formatJSON, formatYAML, formatParsable} {
			out, _, err := run(t, nil, append(c.args, "-o", format, "--server", url)...)
			if err != nil && c.name != "lease-renew" { // one of its two leases fails: exit 1
				t.Errorf("%s -o %s: %v", c.name, format, err)
				continue
			}
			golden(t, filepath.Join("testdata", "commands", c.name+"."+format), out)
		}
	}
	// A lease shorter than asked: what was granted, what was asked, and
	// the limit, on stderr.
	_, stderr, err := run(t, nil, "lookup", "notify", "--listener", "http://10.0.0.5:9000/", "--duration", "forever", "--server", url)
	if err != nil || stderr != "granted 30m0s, not the forever asked: the policy maximum (limits.notifyLeaseMax)\n" {
		t.Errorf("a cut lease: %v, said %q", err, stderr)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"lds", "discard", "reg-1", "9e2c5c52-3a0e-4d5b-8f5e-0a1b2c3d4e5f"}, "discarded 9e2c5c52-3a0e-4d5b-8f5e-0a1b2c3d4e5f from registration reg-1: it is rediscovered when it is heard again"},
		{[]string{"renewal", "add", "set-1", "--grantor", "http://10.0.0.1:4162", "--lease", "lease-1", "--remaining", "5m", "--desired", "24h"}, "set set-1 keeps lease lease-1 for 24h0m0s"},
		{[]string{"mailbox", "enable", "box-1", "http://10.0.0.5:9000/"}, "mailbox box-1 pushes its events to http://10.0.0.5:9000/"},
		{[]string{"token", "revoke", "build-bot"}, "token build-bot revoked"},
		{[]string{"txn", "join", "42", "http://10.0.0.5:9100/"}, "http://10.0.0.5:9100/ joined transaction 42"},
	} {
		out, _, err := run(t, nil, append(c.args, "--server", url)...)
		if err != nil || out != c.says+"\n" {
			t.Errorf("%v: %v, printed %q, want %q", c.args, err, out, c.says)
		}
		if out, _, err := run(t, nil, append(c.args, "--server", url, "-q")...); err != nil || out != "" {
			t.Errorf("%v -q: %v, printed %q", c.args, err, out)
		}
	}
}

// golden compares out with the file at path, or writes it with -update.
func golden(t *testing.T, path, out string) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if out != string(want) {
		t.Errorf("%s differs:\n%s\nwant:\n%s", path, out, want)
	}
}

//go:build !jinid_omit_tools

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/jinid/jinid/services/api/client"
	"github.com/jinid/jinid/services/apitypes"
)

// A fixed time, so that the outputs are golden.
var at = time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return at.Add(d).UnixMilli() }

var goldenItems = []apitypes.Item{
	{ServiceID: "01234567-89ab-cdef-fedc-ba9876543210", Types: []string{"com.example.Printer"}, Endpoint: "ipp://10.0.0.9/queue",
		Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "lobby"}}}},
	{ServiceID: "fedcba98-7654-3210-0123-456789abcdef", Types: []string{"com.example.Thing", "com.example.Sensor"}},
}

var goldenEvents = map[string]string{
	"service":   `{"source":{"service":"lookup","id":"notify-7"},"eventID":3,"seqNum":9,"type":"ServiceEvent","transition":"NOMATCH_MATCH","serviceID":"01234567-89ab-cdef-fedc-ba9876543210","handback":"bWluZQ=="}`,
	"discovery": `{"source":{"service":"lds","id":"reg-1"},"eventID":1,"seqNum":2,"type":"RemoteDiscoveryEvent","discarded":false,"registrars":[{"serviceID":"9e2c5c52-3a0e-4d5b-8f5e-0a1b2c3d4e5f","host":"10.0.0.7","port":4160,"groups":["lab"]}]}`,
	"failure":   `{"source":{"service":"renewal","id":"set-4"},"eventID":0,"seqNum":1,"type":"RenewalFailureEvent","lease":{"grantor":"http://10.0.0.7:4162","id":"lease-9","expiration":` + jsonInt(ms(time.Minute)) + `},"error":{"code":"UnknownLease","message":"no such lease"}}`,
	"warning":   `{"source":{"service":"renewal","id":"set-4"},"eventID":1,"seqNum":1,"type":"ExpirationWarningEvent","lease":"set-lease-4","expiration":` + jsonInt(ms(time.Hour)) + `}`,
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// outputs are what the commands print, each given fixed data: every
// command's records go through these.
var outputs = map[string]func(p *printer) error{
	"browse": func(p *printer) error {
		reggie := &source{id: "8a7b6c5d-1111-4222-8333-944455556666", addr: "10.0.0.3:4160", kind: "java"}
		gw := &source{id: "1f2e3d4c-aaaa-4bbb-8ccc-ddddeeeeffff", addr: "10.0.0.1:4160", kind: "jinid"}
		down := &source{id: "0c0c0c0c-0000-4000-8000-000000000000", addr: "10.0.0.9:4160", kind: "jinid"}
		views := []sourceView{
			{src: reggie, items: []apitypes.Item{goldenItems[0], {ServiceID: "77777777-7777-4777-8777-777777777777",
				Types: []string{"com.example.Hello"}, Endpoint: "jeri://10.0.0.4:41234",
				Attributes: []apitypes.Attribute{{Type: "net.jini.lookup.entry.ServiceInfo", Fields: map[string]any{"name": "hello", "vendor": "Example"}}}}}},
			{src: gw, items: goldenItems},
			{src: down, err: errors.New("reading 10.0.0.9:4160 over its API: connection refused")},
		}
		return printBrowse(p, mergeViews(views), views)
	},
	"lookup-register": func(p *printer) error {
		return p.one(record{{"serviceID", goldenItems[0].ServiceID}, {"lease", "3f2a9c"}, {"expires", instant(ms(10 * time.Minute))}})
	},
	"lookup-query": func(p *printer) error {
		return printItems(p, &bytes.Buffer{}, apitypes.Items{Items: goldenItems, TotalMatches: 5, Expirations: []int64{ms(10 * time.Minute), apitypes.Forever}})
	},
	"lookup-list":   func(p *printer) error { return printItems(p, &bytes.Buffer{}, apitypes.Items{Items: goldenItems[:0]}) },
	"lds-show":      func(p *printer) error { return p.one(registrationRecord(goldenRegistration(nil))) },
	"lds-show-some": func(p *printer) error { return p.one(registrationRecord(goldenRegistration([]string{"", "lab"}))) },
	"lds-registrars": func(p *printer) error {
		api := "http://10.0.0.7:4162"
		return printRegistrars(p, []apitypes.Registrar{
			{ServiceID: "9e2c5c52-3a0e-4d5b-8f5e-0a1b2c3d4e5f", Host: "10.0.0.7", Port: 4160, Groups: []string{"lab", ""}, Locator: "jini://10.0.0.7:4160", APIURL: &api},
			{ServiceID: "77777777-3a0e-4d5b-8f5e-0a1b2c3d4e5f", Host: "fe80::1%br-lan", Port: 4170, Groups: []string{"ops;eng"}, Locator: "jini://[fe80::1%25br-lan]:4170"},
		})
	},
	"lease-renew": func(p *printer) error {
		err := printBatch(p, []apitypes.BatchResult{{ID: "lease-1", Expiration: ms(5 * time.Minute)},
			{ID: "lease-2", Error: &apitypes.Error{Code: apitypes.UnknownLease, Message: "no such lease"}}}, "renewed")
		if err == nil {
			return os.ErrInvalid // one failed: the command fails
		}
		return nil
	},
	"renewal-list": func(p *printer) error {
		return p.list("leases", []record{
			clientLeaseRecord(apitypes.ClientLease{Lease: apitypes.Lease{ID: "lease-1", Grantor: "http://10.0.0.7:4162", Expiration: ms(5 * time.Minute)},
				DesiredExpiration: apitypes.Forever}),
			clientLeaseRecord(apitypes.ClientLease{Lease: apitypes.Lease{ID: "lease-2", Grantor: "http://10.0.0.8:4162", Expiration: ms(time.Minute)},
				DesiredExpiration: ms(24 * time.Hour), RenewDuration: 600_000}),
		}, clientLeaseRecord(apitypes.ClientLease{}))
	},
	"token-list": func(p *printer) error {
		return p.list("tokens", []record{
			tokenRecord(client.Token{ID: "t1", Name: "build-bot", Scope: "client", Created: ms(-time.Hour), Expires: ms(720 * time.Hour)}),
			tokenRecord(client.Token{ID: "t2", Name: "admin", Scope: "admin", Created: ms(-48 * time.Hour)}),
		}, tokenRecord(client.Token{}))
	},
	"txn-create": func(p *printer) error {
		return p.bare(record{{"transaction", "42"}, {"manager", "http://10.0.0.1:4162"}, {"lease", "tx-lease"}, {"expires", instant(ms(10 * time.Minute))}})
	},
	"events": func(p *printer) error {
		for _, k := range []string{"service", "discovery", "failure", "warning"} {
			if err := printEvent(p, at, []byte(goldenEvents[k])); err != nil {
				return err
			}
		}
		return nil
	},
}

func goldenRegistration(groups []string) apitypes.LDSRegistration {
	return apitypes.LDSRegistration{ID: "reg-1", EventID: 1, SeqNum: 4, Groups: groups, Locators: []string{"jini://10.0.0.7:4160"},
		Lease: apitypes.Lease{ID: "lds-lease", Expiration: ms(30 * time.Minute)}}
}

// Every output in every format matches its golden file (go test -update
// rewrites them), and the YAML says what the JSON says: parsed with a
// YAML library (the oracle of jinid's own writer), it is the same data.
func TestOutputs(t *testing.T) {
	for name, print := range outputs {
		checkGolden(t, name, print)
	}
}

// checkGolden checks one output in every format against its golden
// files.
func checkGolden(t *testing.T, name string, print func(p *printer) error) {
	t.Helper()
	{
		byFormat := map[string]string{}
		for _, format := range []string{formatTable, formatJSON, formatYAML, formatParsable} {
			var b bytes.Buffer
			if err := print(&printer{w: &b, format: format}); err != nil {
				t.Fatalf("%s -o %s: %v", name, format, err)
			}
			byFormat[format] = b.String()
			golden := filepath.Join("testdata", "output", name+"."+format)
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("%s -o %s:\n%s\nwant (%s):\n%s", name, format, b.String(), golden, want)
			}
		}
		checkYAMLIsJSON(t, name, byFormat[formatJSON], byFormat[formatYAML])
	}
}

// checkYAMLIsJSON: each JSON line and each YAML document are the same data.
func checkYAMLIsJSON(t *testing.T, name, js, ym string) {
	t.Helper()
	var fromJSON, fromYAML []any
	for line := range strings.Lines(js) {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s -o json: %v: %q", name, err, line)
		}
		fromJSON = append(fromJSON, normal(v))
	}
	dec := yaml.NewDecoder(strings.NewReader(ym))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s -o yaml does not parse: %v\n%s", name, err, ym)
			}
			break
		}
		fromYAML = append(fromYAML, normal(v))
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("%s: -o yaml says\n%v\n-o json says\n%v", name, fromYAML, fromJSON)
	}
	// And in the same order of keys, nested ones too (YAML sorted those).
	var jsonKeys, yamlKeys []string
	for line := range strings.Lines(js) {
		d := json.NewDecoder(strings.NewReader(line))
		v, err := ordered(d)
		if err != nil {
			t.Fatal(err)
		}
		jsonKeys = append(jsonKeys, keysOf(v)...)
	}
	dec = yaml.NewDecoder(strings.NewReader(ym))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break
		}
		yamlKeys = append(yamlKeys, yamlKeysOf(&n)...)
	}
	if !slices.Equal(jsonKeys, yamlKeys) {
		t.Errorf("%s: -o yaml's keys in the order\n%q\n-o json's\n%q", name, yamlKeys, jsonKeys)
	}
}

// keysOf lists the keys of the JSON data ordered reads, depth first.
func keysOf(v any) []string {
	var out []string
	switch v := v.(type) {
	case record:
		for _, f := range v {
			out = append(out, f.name)
			out = append(out, keysOf(f.value)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, keysOf(e)...)
		}
	}
	return out
}

// yamlKeysOf lists the keys of a YAML document, depth first.
func yamlKeysOf(n *yaml.Node) []string {
	var out []string
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, n.Content[i].Value)
			out = append(out, yamlKeysOf(n.Content[i+1])...)
		}
	default:
		for _, c := range n.Content {
			out = append(out, yamlKeysOf(c)...)
		}
	}
	return out
}

// normal makes JSON's and YAML's data comparable: numbers as float64,
// maps as map[string]any.
func normal(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = normal(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normal(e)
		}
		return out
	case int:
		return float64(v)
	case uint64:
		return float64(v)
	case int64:
		return float64(v)
	}
	return v
}

// The format flags: -o names one, --json is -o json, and two that
// disagree or an unknown one are a usage error.
func TestOutputFlags(t *testing.T) {
	for _, tc := range []struct {
		o    outputFlags
		want string
	}{
		{outputFlags{format: "table"}, formatTable},
		{outputFlags{format: "YAML"}, formatYAML},
		{outputFlags{format: "table", json: true}, formatJSON},
		{outputFlags{format: "json", json: true}, formatJSON},
		{outputFlags{format: "yaml", json: true}, ""},
		{outputFlags{format: "xml"}, ""},
	} {
		got, err := tc.o.chosen()
		if got != tc.want || (tc.want == "") != (err != nil) || err != nil && exitCode(err) != exitUsage {
			t.Errorf("%+v: %q %v, want %q", tc.o, got, err, tc.want)
		}
	}
}

// What came from elsewhere reaches the terminal shown, never sent: a
// service's Name that sets the window's title, colours a line, returns
// the carriage and forges a line is escaped in a table, a stream's line
// and a parsable line; JSON and YAML keep it exact (escaped as their
// syntax says).
func TestOutputEscapesControls(t *testing.T) {
	hostile := "\x1b]0;owned\x07\x1b[31mprinter\r\nforged 10.0.0.1:4160"
	r := record{{"name", hostile}, {"groups", []string{"lab\nother"}}}
	for _, format := range []string{formatTable, formatParsable} {
		for what, print := range map[string]func(p *printer) error{
			"one":  func(p *printer) error { return p.one(r) },
			"list": func(p *printer) error { return p.list("services", []record{r}, r) },
			"item": func(p *printer) error { return p.item(r) },
		} {
			var b bytes.Buffer
			if err := print(&printer{w: &b, format: format}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if strings.ContainsAny(strings.TrimSuffix(out, "\n"), "\x1b\x07\r") || strings.Contains(out, "\nforged") || strings.Contains(out, "lab\nother") {
				t.Errorf("-o %s (%s) sends controls to the terminal: %q", format, what, out)
			}
		}
	}
	var b bytes.Buffer
	if err := (&printer{w: &b, format: formatJSON}).one(r); err != nil {
		t.Fatal(err)
	}
	var back struct{ Name string }
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Name != hostile {
		t.Errorf("-o json changed the name: %q (%v)", back.Name, err)
	}
}

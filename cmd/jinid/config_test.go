//go:build !jinid_omit_daemon

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// configuredDaemonFlags parses args for the daemon command and applies
// the environment env and the config file, as RunE does, without running
// anything.
func configuredDaemonFlags(t *testing.T, file string, env map[string]string, args ...string) (*pflag.FlagSet, sources, error) {
	t.Helper()
	f := daemonFlags(&daemonOptions{}, &globalFlags{})
	if err := f.Parse(args); err != nil {
		return nil, nil, err
	}
	c, errs := readConfig(file)
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	src, errs := resolve(f, c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return f, src, errors.Join(errs...)
}

func writeConfig(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "jinid.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigFile(t *testing.T) {
	p := writeConfig(t, `{"schemaVersion":1,"groups":["","lab"],"announceInterval":"30s","interfaces":["eth*"],
		"multicast":false,"dnsSD":false,"discoveryPort":4170,"apiListen":"127.0.0.1:5000","dataDir":"/tmp/x","logLevel":"debug",
		"apiSocket":"/run/x.sock","socketGroup":"jinid","anonymous":"none","apiHosts":["gw.lan"],"advertise":"gw.example.org",
		"allowOutbound":["127.0.0.0/8"],"apiTLSCert":"/etc/c.pem","apiTLSKey":"/etc/k.pem"}`)
	f, _, err := configuredDaemonFlags(t, p, nil, "--discovery-port", "4180")
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) string { return f.Lookup(name).Value.String() }
	for name, want := range map[string]string{
		"discovery-port":    "4180", // the flag wins over the file
		"announce-interval": "30s",
		"interfaces":        "[eth*]",
		"groups":            "[lab]",
		"public-group":      "true",
		"no-multicast":      "true",
		"no-dns-sd":         "true",
		"api-listen":        "127.0.0.1:5000",
		"data-dir":          "/tmp/x",
		"api-socket":        "/run/x.sock",
		"socket-group":      "jinid",
		"anonymous":         "none",
		"api-host":          "[gw.lan]",
		"advertise":         "gw.example.org",
		"allow-outbound":    "[127.0.0.0/8]",
		"api-tls-cert":      "/etc/c.pem",
		"api-tls-key":       "/etc/k.pem",
	} {
		if got := get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := get("log-level"); got != "debug" {
		t.Errorf("log-level = %q", got)
	}
	if !slices.Contains([]string{"true"}, get("public-group")) {
		t.Error("public group lost")
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"groups":["lab"],"colour":"red"}`, `:1:19: colour: unknown key`},
		{`{"announceInterval":"often"}`, `:1:21: announceInterval: want a duration such as 120s`},
		{`{"schemaVersion":9}`, ":1:18: schemaVersion: schemaVersion 9 is newer"},
		{`{"discoveryPort":"x"}`, ":1:18: discoveryPort: want a whole number"},
		{`not json`, ":1:2: not JSON"},
		{`{"groups": ["lab"]`, ":1:19: the file ends before its object does"},
	} {
		_, _, err := configuredDaemonFlags(t, writeConfig(t, tc.body), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.body, err, tc.want)
		}
	}
	if _, _, err := configuredDaemonFlags(t, "/nonexistent/jinid.json", nil); err == nil || !strings.Contains(err.Error(), "reading config") {
		t.Errorf("a named config file that is missing: %v", err)
	}
}

// config check names every error with its file, line, column and key,
// in words a person reads (no Go types).
func TestConfigCheck(t *testing.T) {
	p := writeConfig(t, `{
  "schemaVersion": 1,
  "announceInterval": 120,
  "groups": ["lab"],
  "interfaces": "eth0",
  "colour": "red",
  "limits": {"apiConns": 64, "apiConn": 1},
  "mailboxQuota": 500,
  "logLevel": "loud",
  "groups": ["again"]
}`)
	out, _, err := run(t, nil, "config", "check", p)
	if err == nil || !strings.Contains(err.Error(), "error(s)") {
		t.Fatalf("config check of a bad file: %v", err)
	}
	for _, want := range []string{
		p + ":3:23: announceInterval: want a string",
		p + ":5:17: interfaces: want a list of strings",
		p + `:6:3: colour: unknown key`,
		p + `:7:13: limits: unknown limit "apiConn"`,
		p + ":10:3: groups: given twice",
		p + `:9:15: logLevel: --log-level "loud": want debug, info, warn or error`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("config check does not say %q:\n%s", want, out)
		}
	}
	for _, leak := range []string{"Go struct", "unmarshal", "json: "} {
		if strings.Contains(out, leak) {
			t.Errorf("config check leaks %q:\n%s", leak, out)
		}
	}
	good := writeConfig(t, `{"schemaVersion":1,"groups":["","lab"],"mailboxQuota":500,"limits":{"apiConns":64},"logLevel":"debug"}`)
	if out, _, err := run(t, nil, "config", "check", good); err != nil || out != good+": ok\n" {
		t.Fatalf("config check of a good file: %q %v", out, err)
	}
	// A value the file gives in the right shape but the daemon refuses.
	bad := writeConfig(t, `{"apiListen":"4162"}`)
	if out, _, err := run(t, nil, "config", "check", bad); err == nil || !strings.Contains(out, "want host:port") {
		t.Fatalf("config check of a bad listen address: %q %v", out, err)
	}
}

// One precedence for every setting: flag, then environment, then file,
// then default; and each value's source is known.
func TestConfigPrecedence(t *testing.T) {
	p := writeConfig(t, `{"discoveryPort": 4170, "renewalMargin": "40s", "announceInterval": "30s", "multicast": false,
  "limits": {"apiConns": 64}}`)
	env := map[string]string{"JINID_DISCOVERY_PORT": "4175", "JINID_RENEWAL_MARGIN": "50s", "JINID_GROUPS": ",lab", "JINID_MAILBOX_QUOTA": "7"}
	f, src, err := configuredDaemonFlags(t, p, env, "--discovery-port", "4180")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, value, key, from string }{
		{"discovery-port", "4180", "discoveryPort", "flag --discovery-port"},
		{"renewal-margin", "50s", "renewalMargin", "env JINID_RENEWAL_MARGIN"},
		{"announce-interval", "30s", "announceInterval", p + ":1:49"},
		{"no-multicast", "true", "multicast", p + ":1:76"},
		{"groups", "[lab]", "groups", "env JINID_GROUPS"},
		{"public-group", "true", "publicGroup", "default"},
		{"mailbox-quota", "7", "mailboxQuota", "env JINID_MAILBOX_QUOTA"},
		{"limit", "[apiConns=64]", "limits", p + ":2:3"},
		{"lds-announce-interval", "2m0s", "ldsAnnounceInterval", "default"},
	} {
		if got := f.Lookup(c.flag).Value.String(); got != c.value {
			t.Errorf("--%s = %q, want %q", c.flag, got, c.value)
		}
		if src[c.key] != c.from {
			t.Errorf("%s came from %q, want %q", c.key, src[c.key], c.from)
		}
	}
	if _, _, err := configuredDaemonFlags(t, "", map[string]string{"JINID_ANNOUNCE_INTERVAL": "often"}); err == nil ||
		!strings.Contains(err.Error(), `JINID_ANNOUNCE_INTERVAL="often": want a duration`) {
		t.Errorf("a bad environment value: %v", err)
	}
}

// Every setting has a flag of the daemon (and so an environment
// variable), and every flag of the daemon but the one-shot ones is a
// setting.
func TestEverySettingEverywhere(t *testing.T) {
	f := daemonFlags(&daemonOptions{}, &globalFlags{})
	keys := map[string]bool{}
	for _, s := range settings {
		if f.Lookup(s.flag) == nil {
			t.Errorf("setting %s: no flag --%s", s.key, s.flag)
		}
		keys[s.flag] = true
	}
	oneShot := map[string]bool{"config": true, "print-interfaces": true, "public-group": true, "quiet": true}
	f.VisitAll(func(f *pflag.Flag) {
		if !keys[f.Name] && !oneShot[f.Name] {
			t.Errorf("flag --%s is no config key", f.Name)
		}
	})
}

func TestConfigPrint(t *testing.T) {
	p := writeConfig(t, `{"groups": ["", "lab"], "mailboxQuota": 9, "limits": {"items": 7}}`)
	t.Setenv("JINID_RENEWAL_MARGIN", "45s")
	out, _, err := run(t, nil, "config", "print", "--config", p, "--discovery-port", "4999")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^# config file ` + regexp.QuoteMeta(p) + `$`),
		regexp.MustCompile(`(?m)^discoveryPort +4999 +flag --discovery-port$`),
		regexp.MustCompile(`(?m)^renewalMargin +45s +env JINID_RENEWAL_MARGIN$`),
		regexp.MustCompile(`(?m)^mailboxQuota +9 +file 1:25$`),
		// Effective values, not the zero that means a default.
		regexp.MustCompile(`(?m)^mailboxTotalQuota +1000000 +default$`),
		regexp.MustCompile(`(?m)^limits\.items +7 +file 1:44$`),
		regexp.MustCompile(`(?m)^limits\.notifies +2000 +default$`),
		regexp.MustCompile(`(?m)^multicast +true +default$`),
		regexp.MustCompile(`(?m)^groups +\[lab\] +file 1:2$`),
		regexp.MustCompile(`(?m)^publicGroup +true +default$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("config print lacks %s:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if n := len(strings.TrimRight(line, " \n")); n > 100 {
			t.Errorf("config print: a line of %d columns, over 100: %q", n, line)
		}
	}
	js, _, err := run(t, nil, "config", "print", "--config", p, "-o", "json")
	// With each key's flag and variable (the doc promised them).
	if err != nil || !strings.Contains(js, `{"key":"limits.items","value":"7","from":"file 1:44","flag":"--limit items=N","env":"JINID_LIMIT"}`) ||
		!regexp.MustCompile(`\{"key":"dataDir","value":"[^"]*","from":"default","flag":"--data-dir","env":"JINID_DATA_DIR"\}`).MatchString(js) {
		t.Errorf("config print -o json: %v\n%s", err, js)
	}
}

// config check lists every error of a file in one pass: unknown keys,
// bad limits, and what only the whole configuration shows.
func TestConfigCheckEveryError(t *testing.T) {
	p := writeConfig(t, `{"apiListen": "4162", "announceInterval": "1ms", "limits": {"items": -1, "notifies": -2},
"snapshotInterval": "1s", "frobnicate": 3}`)
	out, _, err := run(t, nil, "config", "check", p)
	if err == nil || exitCode(err) != exitFailure {
		t.Fatalf("config check of a bad file: %v, want exit 1", err)
	}
	for _, want := range []string{"frobnicate: unknown key", "limit items: want", "limit notifies: want",
		`API listen address "4162"`, "announcement interval 1ms", "snapshot interval 1s"} {
		if !strings.Contains(out, want) {
			t.Errorf("config check does not say %q:\n%s", want, out)
		}
	}
}

// The example config the packages ship is good.
func TestExampleConfig(t *testing.T) {
	out, _, err := run(t, nil, "config", "check", "../../firmware/jinid.example.json")
	if err != nil {
		t.Fatalf("firmware/jinid.example.json: %v\n%s", err, out)
	}
}

// The config file's services section: each checked as the daemon would
// register it, every mistake said.
func TestConfigServices(t *testing.T) {
	good := writeConfig(t, `{"services": [{"name": "door", "types": ["com.example.Door"], "endpoint": "http://10.0.0.8/"}]}`)
	if out, _, err := run(t, nil, "config", "check", good); err != nil {
		t.Fatalf("a good services section: %v\n%s", err, out)
	}
	bad := writeConfig(t, `{"services": [{"types": ["not a java name!!"]}, {"name": "x"}, {"name": "y", "colour": 1}]}`)
	out, _, err := run(t, nil, "config", "check", bad)
	if err == nil || !strings.Contains(out, `unknown field "colour"`) {
		t.Fatalf("a services entry with an unknown field: %v\n%s", err, out)
	}
	bad = writeConfig(t, `{"services": [{"types": ["not a java name!!"]}, {"name": "x"}]}`)
	out, _, err = run(t, nil, "config", "check", bad)
	for _, want := range []string{"services[0]: a name is required", `type "not a java name!!" is not a Java class`, "services[1] (x): a type or an attribute is required"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("config check does not say %q: %v\n%s", want, err, out)
		}
	}
}

// Every daemon setting means the same in all three forms: given on the
// command line, in the environment, or in the config file, config print
// shows the same effective value (not the default) for it. (`--groups
// lab` kept the public group where JINID_GROUPS=lab and {"groups":
// ["lab"]} dropped it.)
func TestEverySettingThreeForms(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("x"), 0o600)
		return p
	}
	// A value each setting does not have by default (text, as on the
	// command line), and what else must be given for the daemon's
	// configuration to hold (on the command line, in every form).
	etcd := []string{"--store", "etcd", "--etcd-endpoints", "https://10.0.0.1:2379", "--etcd-insecure"}
	samples := map[string]struct {
		value string
		with  []string
	}{
		"apiListen":           {value: "127.0.0.1:5000"},
		"anonymous":           {value: "none"},
		"logLevel":            {value: "debug"},
		"logFormat":           {value: "json"},
		"apiHosts":            {value: "gw.lan,gw2.lan"},
		"advertise":           {value: "gw.example.org"},
		"apiTLSCert":          {value: file("c.pem"), with: []string{"--api-tls-key", file("k.pem")}},
		"apiTLSKey":           {value: file("k2.pem"), with: []string{"--api-tls-cert", file("c2.pem")}},
		"allowOutbound":       {value: "10.9.0.0/16,fd00::/8"},
		"javaRegisterFrom":    {value: "10.9.0.0/16"},
		"store":               {value: "etcd", with: []string{"--etcd-endpoints", "https://10.0.0.1:2379", "--etcd-insecure"}},
		"etcdEndpoints":       {value: "https://10.0.0.1:2379,https://10.0.0.2:2379", with: []string{"--store", "etcd", "--etcd-insecure"}},
		"etcdPrefix":          {value: "/site", with: etcd},
		"etcdCert":            {value: file("e.pem"), with: append(slices.Clone(etcd), "--etcd-key", file("ek.pem"))},
		"etcdKey":             {value: file("ek2.pem"), with: append(slices.Clone(etcd), "--etcd-cert", file("e2.pem"))},
		"etcdCA":              {value: file("ca.pem"), with: etcd},
		"etcdInsecure":        {value: "true", with: []string{"--store", "etcd", "--etcd-endpoints", "https://10.0.0.1:2379"}},
		"etcdLeaseTTL":        {value: "20s", with: etcd},
		"node":                {value: "node-a", with: etcd},
		"clusterListen":       {value: ":4170", with: etcd},
		"clusterCA":           {value: file("cca.pem"), with: append(slices.Clone(etcd), "--cluster-cert", file("cc3.pem"), "--cluster-key", file("ck3.pem"))},
		"clusterCert":         {value: file("cc.pem"), with: append(slices.Clone(etcd), "--cluster-ca", file("cca4.pem"), "--cluster-key", file("ck.pem"))},
		"clusterKey":          {value: file("ck2.pem"), with: append(slices.Clone(etcd), "--cluster-ca", file("cca5.pem"), "--cluster-cert", file("cc2.pem"))},
		"snapshotInterval":    {value: "2h"},
		"announceInterval":    {value: "30s"},
		"ldsAnnounceInterval": {value: "90s"},
		"renewalMargin":       {value: "45s"},
		"discoveryPort":       {value: "4170"},
		"javaPort":            {value: "4180"},
		"mailboxQuota":        {value: "7"},
		"mailboxTotalQuota":   {value: "70"},
	}
	var g globalFlags
	fs := daemonFlags(&daemonOptions{}, &g)
	printed := func(t *testing.T, key string, args ...string) string {
		t.Helper()
		out, stderr, err := run(t, nil, append([]string{"config", "print", "-o", "json"}, args...)...)
		if err != nil && strings.Contains(err.Error(), "built without") {
			t.Skipf("this build has no %s: %v", key, err) // the router build: no TLS, no etcd
		}
		if err != nil {
			t.Fatalf("config print %v: %v %s", args, err, stderr)
		}
		var v struct {
			Settings []struct{ Key, Value, From string }
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		for _, s := range v.Settings {
			if s.Key == key {
				return s.Value
			}
		}
		t.Fatalf("config print shows no %s", key)
		return ""
	}
	for _, s := range settings {
		if s.key == "limits" {
			continue // its own test: TestConfigPrint, TestConfigPrecedence
		}
		t.Run(s.key, func(t *testing.T) {
			f := fs.Lookup(s.flag)
			sample, ok := samples[s.key]
			typ := f.Value.Type()
			switch {
			case ok:
			case typ == "bool":
				def, _ := strconv.ParseBool(f.DefValue)
				sample.value = strconv.FormatBool(!def)
			case typ == "stringSlice":
				sample.value = "a,b"
			case typ == "string":
				sample.value = filepath.Join(dir, s.key)
			default:
				t.Fatalf("no sample value for %s (%s)", s.key, typ)
			}
			// The file's form: JSON of the setting's own type; an inverted
			// flag (--no-multicast) is the positive key (multicast).
			var js any = sample.value
			switch typ {
			case "bool":
				b, _ := strconv.ParseBool(sample.value)
				js = b != s.invert
			case "int":
				n, _ := strconv.Atoi(sample.value)
				js = n
			case "stringSlice":
				js = strings.Split(sample.value, ",")
			}
			body, _ := json.Marshal(map[string]any{s.key: js})
			if sample.value == f.DefValue || "["+sample.value+"]" == f.DefValue {
				t.Fatalf("the sample %q is the default", sample.value)
			}
			byFlag := printed(t, s.key, append([]string{"--" + s.flag + "=" + sample.value}, sample.with...)...)
			t.Setenv("JINID_"+strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_")), sample.value)
			byEnv := printed(t, s.key, sample.with...)
			os.Unsetenv("JINID_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_")))
			byFile := printed(t, s.key, append([]string{"--config", writeConfig(t, string(body))}, sample.with...)...)
			if byEnv != byFlag || byFile != byFlag {
				t.Errorf("flag %s, env %s, file %s (%s): want one meaning", byFlag, byEnv, byFile, body)
			}
		})
	}
}

// config check reads the services directory too: a file there that
// gives no service is an error now, not at the next start.
func TestConfigCheckServicesDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.json"), []byte(`{"types": ["com.example.Printer"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{\"types\": [\"a.B\"],\n \"endpoint\": 5}"), 0o644)
	p := writeConfig(t, `{"servicesDir": "`+dir+`"}`)
	out, _, err := run(t, nil, "config", "check", p)
	if err == nil || !strings.Contains(out, filepath.Join(dir, "bad.json")+": line 2, column") || strings.Contains(out, "good.json") {
		t.Errorf("config check of a services directory with a bad file: %v\n%s", err, out)
	}
}

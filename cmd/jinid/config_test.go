package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// configuredDaemonFlags parses args for the daemon command and applies
// the config file, as RunE does, without running anything.
func configuredDaemonFlags(t *testing.T, file string, args ...string) (*cobra.Command, error) {
	t.Helper()
	root := newRootCmd(os.Stdout, os.Stderr)
	cmd, _, err := root.Find([]string{"daemon"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args); err != nil {
		return nil, err
	}
	fc, path, err := loadConfig(file)
	if err != nil {
		return nil, err
	}
	if fc != nil {
		err = fc.apply(cmd.Flags(), path)
	}
	return cmd, err
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
	cmd, err := configuredDaemonFlags(t, p, "--discovery-port", "4180")
	if err != nil {
		t.Fatal(err)
	}
	f := cmd.Flags()
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
	if got := cmd.Root().PersistentFlags().Lookup("log-level").Value.String(); got != "debug" {
		t.Errorf("log-level = %q", got)
	}
	if !slices.Contains([]string{"true"}, get("public-group")) {
		t.Error("public group lost")
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"groups":["lab"],"colour":"red"}`, `unknown field "colour"`},
		{`{"announceInterval":"often"}`, `announceInterval "often": want a duration`},
		{`{"schemaVersion":9}`, "schemaVersion 9 is newer"},
		{`{"discoveryPort":"x"}`, "discoveryPort"},
		{`not json`, "invalid character"},
	} {
		_, err := configuredDaemonFlags(t, writeConfig(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.body, err, tc.want)
		}
	}
	if _, err := configuredDaemonFlags(t, "/nonexistent/jinid.json"); err == nil || !strings.Contains(err.Error(), "reading config") {
		t.Errorf("a named config file that is missing: %v", err)
	}
}

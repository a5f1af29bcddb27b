package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
	"github.com/spf13/pflag"
)

// DefaultConfigFile is read when present and no --config is given.
const DefaultConfigFile = "/etc/jinid/jinid.json"

// configSchema is the config file layout this build reads.
const configSchema = 1

// fileConfig is the daemon's config file. Every field is optional; a flag
// given on the command line wins over the file.
type fileConfig struct {
	SchemaVersion       int       `json:"schemaVersion"`
	APIListen           *string   `json:"apiListen"`
	DataDir             *string   `json:"dataDir"`
	Groups              *[]string `json:"groups"` // "" is the public group
	AnnounceInterval    *string   `json:"announceInterval"`
	LDSAnnounce         *string   `json:"ldsAnnounceInterval"`
	RenewalMargin       *string   `json:"renewalMargin"`
	Interfaces          *[]string `json:"interfaces"`
	ExcludeInterfaces   *[]string `json:"excludeInterfaces"`
	ExcludeDefaultRoute *bool     `json:"excludeDefaultRoute"`
	Multicast           *bool     `json:"multicast"`
	DNSSD               *bool     `json:"dnsSD"`
	DiscoveryPort       *int      `json:"discoveryPort"`
	LogLevel            *string   `json:"logLevel"`
	LogFormat           *string   `json:"logFormat"`
	APISocket           *string   `json:"apiSocket"`
	SocketGroup         *string   `json:"socketGroup"`
	Anonymous           *string   `json:"anonymous"`
	APIHosts            *[]string `json:"apiHosts"`
	Advertise           *string   `json:"advertise"`
	AllowOutbound       *[]string `json:"allowOutbound"`
	APITLSCert          *string   `json:"apiTLSCert"`
	APITLSKey           *string   `json:"apiTLSKey"`
	// Limits has no flags: it is the file's alone.
	Limits *app.Limits `json:"limits"`
}

// loadConfig reads path, or the default file if path is "" and it exists.
// It returns nil when there is nothing to read.
func loadConfig(path string) (*fileConfig, string, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultConfigFile
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, "", nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading config: %w", err)
	}
	var c fileConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, path, fmt.Errorf("config %s: %w", path, err)
	}
	if c.SchemaVersion > configSchema {
		return nil, path, fmt.Errorf("config %s: schemaVersion %d is newer than this jinid reads (%d)", path, c.SchemaVersion, configSchema)
	}
	return &c, path, nil
}

// apply sets every flag the file gives a value for and the command line
// did not.
func (c *fileConfig) apply(fs *pflag.FlagSet, path string) error {
	set := func(name, value string) error {
		if fs.Changed(name) {
			return nil
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("config %s: %s: %w", path, name, err)
		}
		return nil
	}
	setList := func(name string, v []string) error {
		if fs.Changed(name) {
			return nil
		}
		f := fs.Lookup(name)
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return fmt.Errorf("flag %s is not a list", name)
		}
		if err := sv.Replace(v); err != nil {
			return fmt.Errorf("config %s: %s: %w", path, name, err)
		}
		f.Changed = true
		return nil
	}
	var errs []error
	if c.APIListen != nil {
		errs = append(errs, set("api-listen", *c.APIListen))
	}
	if c.DataDir != nil {
		errs = append(errs, set("data-dir", *c.DataDir))
	}
	if c.Groups != nil && !fs.Changed("groups") && !fs.Changed("public-group") {
		named, public := []string{}, false
		for _, g := range *c.Groups {
			if g == "" {
				public = true
			} else {
				named = append(named, g)
			}
		}
		errs = append(errs, setList("groups", named), set("public-group", fmt.Sprint(public)))
	}
	if c.AnnounceInterval != nil {
		if _, err := time.ParseDuration(*c.AnnounceInterval); err != nil {
			errs = append(errs, fmt.Errorf("config %s: announceInterval %q: want a duration such as 120s", path, *c.AnnounceInterval))
		} else {
			errs = append(errs, set("announce-interval", *c.AnnounceInterval))
		}
	}
	if c.RenewalMargin != nil {
		if _, err := time.ParseDuration(*c.RenewalMargin); err != nil {
			errs = append(errs, fmt.Errorf("config %s: renewalMargin %q: want a duration such as 30s", path, *c.RenewalMargin))
		} else {
			errs = append(errs, set("renewal-margin", *c.RenewalMargin))
		}
	}
	if c.LDSAnnounce != nil {
		if _, err := time.ParseDuration(*c.LDSAnnounce); err != nil {
			errs = append(errs, fmt.Errorf("config %s: ldsAnnounceInterval %q: want a duration such as 120s", path, *c.LDSAnnounce))
		} else {
			errs = append(errs, set("lds-announce-interval", *c.LDSAnnounce))
		}
	}
	if c.Interfaces != nil {
		errs = append(errs, setList("interfaces", *c.Interfaces))
	}
	if c.ExcludeInterfaces != nil {
		errs = append(errs, setList("exclude-interfaces", *c.ExcludeInterfaces))
	}
	if c.ExcludeDefaultRoute != nil {
		errs = append(errs, set("exclude-default-route", fmt.Sprint(*c.ExcludeDefaultRoute)))
	}
	if c.Multicast != nil {
		errs = append(errs, set("no-multicast", fmt.Sprint(!*c.Multicast)))
	}
	if c.DNSSD != nil {
		errs = append(errs, set("no-dns-sd", fmt.Sprint(!*c.DNSSD)))
	}
	if c.DiscoveryPort != nil {
		errs = append(errs, set("discovery-port", fmt.Sprint(*c.DiscoveryPort)))
	}
	if c.LogLevel != nil {
		errs = append(errs, set("log-level", *c.LogLevel))
	}
	if c.LogFormat != nil {
		errs = append(errs, set("log-format", *c.LogFormat))
	}
	for name, v := range map[string]*string{"api-socket": c.APISocket, "socket-group": c.SocketGroup, "anonymous": c.Anonymous,
		"advertise": c.Advertise, "api-tls-cert": c.APITLSCert, "api-tls-key": c.APITLSKey} {
		if v != nil {
			errs = append(errs, set(name, *v))
		}
	}
	for name, v := range map[string]*[]string{"api-host": c.APIHosts, "allow-outbound": c.AllowOutbound} {
		if v != nil {
			errs = append(errs, setList(name, *v))
		}
	}
	return errors.Join(errs...)
}

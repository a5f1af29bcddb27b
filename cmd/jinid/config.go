//go:build !jinid_omit_daemon

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
)

// DefaultConfigFile is read when present and no --config is given.
const DefaultConfigFile = "/etc/jinid/jinid.json"

// configSchema is the config file layout this build reads.
const configSchema = 1

// maxConfigBytes bounds the config file read.
const maxConfigBytes = 1 << 20

// setting ties a config file key to the daemon's flag of the same
// meaning, and through it to an environment variable (envName). One rule
// of precedence holds for all: a flag on the command line wins over the
// environment, which wins over the config file, which wins over the
// built-in default.
type setting struct {
	key, flag string
	// invert: the key says the opposite of the flag ("multicast": true is
	// --no-multicast=false).
	invert bool
	// reload: a SIGHUP applies a new value at once; the others take
	// effect at the next start.
	reload bool
}

// settings lists every setting of the daemon. The public group is
// publicGroup, its own setting in all three forms (groups names the
// others): a group list given anywhere means the same.
var settings = []setting{
	{key: "apiListen", flag: "api-listen"},
	{key: "dataDir", flag: "data-dir"},
	{key: "snapshotDir", flag: "snapshot-dir"},
	{key: "snapshotInterval", flag: "snapshot-interval"},
	{key: "groups", flag: "groups", reload: true},
	{key: "publicGroup", flag: "public-group", reload: true},
	{key: "announceInterval", flag: "announce-interval"},
	{key: "interfaces", flag: "interfaces", reload: true},
	{key: "excludeInterfaces", flag: "exclude-interfaces", reload: true},
	{key: "excludeDefaultRoute", flag: "exclude-default-route", reload: true},
	{key: "multicast", flag: "no-multicast", invert: true},
	{key: "dnsSD", flag: "no-dns-sd", invert: true},
	{key: "transactions", flag: "no-transactions", invert: true},
	{key: "java", flag: "no-java", invert: true},
	{key: "javaPort", flag: "java-port"},
	{key: "javaRegisterFrom", flag: "java-register-from"},
	{key: "discoveryPort", flag: "discovery-port"},
	{key: "ldsAnnounceInterval", flag: "lds-announce-interval"},
	{key: "renewalMargin", flag: "renewal-margin"},
	{key: "mailboxQuota", flag: "mailbox-quota", reload: true},
	{key: "mailboxTotalQuota", flag: "mailbox-total-quota", reload: true},
	{key: "logLevel", flag: "log-level", reload: true},
	{key: "logFormat", flag: "log-format"},
	{key: "apiSocket", flag: "api-socket"},
	{key: "socketGroup", flag: "socket-group"},
	{key: "anonymous", flag: "anonymous"},
	{key: "apiHosts", flag: "api-host"},
	{key: "advertise", flag: "advertise"},
	{key: "allowOutbound", flag: "allow-outbound"},
	{key: "apiTLSCert", flag: "api-tls-cert"},
	{key: "apiTLSKey", flag: "api-tls-key"},
	{key: "limits", flag: "limit", reload: true},
	{key: "servicesDir", flag: "services-dir", reload: true},
	{key: "store", flag: "store"},
	{key: "etcdEndpoints", flag: "etcd-endpoints"},
	{key: "etcdPrefix", flag: "etcd-prefix"},
	{key: "etcdCert", flag: "etcd-cert"},
	{key: "etcdKey", flag: "etcd-key"},
	{key: "etcdCA", flag: "etcd-ca"},
	{key: "etcdInsecure", flag: "etcd-insecure"},
	{key: "etcdLeaseTTL", flag: "etcd-lease-ttl"},
	{key: "node", flag: "node"},
	{key: "clusterListen", flag: "cluster-listen"},
	{key: "clusterCA", flag: "cluster-ca"},
	{key: "clusterCert", flag: "cluster-cert"},
	{key: "clusterKey", flag: "cluster-key"},
}

// envName is the environment variable of a flag: JINID_ and the flag's
// name in upper case, dashes as underscores (--data-dir: JINID_DATA_DIR).
func envName(flag string) string {
	return "JINID_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ConfigError is one thing wrong in a config file, where it is.
type ConfigError struct {
	File      string
	Line, Col int // 1-based; 0 when the whole file is meant
	Key       string
	Msg       string
}

func (e ConfigError) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", pos, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", pos, e.Msg)
}

// configFile is a config file read: its entries in order, each with its
// place.
type configFile struct {
	path    string
	raw     []byte
	entries []entry
	// services is the file's static services (app.StaticService): a
	// section of its own, not a setting (no flag or variable has it).
	services []app.StaticService
}

type entry struct {
	key       string
	value     json.RawMessage
	at        int64 // offset of the key
	valueAt   int64 // offset of the value
	line, col int
}

// position turns an offset of raw into a line and a column (1-based).
func position(raw []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(raw)))
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON white space or one of also.
func skipSpace(raw []byte, off int64, also string) int64 {
	for off < int64(len(raw)) && strings.IndexByte(" \t\r\n"+also, raw[off]) >= 0 {
		off++
	}
	return off
}

// readConfig reads path, or the default file if path is "" and it
// exists (nil when it does not). It returns every error it finds in the
// file's shape (syntax, unknown or repeated keys, schemaVersion); the
// values are checked as they are applied.
func readConfig(path string) (*configFile, []error) {
	explicit := path != ""
	if !explicit {
		path = DefaultConfigFile
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("reading config: %w", err)}
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, []error{fmt.Errorf("reading config: %w", err)}
	}
	if len(raw) > maxConfigBytes {
		return nil, []error{ConfigError{File: path, Msg: fmt.Sprintf("larger than %d bytes: not a jinid config file", maxConfigBytes)}}
	}
	c := &configFile{path: path, raw: raw}
	if len(bytes.TrimSpace(raw)) == 0 {
		return c, nil // an empty file sets nothing
	}
	at := func(off int64, key, msg string) error {
		l, col := position(raw, off)
		return ConfigError{File: path, Line: l, Col: col, Key: key, Msg: msg}
	}
	syntax := func(err error, dec *json.Decoder) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the byte that broke the syntax.
			return at(se.Offset-1, "", "not JSON: "+strings.TrimPrefix(se.Error(), "invalid character "))
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return at(int64(len(raw)), "", "the file ends before its object does (a missing } or \"?)")
		}
		return at(dec.InputOffset(), "", "not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, []error{syntax(err, dec)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, []error{at(skipSpace(raw, 0, ""), "", "want a JSON object ({\"key\": value, ...})")}
	}
	var errs []error
	seen := map[string]bool{}
	for dec.More() {
		keyAt := skipSpace(raw, dec.InputOffset(), ",")
		tok, err := dec.Token()
		if err != nil {
			return nil, append(errs, syntax(err, dec))
		}
		key, _ := tok.(string)
		valueAt := skipSpace(raw, dec.InputOffset(), ":")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, append(errs, syntax(err, dec))
		}
		l, col := position(raw, keyAt)
		e := entry{key: key, value: v, at: keyAt, valueAt: valueAt, line: l, col: col}
		switch {
		case seen[key]:
			errs = append(errs, at(keyAt, key, "given twice"))
			continue
		case key == "schemaVersion":
			var n int
			if err := json.Unmarshal(v, &n); err != nil || n < 0 {
				errs = append(errs, at(valueAt, key, "want a whole number (1)"))
			} else if n > configSchema {
				errs = append(errs, at(valueAt, key, fmt.Sprintf("schemaVersion %d is newer than this jinid reads (%d)", n, configSchema)))
			}
		case key == "services":
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c.services); err != nil {
				errs = append(errs, at(valueAt, key, "want a list of {\"name\", \"types\", \"attributes\", \"endpoint\"}: "+err.Error()))
			}
			seen[key] = true
			continue
		case lookupSetting(key) == nil:
			errs = append(errs, at(keyAt, key, "unknown key"+suggest(key)))
		}
		seen[key] = true
		c.entries = append(c.entries, e)
	}
	if _, err := dec.Token(); err != nil {
		errs = append(errs, syntax(err, dec))
	}
	return c, errs
}

func lookupSetting(key string) *setting {
	for i := range settings {
		if settings[i].key == key {
			return &settings[i]
		}
	}
	return nil
}

// suggest names the key meant by a misspelt one, if one is close.
func suggest(key string) string {
	for _, s := range settings {
		if strings.EqualFold(s.key, key) || strings.EqualFold(strings.ReplaceAll(s.flag, "-", ""), key) {
			return fmt.Sprintf(" (did you mean %q?)", s.key)
		}
	}
	return ""
}

// sources says where each setting's value came from: "flag", "env
// JINID_…", "FILE:LINE:COL" or "default".
type sources map[string]string

// resolve applies the environment and then the config file c (nil: none)
// to the flags the command line did not set, recording where each
// value came from. It returns every error found.
func resolve(flags *pflag.FlagSet, c *configFile, lookupEnv func(string) (string, bool)) (sources, []error) {
	src := sources{}
	for _, s := range settings {
		if f := flags.Lookup(s.flag); f != nil && f.Changed {
			src[s.key] = "flag --" + s.flag
		}
	}
	var errs []error
	for _, s := range settings {
		if src[s.key] != "" {
			continue
		}
		env := envName(s.flag)
		v, ok := lookupEnv(env)
		if !ok {
			continue
		}
		if err := setFlag(flags, s, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			continue
		}
		src[s.key] = "env " + env
	}
	if c != nil {
		for _, e := range c.entries {
			s := lookupSetting(e.key)
			if s == nil || src[s.key] != "" {
				continue
			}
			if err := applyEntry(flags, *s, e); err != nil {
				l, col := position(c.raw, e.valueAt)
				for _, err := range leaves(err) {
					errs = append(errs, ConfigError{File: c.path, Line: l, Col: col, Key: e.key, Msg: err.Error()})
				}
				continue
			}
			src[s.key] = fmt.Sprintf("%s:%d:%d", c.path, e.line, e.col)
		}
	}
	for _, s := range settings {
		if src[s.key] == "" {
			src[s.key] = "default"
		}
	}
	return src, errs
}

// setFlag sets a setting from text (the environment's form, as on the
// command line; lists are comma-separated).
func setFlag(flags *pflag.FlagSet, s setting, v string) error {
	if s.key == "groups" {
		var gs []string
		if v != "" {
			gs = strings.Split(v, ",")
		}
		return setGroups(flags, gs)
	}
	f := flags.Lookup(s.flag)
	if f == nil {
		return fmt.Errorf("no flag --%s", s.flag)
	}
	if err := checkText(f.Value.Type(), v); err != nil {
		return err
	}
	switch s.flag {
	case "log-level":
		if _, err := parseLevel(v); err != nil {
			return err
		}
	case "log-format":
		if v != "text" && v != "json" {
			return usagef("--log-format %q: want text or json", v)
		}
	}
	if err := f.Value.Set(v); err != nil {
		return errors.New(wantOf(f.Value.Type()))
	}
	f.Changed = true
	return nil
}

// setGroups sets --groups from a list of group names. The public group
// is publicGroup's: "" in the list (the public group's name, as files
// written before publicGroup have it) is dropped, the public group being
// publicGroup's default; a list never turns it off. (Once, a list
// without "" did here, where --groups kept it: one setting, two
// meanings.)
func setGroups(flags *pflag.FlagSet, gs []string) error {
	named := []string{}
	for _, g := range gs {
		if g = strings.TrimSpace(g); g != "" {
			named = append(named, g)
		}
	}
	f := flags.Lookup("groups")
	if err := f.Value.(pflag.SliceValue).Replace(named); err != nil {
		return err
	}
	f.Changed = true
	return nil
}

// checkText checks a value given as text for a flag of type typ.
func checkText(typ, v string) error {
	switch typ {
	case "duration":
		if _, err := time.ParseDuration(v); err != nil {
			return errors.New(wantOf(typ))
		}
	case "int":
		if _, err := strconv.Atoi(v); err != nil {
			return errors.New(wantOf(typ))
		}
	case "bool":
		if _, err := strconv.ParseBool(v); err != nil {
			return errors.New(wantOf(typ))
		}
	}
	return nil
}

func wantOf(typ string) string {
	return map[string]string{
		"duration":      "want a duration such as 120s, 5m or 6h",
		"int":           "want a whole number",
		"bool":          "want true or false",
		"stringSlice":   "want a list of strings",
		"string":        "want a string",
		"stringToInt64": "want an object of limits, such as {\"apiConns\": 256}",
	}[typ]
}

// applyEntry sets a setting from its JSON value in the config file.
func applyEntry(flags *pflag.FlagSet, s setting, e entry) error {
	if s.key == "groups" {
		var gs []string
		if err := json.Unmarshal(e.value, &gs); err != nil {
			return errors.New(`want a list of group names (the public group is publicGroup)`)
		}
		return setGroups(flags, gs)
	}
	if s.key == "limits" {
		return applyLimits(flags, e.value)
	}
	f := flags.Lookup(s.flag)
	typ := f.Value.Type()
	var text string
	switch typ {
	case "bool":
		var b bool
		if err := json.Unmarshal(e.value, &b); err != nil {
			return errors.New(wantOf(typ))
		}
		text = strconv.FormatBool(b != s.invert)
	case "int":
		var n int
		if err := json.Unmarshal(e.value, &n); err != nil {
			return errors.New(wantOf(typ))
		}
		text = strconv.Itoa(n)
	case "stringSlice":
		var l []string
		if err := json.Unmarshal(e.value, &l); err != nil {
			return errors.New(wantOf(typ))
		}
		if err := f.Value.(pflag.SliceValue).Replace(l); err != nil {
			return err
		}
		f.Changed = true
		return nil
	default: // string, duration
		if err := json.Unmarshal(e.value, &text); err != nil {
			return errors.New(wantOf("string"))
		}
	}
	return setFlag(flags, s, text)
}

// applyLimits sets --limit from the file's limits object, keeping any
// limit the command line or the environment gave.
func applyLimits(flags *pflag.FlagSet, raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return errors.New(wantOf("stringToInt64"))
	}
	fields := limitFields()
	var parts []string
	var errs []error // every bad limit, not the first
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := fields[k]; !ok {
			errs = append(errs, fmt.Errorf("unknown limit %q (docs/security.md lists them)", k))
			continue
		}
		var n int64
		if err := json.Unmarshal(m[k], &n); err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("limit %s: want a whole number, 0 or more", k))
			continue
		}
		parts = append(parts, k+"="+strconv.FormatInt(n, 10))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f := flags.Lookup("limit")
	if len(parts) == 0 {
		return nil
	}
	if err := f.Value.Set(strings.Join(parts, ",")); err != nil {
		return err
	}
	f.Changed = true
	return nil
}

// limitFields maps each key of the limits object (its JSON name) to its
// field of app.Limits.
func limitFields() map[string]int {
	t := reflect.TypeFor[app.Limits]()
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			out[tag] = i
		}
	}
	return out
}

// limitsOf makes the limits --limit gives (key=value, as the config
// file's limits keys).
func limitsOf(given map[string]int64) (app.Limits, error) {
	var l app.Limits
	v := reflect.ValueOf(&l).Elem()
	fields := limitFields()
	for k, n := range given {
		i, ok := fields[k]
		if !ok {
			return l, usagef("--limit %s: unknown limit (docs/security.md lists them)", k)
		}
		if n < 0 {
			return l, usagef("--limit %s=%d: want 0 or more", k, n)
		}
		v.Field(i).SetInt(n)
	}
	return l, nil
}

//go:build !jinid_omit_daemon

package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
)

// reloader re-reads the configuration on SIGHUP and applies what can
// change while the daemon runs.
type reloader struct {
	given  map[string]string // the command line's flags, which keep winning
	log    *slog.Logger
	level  *slog.LevelVar
	daemon *app.Daemon
	values map[string]string // each setting's value as last applied
}

// daemonFlags makes a fresh set of the daemon's flags (the global ones
// included) for options o.
func daemonFlags(o *daemonOptions, g *globalFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	o.bind(fs)
	bindGlobal(fs, g)
	return fs
}

// settingValues is each setting's value as text, to tell what a reload
// changes.
func settingValues(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	for _, s := range settings {
		if f := fs.Lookup(s.flag); f != nil {
			out[s.key] = f.Value.String()
		}
	}
	return out
}

// reload re-reads the config file and the environment under the
// command line's flags. A configuration that does not validate is
// refused whole, and the running one kept; otherwise what can change
// live does, and what cannot is named as waiting for a restart.
func (r *reloader) reload() {
	r.log.Info("reloading the configuration", "reason", "SIGHUP")
	var g globalFlags
	o := &daemonOptions{}
	fs := daemonFlags(o, &g)
	for name, v := range r.given {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			var l []string
			if v != "" {
				l = strings.Split(v, ",")
			}
			sv.Replace(l)
		} else {
			f.Value.Set(v)
		}
		f.Changed = true
	}
	file, _, err := o.resolve(fs, os.LookupEnv)
	if err == nil {
		_, err = parseLevel(g.logLevel)
	}
	var cfg app.Config
	if err == nil {
		cfg, err = o.config(fs)
	}
	if err != nil {
		r.log.Error("reload refused: the configuration does not validate; the running one stays", "err", err)
		return
	}
	changed, err := r.daemon.Reload(cfg)
	for _, c := range changed {
		r.log.Info("configuration changed", "change", c)
	}
	if err != nil {
		r.log.Error("reload stopped part-way; what is logged above was applied", "err", err)
		return
	}
	level, _ := parseLevel(g.logLevel)
	if level != r.level.Level() {
		r.log.Info("configuration changed", "change", "log level: "+r.level.Level().String()+" -> "+level.String())
		r.level.Set(level)
		changed = append(changed, "log level")
	}
	values := settingValues(fs)
	for _, s := range settings {
		if !s.reload && values[s.key] != r.values[s.key] {
			r.log.Warn("changed in the configuration; takes effect at the next start", "setting", s.key, "flag", "--"+s.flag)
		}
	}
	r.values = values
	r.log.Info("configuration reloaded", "file", file, "changes", len(changed))
}

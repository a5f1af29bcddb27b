package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped at build time (make dist) with -ldflags "-X main.version=v1.2.3
// -X main.commit=abc123 -X main.date=2026-11-23T00:00:00Z"; a plain go
// build takes the commit from the module's VCS information.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// versionLine is what "jinid version" and "jinid --version" print.
func versionLine() string {
	rev, at := commit, date
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				rev = s.Value
			case s.Key == "vcs.time" && at == "":
				at = s.Value
			}
		}
	}
	built := ""
	if rev != "" {
		built = " (" + rev
		if at != "" {
			built += " " + at
		}
		built += ")"
	}
	return fmt.Sprintf("jinid %s%s %s %s/%s", version, built, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// tagsLine names the build tags the binary was built with, which say
// the optional features it leaves out (internal/features: jinid_omit_java
// is a build without Java clients); "" for a build with all.
func tagsLine() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				return "\nbuild tags: " + s.Value
			}
		}
	}
	return ""
}

func versionSpec() *spec {
	return &spec{
		use:   "version",
		short: "Show jinid's version, commit and build date, the Go it was built with, its platform and build tags",
		run: func(inv *invocation, args []string) error {
			_, err := fmt.Fprintln(inv.stdout, versionLine()+tagsLine())
			return err
		},
	}
}

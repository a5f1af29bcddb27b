package main

import (
	"fmt"
	"io"
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

// buildInfo is what the binary says of itself.
type buildInfo struct {
	version, commit, date string
	tags                  string // "" for a build with every feature
}

func readBuildInfo() buildInfo {
	b := buildInfo{version: version, commit: commit, date: date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.commit == "":
				b.commit = s.Value
			case s.Key == "vcs.time" && b.date == "":
				b.date = s.Value
			case s.Key == "-tags":
				b.tags = s.Value
			}
		}
	}
	return b
}

// versionText is what "jinid version" and "jinid --version" print, the
// one format: the version, commit and date, Go, the platform, and the
// build tags (which say the features a build leaves out,
// internal/features) when there are any.
func versionText() string {
	b := readBuildInfo()
	built := ""
	if b.commit != "" {
		built = " (" + b.commit
		if b.date != "" {
			built += " " + b.date
		}
		built += ")"
	}
	out := fmt.Sprintf("jinid %s%s %s %s/%s\n", b.version, built, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if b.tags != "" {
		out += "build tags: " + b.tags + "\n"
	}
	return out
}

func versionSpec() *spec {
	return withOutput(&spec{
		use:   "version",
		short: "Show jinid's version, commit and build date, the Go it was built with, its platform and build tags",
	}, func(inv *invocation, p *printer, args []string) error {
		if p.format == formatTable {
			_, err := io.WriteString(inv.stdout, versionText())
			return err
		}
		b := readBuildInfo()
		return p.one(record{{"version", b.version}, {"commit", b.commit}, {"date", b.date}, {"go", runtime.Version()},
			{"platform", runtime.GOOS + "/" + runtime.GOARCH}, {"tags", b.tags}})
	})
}

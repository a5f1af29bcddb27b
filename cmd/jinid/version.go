package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
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

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show jinid's version, commit and build date, the Go it was built with, and its platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

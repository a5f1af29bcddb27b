//go:build jinid_omit_daemon

package main

import (
	"github.com/spf13/cobra"
)

// elsewhere makes hidden commands that say which binary of a router
// build has them, rather than "unknown command".
func elsewhere(where string, names ...string) []*cobra.Command {
	out := make([]*cobra.Command, len(names))
	for i, name := range names {
		out[i] = &cobra.Command{
			Use:                name,
			Hidden:             true,
			DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				return usagef("%q is not in this build of jinid: it is in %s", name, where)
			},
		}
	}
	return out
}

//go:build !jinid_omit_tools

package main

import "github.com/spf13/cobra"

// toolCommands look at the LAN and use a daemon's API.
func toolCommands(g *globalFlags) []*cobra.Command {
	return []*cobra.Command{newInspectCmd(), newDiscoverCmd(g), newLookupCmd(), newLeaseCmd(), newLDSCmd(), newListenCmd(),
		newRenewalCmd(), newMailboxCmd(), newTokenCmd(), newTxnCmd()}
}

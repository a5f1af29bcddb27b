//go:build !jinid_omit_tools

package main

// toolCommands look at the LAN and use a daemon's API.
func toolCommands(g *globalFlags) []*spec {
	return []*spec{newInspectCmd(), newDiscoverCmd(g), newBrowseCmd(g), newLookupCmd(), newLeaseCmd(), newLDSCmd(), newListenCmd(),
		newRenewalCmd(), newMailboxCmd(), newTokenCmd(), newTxnCmd()}
}

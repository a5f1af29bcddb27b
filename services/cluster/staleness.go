//go:build !fault_stale_reads

package cluster

// checkStaleness has a node's door answer the registry's reads from its
// copy only while etcd confirms the copy current (ReadStaleness). The
// robustness suite builds jinid with fault_stale_reads, which
// turns it off, to show that its checker catches the stale reads that
// follow (cmd/jinid/e2e, TestRobustnessCatchesStaleReads).
const checkStaleness = true

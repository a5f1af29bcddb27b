//go:build fault_stale_reads

package cluster

// checkStaleness is off in this build: a fault injected on purpose, for
// the robustness suite to show its checker catching it (staleness.go).
// No build that ships has the tag.
const checkStaleness = false

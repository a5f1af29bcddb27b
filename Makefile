# Builds for release: make dist cross-builds every target into dist/,
# stripped and static, with the version, commit and date stamped in.
#
#   dist/<target>/jinid         everything (servers, desktops)
#   dist/<target>/jinid-daemon  the daemon alone, for routers (the router profile)
#   dist/<target>/jinid-tools   inspection, discovery and the API clients (the tools profile)
#
# A profile is a list of the features a binary leaves out, as build tags:
# scripts/profile says each (cmd/jinid/features.go names the features).
#
# make sizes prints each binary's size against its budget
# (docs/performance.md); STRICT=1 (as CI runs it) makes an overrun fail.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

# target: GOARCH and its variant (GOARM, GOMIPS).
TARGETS := amd64 arm64 armv7 armv5 mips mipsle mips64 mips64le riscv64

.PHONY: dist sizes clean robustness
dist: $(TARGETS:%=dist/%)

dist/%: FORCE
	@scripts/build-target $* "$(LDFLAGS)" $@

sizes: dist
	@scripts/sizes dist

clean:
	rm -rf dist

# The cluster's robustness suite, long form: the schedule of faults of
# TestClusterRobustness five times over (its short form is in the test
# suite); the history checked for linearizability (docs/performance.md).
robustness:
	JINID_ROBUSTNESS_ROUNDS=5 go test -count=1 -timeout 30m -run 'TestClusterRobustness|TestRobustnessCatchesStaleReads' -v ./cmd/jinid/e2e/

# The store's flushes a change with 1, 16 and 64 writers at once (group
# commit; strace, untimed): docs/performance.md.
.PHONY: flushes
flushes:
	scripts/flushes

FORCE:

# The Debian packages of the amd64 and arm64 builds (nfpm, as a Go tool).
DEBVERSION ?= 0.0.0+git$(shell git rev-parse --short HEAD 2>/dev/null)
.PHONY: deb
deb: dist/amd64 dist/arm64
	scripts/package deb dist/amd64/jinid $(DEBVERSION) amd64 dist/jinid_$(DEBVERSION)_amd64.deb
	scripts/package deb dist/arm64/jinid $(DEBVERSION) arm64 dist/jinid_$(DEBVERSION)_arm64.deb

# The OpenWrt packages of the router builds, by OpenWrt architecture.
.PHONY: ipk
ipk: dist/mips dist/mipsle dist/armv7 dist/arm64 dist/amd64
	scripts/package ipk dist/mips $(DEBVERSION) mips_24kc dist/jinid_$(DEBVERSION)_mips_24kc.ipk
	scripts/package ipk dist/mipsle $(DEBVERSION) mipsel_24kc dist/jinid_$(DEBVERSION)_mipsel_24kc.ipk
	scripts/package ipk dist/armv7 $(DEBVERSION) arm_cortex-a7 dist/jinid_$(DEBVERSION)_arm_cortex-a7.ipk
	scripts/package ipk dist/arm64 $(DEBVERSION) aarch64_generic dist/jinid_$(DEBVERSION)_aarch64_generic.ipk
	scripts/package ipk dist/amd64 $(DEBVERSION) x86_64 dist/jinid_$(DEBVERSION)_x86_64.ipk

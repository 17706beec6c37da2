# qp — build, test and demo targets. `make test` is what CI runs (.ci/run).
GO      ?= go
export CGO_ENABLED = 0

.PHONY: all build test vet fmt-check demo fuzz bench clean ci lint tools emu test-emu test-race

all: build

# The commit goes into the binary for `qp --version` also where the go
# command records no VCS information (GOFLAGS=-buildvcs=false, worktrees).
VERSION_PKG = github.com/qpengine/qp/internal/version
GIT_REV    := $(shell git rev-parse HEAD 2>/dev/null)
GIT_DIRTY  := $(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo true)
LDFLAGS     = -X $(VERSION_PKG).stampedRevision=$(GIT_REV) -X $(VERSION_PKG).stampedModified=$(GIT_DIRTY)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/qp ./cmd/qp

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The whole test suite: formatting, vet, unit + differential + fuzz-seed tests.
test: fmt-check vet
	$(GO) test -count=1 ./...

# What CI runs: .ci/run, which installs what it needs (nvcc 11.8, gcc; root
# or sudo), checks the committed fatbin, then runs test, lint, test-emu and
# test-race, timing each step.
ci:
	bash .ci/run

# staticcheck at the version pinned in scripts/install-tools.sh, installed
# into bin/tools (no root). Disabled checks and their reasons: staticcheck.conf.
STATICCHECK = bin/tools/staticcheck
tools:
	bash scripts/install-tools.sh

lint: tools
	$(STATICCHECK) ./...

# The GPU tests on the CUDA emulator (cuda/emu: the driver API and every
# kernel compiled for the CPU by g++; see docs/GPU-TESTS.md). -short keeps
# every kernel family, query mode, differential and corrupt-input test with
# smaller inputs (the emulator runs a CTA's threads on one core), about
# 10 minutes on 2 cores; without -short (EMU_SHORT=) it takes about 15.
# -count=1: the test cache does not see the library.
EMU_LIB   = $(CURDIR)/cuda/emu/lib
EMU_SHORT ?= -short
emu:
	bash cuda/emu/build.sh

test-emu: emu
	LD_LIBRARY_PATH=$(EMU_LIB) $(GO) test -count=1 $(EMU_SHORT) -timeout 40m ./cuda/... ./bench/decode/ ./engine/gpu/
	LD_LIBRARY_PATH=$(EMU_LIB) $(GO) test -count=1 -run '^TestServeGPU' ./serve/
	LD_LIBRARY_PATH=$(EMU_LIB) $(GO) test -count=1 -run '^(TestAutoGPU|TestAutoGPUStream|TestStreamGPUInFlight)$$' .
	LD_LIBRARY_PATH=$(EMU_LIB) $(GO) test -count=1 -run '^TestServeOwnerCPU$$' ./cmd/qp/

# The race detector on the packages that run goroutines. It needs cgo (and
# gcc), for this step only: the shipped binary stays CGO_ENABLED=0. -short:
# the race detector slows Go code 5-10 times. cmd/qp runs only its query
# batch and bench tests (RACE_CMD_RUN), the rest is serial CLI code. The
# GPU packages run on the emulator (whose C++ the detector does not slow)
# only the tests of their concurrent code (RACE_GPU_RUN): the context's
# worker goroutine, the engine's parallel query preparation and result
# conversion in differential batches, concurrent SearchBatch calls (serve's
# two batches in flight), sets planned and converted off the owner
# (TestPlannedAnd, TestPlannedOr, TestPlannedAndOr), OR launches planned and
# filled in chunks on several goroutines (TestPlanOrLaunchChunks, TestOrLaunchCuts),
# the stream's idle flag, the per-batch profile hook, the polled waits;
# test-emu runs the rest.
RACE_PKGS    = . ./cache ./scheduler ./engine ./index ./index/analysis ./reorder \
               ./gen ./bench/collstats ./bench/queryset ./serve ./client ./internal/assist ./internal/affinity
RACE_CMD_RUN = ^(TestQuer|TestBenchQueryCPU|TestDemoQueries|TestCPUFallbackNotice)
RACE_GPU_RUN = ^(TestContextDo|TestMemory|TestAvailable|TestDevices|TestDecodeAPI|TestQueryTopK|TestDifferentialRandom|TestCacheDifferential|TestErrors|TestSearchBatchConcurrent|TestPlannedAnd|TestPlannedOr|TestPlannedAndOr|TestPlanOrLaunchChunks|TestOrLaunchCuts|TestStreamSyncIdle|TestHelpHost|TestDeviceDoneHook|TestPollWait)$$
RACE         = CGO_ENABLED=1 $(GO) test -race -short -count=1 -timeout 40m
test-race: emu
	$(RACE) $(RACE_PKGS)
	$(RACE) -run '$(RACE_CMD_RUN)' ./cmd/qp/
	LD_LIBRARY_PATH=$(EMU_LIB) $(RACE) -run '$(RACE_GPU_RUN)' ./cuda/... ./engine/gpu/

# The main job on the built-in default (see README).
demo: build
	./bin/qp demo

# Run every fuzz target for FUZZTIME each (default 10s).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./... 

clean:
	rm -rf bin

# CUDA kernels: cuda/kernels/*.cu → cuda/kernels.fatbin, which is committed and
# embedded in the pure-Go binary (cuda/fatbin.go). Needs nvcc 11.8
# (scripts/install-cuda.sh). All .cu files are compiled as ONE translation unit
# (--pre-include of each, in sorted order), so each file keeps its helpers in a
# namespace of its own. --fmad=false keeps float results bit-identical to the
# CPU (also recorded for the driver's JIT of the compute_90 PTX). The output is
# byte-reproducible (no paths or timestamps in it); the resource usage that
# `-Xptxas -v` would print is shown by cuobjdump -res-usage instead, so the
# flags recorded in the fatbin stay minimal.
NVCC          ?= nvcc
KERNEL_SRCS    = $(sort $(wildcard cuda/kernels/*.cu))
KERNEL_FATBIN  = cuda/kernels.fatbin
NVCC_GENCODE   = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS      = -std=c++17 -O3 --fmad=false $(NVCC_GENCODE)
nvcc-fatbin    = $(NVCC) $(NVCCFLAGS) -fatbin -o $(1) -x cu $(foreach f,$(KERNEL_SRCS),--pre-include $(abspath $(f))) /dev/null

.PHONY: kernels kernels-check
kernels:
	$(call nvcc-fatbin,$(KERNEL_FATBIN))
	cuobjdump -res-usage $(KERNEL_FATBIN) | grep -E '^arch|Function|REG:'

# Rebuilds the fatbin into a temporary file and fails if it differs from the
# committed one (CI runs this after scripts/install-cuda.sh).
kernels-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(call nvcc-fatbin,$$tmp/kernels.fatbin); \
	if ! cmp -s "$$tmp/kernels.fatbin" $(KERNEL_FATBIN); then \
	  echo "kernels-check: $(KERNEL_FATBIN) is stale or not reproducible: it differs from a fresh build of $(KERNEL_SRCS); run 'make kernels' and commit the result" >&2; \
	  exit 1; \
	fi; echo "kernels-check: $(KERNEL_FATBIN) matches a fresh build"

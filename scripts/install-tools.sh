#!/usr/bin/env bash
# install-tools.sh — install the Go tools the checks use (`make lint`) at
# pinned versions into the repository's bin/tools (ignored by git), from the
# Go module proxy. Needs neither root nor anything outside the checkout and
# the Go module cache.
#
# Idempotent: a tool already at its pinned version is not rebuilt.
# TOOLS_BIN=dir installs elsewhere. Exit status 0 means every tool runs
# and reports its pinned version.
set -euo pipefail
cd "$(dirname "$0")/.."

# staticcheck 2026.2.2 (module honnef.co/go/tools v0.8.2): the first
# release that supports Go 1.26.
STATICCHECK_VERSION=v0.8.2

bin=${TOOLS_BIN:-$PWD/bin/tools}
log() { echo "install-tools: $*" >&2; }

mkdir -p "$bin"
have=$("$bin/staticcheck" -version 2>/dev/null || true)
if [[ $have == *"(${STATICCHECK_VERSION#v})"* ]]; then
	log "staticcheck ${STATICCHECK_VERSION} already in $bin"
	exit 0
fi
log "installing honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION} into $bin"
GOBIN=$bin CGO_ENABLED=0 go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
have=$("$bin/staticcheck" -version)
if [[ $have != *"(${STATICCHECK_VERSION#v})"* ]]; then
	log "installed staticcheck reports '$have', want ${STATICCHECK_VERSION}"
	exit 1
fi
log "$have"

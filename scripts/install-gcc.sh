#!/usr/bin/env bash
# install-gcc.sh — install the C/C++ compilers that two checks need: the CUDA
# emulator (cuda/emu/build.sh, g++ with C++17) and the race detector
# (`go test -race` needs cgo, hence gcc). Neither is needed by `make test`
# or by the shipped binary (CGO_ENABLED=0).
#
# Idempotent: when gcc and g++ are on PATH it changes nothing. Otherwise it
# installs Debian's gcc and g++ with apt-get, as root or through sudo.
# Exit status 0 means gcc and g++ run afterwards.
set -euo pipefail

name=install-gcc
# shellcheck source=install-lib.sh
source "$(dirname "$0")/install-lib.sh"

ok() { command -v gcc >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1; }

if ok; then
	log "gcc and g++ already installed: $(g++ --version | head -n 1)"
	exit 0
fi
as_root apt-get update
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc g++ libc6-dev
if ! ok; then
	log "gcc or g++ still missing after installing; see the messages above"
	exit 1
fi
log "$(g++ --version | head -n 1)"

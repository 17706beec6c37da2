#!/usr/bin/env bash
# install-cuda.sh — install the CUDA compiler that `make kernels` needs:
# Debian bookworm's nvcc 11.8 (package nvidia-cuda-toolkit, non-free) plus
# the CUB headers the kernels include. Only the kernel build needs this; the
# qp binary itself is pure Go and loads the committed cuda/kernels.fatbin.
#
# Idempotent: when nvcc 11.8 is installed and `#include <cub/cub.cuh>`
# compiles, it changes nothing. Otherwise it enables bookworm's contrib and
# non-free components (those no other apt source enables already) in
# /etc/apt/sources.list.d/qp-nonfree.sources, runs apt-get update and
# installs the packages. Runs as root, or through sudo when not root.
# Exit status 0 means nvcc 11.8 with CUB works afterwards.
set -euo pipefail

want_release="11.8"
src_file=/etc/apt/sources.list.d/qp-nonfree.sources
packages=(nvidia-cuda-toolkit)

name=install-cuda
# shellcheck source=install-lib.sh
source "$(dirname "$0")/install-lib.sh"

# nvcc_ok succeeds when nvcc reports release $want_release and compiles a
# translation unit that includes CUB for both target architectures' front end.
nvcc_ok() {
	command -v nvcc >/dev/null 2>&1 || return 1
	nvcc --version 2>/dev/null | grep -q "release ${want_release}," || return 1
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	cat >"$tmp/cubcheck.cu" <<'CU'
#include <cub/cub.cuh>
__global__ void k(unsigned *p) {
	typedef cub::BlockScan<unsigned, 128> Scan;
	__shared__ typename Scan::TempStorage tmp;
	unsigned v = p[threadIdx.x];
	Scan(tmp).InclusiveSum(v, v);
	p[threadIdx.x] = v;
}
CU
	nvcc -c -gencode arch=compute_80,code=sm_80 -o "$tmp/cubcheck.o" "$tmp/cubcheck.cu" >"$tmp/log" 2>&1 || {
		log "nvcc is installed but a CUB test kernel does not compile:"
		cat "$tmp/log" >&2
		return 1
	}
}

# missing_components prints those of contrib and non-free that no active
# apt source other than $src_file enables (non-free-firmware does not count).
missing_components() {
	local c f found
	for c in contrib non-free; do
		found=
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] && [ "$f" != "$src_file" ] || continue
			if grep -v '^[[:space:]]*#' "$f" | grep -Eq "(^|[[:space:]])${c}([[:space:]]|\$)"; then
				found=1
				break
			fi
		done
		[ -n "$found" ] || printf '%s ' "$c"
	done
}

if nvcc_ok; then
	log "nvcc $want_release with CUB already works: $(command -v nvcc)"
	exit 0
fi

# The toolkit is in non-free; nvidia-cuda-dev depends on libcuda1 (the driver
# library, non-free), which depends on nvidia-support (contrib). On a machine
# without a GPU libcuda1 is inert: cuInit reports that no device exists.
missing=$(missing_components)
missing=${missing% }
if [ -z "$missing" ]; then
	log "apt sources already enable contrib and non-free"
	if [ -f "$src_file" ]; then
		as_root rm -f "$src_file"
	fi
else
	content="Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: ${missing}
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
	if [ "$(cat "$src_file" 2>/dev/null)" != "$content" ]; then
		log "enabling bookworm ${missing} in $src_file"
		printf '%s\n' "$content" | as_root tee "$src_file" >/dev/null
	fi
fi

as_root apt-get update
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"

# Debian packages CUB separately from the toolkit in some releases; install it
# only when the toolkit's include path lacks it.
if ! nvcc_ok && apt-cache show libcub-dev >/dev/null 2>&1; then
	log "CUB missing from the toolkit; installing libcub-dev"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libcub-dev
fi

if ! nvcc_ok; then
	log "nvcc $want_release with CUB still does not work after installing; see the messages above"
	exit 1
fi
nvcc --version | tail -n 2 >&2
log "done"

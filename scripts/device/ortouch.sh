#!/usr/bin/env bash
# scripts/device/ortouch.sh — issue 20 §4, branch ortile: the fused OR
# tiles' accumulator passes over the touch marks (docs/GPU-QUERY.md, "OR
# tiles: only the touched accumulators") against main's qp and against
# the dense passes in the new binary (QP_GPU_OR_SPARSE=0: the kernel
# qp_ortile_accumulate_bp128_dense, main's passes), in ONE call. It is
# orsparse.sh with NAME=ortouch OFF_ENV=QP_GPU_OR_SPARSE=0 and the
# off variant's result hashes (HASH_OFF=1): see there for the steps, the
# carried binaries and the environment.
#
# Build (Go machine, repository root of this branch, main at /work/main):
#   bash scripts/device/build.sh && rm -f bin/dev/*.test bin/dev/data/*.xz
#   (cd /work/main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp)
#   xz -T2 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   xz -T2 -c bin/dev/qp >bin/dev/data/qp-new.xz && rm bin/dev/qp
#   xz -T2 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# Run (carry bin/dev): bash scripts/device/unpack.sh; bash scripts/device/ortouch.sh
#
# Output under $OUT: ortouch.txt (per run: q/s, p99, the GPU time split,
# the tile / block work lines; the result hashes of old, off and new) and
# ortouch.tgz (the full bench outputs).
NAME=ortouch OFF_ENV=QP_GPU_OR_SPARSE=0 HASH_OFF=${HASH_OFF-1} exec bash scripts/device/orsparse.sh

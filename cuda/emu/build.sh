#!/bin/sh
# build.sh — builds the CUDA driver emulator, cuda/emu/lib/libcuda.so.1
# (emu.cc + every cuda/kernels/*.cu compiled by g++ through emu.h). Then
#
#	LD_LIBRARY_PATH=$PWD/cuda/emu/lib go test ./cuda/
#
# runs the GPU tests against it (see emu.cc and docs/GPU-TESTS.md).
# EMU_OUT=dir builds into dir instead (several checkouts or builds at once).
set -eu
cd "$(dirname "$0")/../.."
out=${EMU_OUT:-cuda/emu/lib}
mkdir -p "$out"
for f in cuda/kernels/*.cu; do echo "#include \"$PWD/$f\""; done >"$out/kernels.cc"
# EMU_FLAGS="-fsanitize=address,alignment -DQP_EMU_EXACT" builds the
# sanitizer variant (out-of-bounds reads, misaligned vector accesses)
# (run the tests with LD_PRELOAD=$(g++ -print-file-name=libasan.so)).
# Misaligned vector accesses (which fault on a GPU, not on x86) always
# abort (-fsanitize=alignment).
${CXX:-g++} -std=c++17 -O1 -g -fPIC -shared -fsanitize=alignment -fno-sanitize-recover=alignment ${EMU_FLAGS:-} -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -Wall -Wno-unused-function -Wno-unknown-pragmas \
	-include cuda/emu/emu.h -o "$out/libcuda.so.1" cuda/emu/emu.cc "$out/kernels.cc"
echo "built $out/libcuda.so.1"

package cuda

import _ "embed"

// fatbinImage is kernels.fatbin: every kernel of kernels/*.cu compiled for
// sm_80 and sm_90, plus compute_90 PTX. kernels.fatbin is a generated,
// committed file: `make kernels` produces it (nvcc 11.8, see the Makefile
// and scripts/install-cuda.sh) and `make kernels-check` verifies that it
// matches its sources byte for byte.
//
//go:embed kernels.fatbin
var fatbinImage []byte

// Package kern holds the typed launchers of qp's CUDA kernels
// (cuda/kernels/*.cu, embedded as one fatbin by package cuda): batch
// decoding of index blocks for every codec, the query-processing building
// blocks that engine/gpu orchestrates (AND steps, dense and tiled OR,
// top-k, scans), list intersection and WAH bitmaps. Each launcher checks
// its sizes (a violation is a programmer bug: panic with "BUG:"), enqueues
// its kernel on a stream and does not wait. Every kernel's parameters are a
// generated struct of layout.go (cuda/scripts/gen_layout.py), passed field
// by field (cuda.LaunchFields); query_params.cuh's static_asserts check
// each kernel's parameter list against it at compile time. Package cuda is the driver
// binding underneath; GPU results equal the CPU's bit for bit.
//
// Layout:
//
//	kernels.go    Load: the decoding kernels of a Context, the family lookups
//	decode.go     batch decoding, every codec, docIDs or frequencies
//	              (kernels/decode.cuh + one kernels/<codec>.cu each);
//	              DecodeKernel for benchmarks (bench/decode)
//	bp128.go      BlockError, ErrUnsupported; the first BP128 kernel (baseline)
//	query.go      QueryKernels: block lists, gather, AND init, dense OR, top-k, scans
//	query_and.go  AndKernels: the AND steps (locate, match, compact, bitmaps)
//	query_or.go   OrTileKernels: tiled OR with block-max bounds
//	intersect.go  IntersectKernels: list intersection (Ao et al.)
//	wah.go        WAHKernels: WAH bitmap decompression and filters
//	layout.go     generated: the shared structs and every kernel's parameters
package kern

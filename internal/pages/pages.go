// Package pages allocates slices whose memory is written before it is
// read, for the buffers a hot loop fills on many cores at once.
//
// A large slice comes from a fresh heap span whose pages the kernel has
// not mapped yet. If its first access is a read (a loop that loads an
// element before storing it, as a query's responses and accumulators
// do), the kernel maps the shared zero page, and the first store after
// that is a copy-on-write fault whose page-table change flushes the TLB
// of every core running the process: one inter-processor interrupt per
// core per page (perf: do_wp_page, flush_tlb_mm_range,
// smp_call_function_many_cond). Written first, a page takes one fault
// and no flush. qp query's CPU stream allocates some 20 MB so on 16 cores
// (docs/BENCHMARKS.md, cliq6).
package pages

// Zeroed returns make([]T, n) with every element written (cleared) once.
func Zeroed[T any](n int) []T {
	s := make([]T, n)
	clear(s)
	return s
}

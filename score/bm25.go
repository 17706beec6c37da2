// Package score defines qp's BM25 exactly, once, so that every backend (the
// CPU engine, the CUDA kernels, the block-max bounds stored in the index)
// computes bit-identical float32 scores.
//
// BM25 (Robertson et al.; the form used by Ding et al. WWW'09 §8 and by
// Lucene/Anserini):
//
//	idf(t)    = ln(1 + (N - df + 0.5) / (df + 0.5))              (float64, rounded to float32)
//	norm(d)   = k1 * (1 - b + b * dl(d) / avgdl)                 (float64, rounded to float32)
//	s(t, d)   = idf * ((tf * (k1+1)) / (tf + norm(d)))           (float32, in this order)
//	score(d)  = Σ_t s(t, d), summed in float32 in canonical term order
//
// The canonical term order of a query is ascending document frequency, ties
// by ascending term ID (the order in which Ding's TAAT intersection visits
// lists). Summing in one fixed order makes every algorithm, DAAT or TAAT, CPU
// or GPU, produce the same float32 for the same document.
package score

import (
	"fmt"
	"math"
)

// Params are the BM25 parameters.
type Params struct {
	K1 float64
	B  float64
}

// Default is k1 = 0.9, b = 0.4 (Anserini's defaults).
var Default = Params{K1: 0.9, B: 0.4}

// Validate rejects parameters outside BM25's domain.
func (p Params) Validate() error {
	if !(p.K1 >= 0) || math.IsInf(p.K1, 0) {
		return fmt.Errorf("bm25: k1 = %v, want a finite value >= 0", p.K1)
	}
	if !(p.B >= 0 && p.B <= 1) {
		return fmt.Errorf("bm25: b = %v, want 0 <= b <= 1", p.B)
	}
	return nil
}

// IDF is ln(1 + (N - df + 0.5)/(df + 0.5)), always > 0 for df <= N.
func IDF(n, df uint64) float32 {
	return float32(math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5)))
}

// AvgDL is the mean document length (1 for an empty collection, so norms
// stay finite).
func AvgDL(lens []uint32) float64 {
	var sum uint64
	for _, l := range lens {
		sum += uint64(l)
	}
	if len(lens) == 0 || sum == 0 {
		return 1
	}
	return float64(sum) / float64(len(lens))
}

// Norm is k1 * (1 - b + b*dl/avgdl) rounded to float32.
func (p Params) Norm(dl uint32, avgdl float64) float32 {
	return float32(p.K1 * (1 - p.B + p.B*float64(dl)/avgdl))
}

// Norms fills dst (grown as needed) with Norm for every document length.
func (p Params) Norms(dst []float32, lens []uint32, avgdl float64) []float32 {
	if cap(dst) < len(lens) {
		dst = make([]float32, len(lens))
	}
	dst = dst[:len(lens)]
	for i, l := range lens {
		dst[i] = p.Norm(l, avgdl)
	}
	return dst
}

// K1p1 is k1+1 rounded to float32, the constant of Term.
func (p Params) K1p1() float32 { return float32(p.K1 + 1) }

// Term is one term's contribution: idf * ((tf * (k1+1)) / (tf + norm)), in
// float32, in exactly this order of operations. GPU kernels must reproduce it
// without fused multiply-add contraction.
func Term(idf, k1p1 float32, tf uint32, norm float32) float32 {
	f := float32(tf)
	num := f * k1p1
	den := f + norm
	q := num / den
	return float32(idf * q) // the conversion forbids fusing into a caller's sum
}

package reorder

import (
	"context"
	"fmt"
	"slices"

	"github.com/qpengine/qp/index"
)

// SampleGain is what BP gains on a sample of an index's documents: a
// cheap measure of how clusterable the collection is, for comparing a
// generated stand-in with its real collection (`qp gen --validate`).
type SampleGain struct {
	Docs       int     // documents in the sample
	Random, BP float64 // mean log2 gap (graph lists) in random order and after BP
}

// Gain returns 1 - BP/Random, the share of the mean log2 gap that BP
// removes from random order.
func (s SampleGain) Gain() float64 {
	if s.Random == 0 {
		return 0
	}
	return 1 - s.BP/s.Random
}

// MeasureSampleGain draws n documents of x uniformly (all when n >= N),
// numbers them in a random order (by seed), keeps the lists with at least
// minDF postings among them, and returns the mean log2 gap of that order
// and of the order Bisect finds (default depth and rounds). A sample of a
// fraction f of the documents thins every cluster by f, so compare two
// indexes only at the same N and n. Deterministic for (x, n, seed).
func MeasureSampleGain(ctx context.Context, x *index.Index, n, minDF int, seed uint64, workers int) (SampleGain, error) {
	N := x.NumDocs()
	if n <= 0 {
		panic(fmt.Sprintf("BUG: sample of %d documents", n))
	}
	n = min(n, N)
	// A random permutation of [0, N) (Fisher–Yates on a splitmix stream):
	// its first n entries are the sample, in their random order.
	perm := make([]uint32, N)
	for i := range perm {
		perm[i] = uint32(i)
	}
	s := seed
	for i := N - 1; i > 0; i-- {
		s += 0x9e3779b97f4a7c15
		j := int(mix(s) % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	// slot[d] = sample position + 1 of document d (0: not sampled).
	slot := make([]uint32, N)
	for i, d := range perm[:n] {
		slot[d] = uint32(i + 1)
	}
	perm = nil
	var lists [][]uint32
	var docs, freqs []uint32
	for t := 0; t < x.NumTerms(); t++ {
		if err := ctx.Err(); err != nil {
			return SampleGain{}, err
		}
		if int(x.Record(t).DF) < minDF {
			continue
		}
		l, err := x.List(t)
		if err == nil {
			docs, freqs, err = l.Decode(docs[:0], freqs[:0])
		}
		if err != nil {
			return SampleGain{}, fmt.Errorf("reorder: sample: term %q: %w", x.Term(t), err)
		}
		var keep []uint32
		for _, d := range docs {
			if p := slot[d]; p != 0 {
				keep = append(keep, p-1)
			}
		}
		if len(keep) >= minDF {
			slices.Sort(keep)
			lists = append(lists, keep)
		}
	}
	return GainOfLists(ctx, n, lists, seed, workers)
}

// GainOfLists runs Bisect (default depth and rounds, seed) on the graph of
// lists over n documents (each strictly increasing; lists of one posting
// are left out) and returns the mean log2 gap in the given order and after.
func GainOfLists(ctx context.Context, n int, lists [][]uint32, seed uint64, workers int) (SampleGain, error) {
	g, err := FromLists(n, lists, 2)
	if err != nil {
		return SampleGain{}, err
	}
	order, err := Bisect(ctx, g, Options{Seed: seed, Workers: workers})
	if err != nil {
		return SampleGain{}, err
	}
	return SampleGain{Docs: n, Random: LogGapCost(g, Identity(n)), BP: LogGapCost(g, order)}, nil
}

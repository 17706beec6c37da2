// Package decode is `qp bench decode`. Part 1, the sweep (sweep.go,
// sweep_gpu.go, sweep_cpu.go, plot.go): synthetic lists of each length
// decoded by the GPU kernels (BenchDecode, CUDA event times) and by all CPU
// cores (BenchDecodeCPU), as CSV and an SVG through report.Plot. Part 2
// (this file): lists sampled from an index (decoded, then re-encoded with
// each codec into a temporary index of the same block size and document
// lengths) and decoded block by block as the engine does
// (index.List.DecodeDocs / DecodeFreqs), one core and all cores.
package decode

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

// Sample decodes lists of x chosen at random (seed 1) until budget postings
// are reached.
func Sample(x *index.Index, budget int) (docs, freqs [][]uint32, postings int, err error) {
	rng := rand.New(rand.NewSource(1))
	for _, t := range rng.Perm(x.NumTerms()) {
		if postings >= budget {
			break
		}
		l, err := x.List(t)
		if err != nil {
			return nil, nil, 0, err
		}
		d, f, err := l.Decode(nil, nil)
		if err != nil {
			return nil, nil, 0, err
		}
		docs, freqs = append(docs, d), append(freqs, f)
		postings += len(d)
	}
	return docs, freqs, postings, nil
}

// Row is one codec's measurement on the sampled lists.
type Row struct {
	Codec           string
	BitsDoc, BitsTF float64 // bits per docID and per frequency
	Docs1           float64 // docIDs/s, one core
	Both1           float64 // docIDs+frequencies/s, one core
	BothN           float64 // docIDs+frequencies/s, Threads cores
	Threads         int
}

// Run re-encodes the sampled lists with each codec (block size and
// document lengths of x) and measures their decoding speed for at least
// minTime each.
func Run(x *index.Index, docs, freqs [][]uint32, codecs []compress.Codec, minTime time.Duration) ([]Row, error) {
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	var rows []Row
	for _, cd := range codecs {
		r, err := runCodec(x, docs, freqs, cd, total, minTime)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// runCodec writes the lists with codec cd into a temporary index, opens it
// and times it.
func runCodec(x *index.Index, docs, freqs [][]uint32, cd compress.Codec, total int, minTime time.Duration) (Row, error) {
	dir, err := os.MkdirTemp("", "qp-bench-")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "x.qp")
	w, err := index.NewWriter(path, index.WriterOptions{BlockSize: x.Meta.BlockSize, DocCodec: cd, DocLens: x.DocLens()})
	if err != nil {
		return Row{}, err
	}
	for i := range docs {
		if err := w.AddList(fmt.Sprintf("t%08d", i), docs[i], freqs[i]); err != nil {
			w.Abort()
			return Row{}, err
		}
	}
	if err := w.Close(); err != nil {
		return Row{}, err
	}
	y, err := index.Open(path)
	if err != nil {
		return Row{}, err
	}
	defer y.Close()
	lists := make([]index.List, y.NumTerms())
	var db, fb int
	for i := range lists {
		if lists[i], err = y.List(i); err != nil {
			return Row{}, err
		}
		db += len(lists[i].DocBytes())
		fb += len(lists[i].FreqBytes())
	}
	r := Row{Codec: cd.Name(), BitsDoc: 8 * float64(db) / float64(total), BitsTF: 8 * float64(fb) / float64(total), Threads: runtime.GOMAXPROCS(0)}
	if r.Docs1, err = decodeRate(lists, 1, false, minTime); err != nil {
		return r, err
	}
	if r.Both1, err = decodeRate(lists, 1, true, minTime); err != nil {
		return r, err
	}
	r.BothN, err = decodeRate(lists, r.Threads, true, minTime)
	return r, err
}

// decodeRate decodes every block of lists repeatedly on `threads`
// goroutines for at least minTime and returns integers per second.
func decodeRate(lists []index.List, threads int, withFreqs bool, minTime time.Duration) (float64, error) {
	var mu sync.Mutex
	var firstErr error
	var ints int64
	start := time.Now()
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			buf := make([]uint32, 1<<16)
			fbuf := make([]uint32, 1<<16)
			var n int64
			for round := 0; time.Since(start) < minTime || round == 0; round++ {
				for i := t; i < len(lists); i += threads {
					l := &lists[i]
					for b := 0; b < l.NBlocks; b++ {
						m, err := l.DecodeDocs(b, buf)
						if err == nil && withFreqs {
							_, err = l.DecodeFreqs(b, fbuf)
							m *= 2
						}
						if err != nil {
							mu.Lock()
							firstErr = err
							mu.Unlock()
							return
						}
						n += int64(m)
					}
				}
			}
			mu.Lock()
			ints += n
			mu.Unlock()
		}(t)
	}
	wg.Wait()
	return float64(ints) / time.Since(start).Seconds(), firstErr
}

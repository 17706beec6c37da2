package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"text/tabwriter"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/reorder"
)

// blockClass splits a list's docID blocks: full blocks, the partial last
// block of a list that has full blocks, and the one partial block of a
// list shorter than a block (whose first value is an absolute docID).
const (
	blockFull = iota
	blockTail
	blockShort
	blockClasses
)

var blockClassNames = [blockClasses]string{"full blocks", "partial last blocks (df >= block)", "short lists (df < block)"}

// blockSizes re-encodes every docID block of x with c, in x's order and
// block size, as index.ListEncoder forms the values (sorted codecs: docID
// minus the previous block's last + 1; others: that for the first value,
// gaps - 1 after), and returns postings and bytes per block class. Bitmap
// lists are counted as blocks (the codec's size, not the bitmap's).
func blockSizes(x *index.Index, c compress.Codec) (post, bytes [blockClasses]int64, err error) {
	nt := x.NumTerms()
	bs := x.Meta.BlockSize
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var docs, freqs, v []uint32
			var buf []byte
			var p, b [blockClasses]int64
			for t := w; t < nt; t += workers {
				l, e := x.List(t)
				if e == nil {
					docs, freqs, e = l.Decode(docs[:0], freqs[:0])
				}
				if e != nil {
					mu.Lock()
					err = fmt.Errorf("term %q: %w", x.Term(t), e)
					mu.Unlock()
					return
				}
				base := uint32(0)
				for start := 0; start < len(docs); start += bs {
					end := min(start+bs, len(docs))
					v = v[:0]
					for i := start; i < end; i++ {
						switch {
						case c.Kind() == compress.Sorted, i == start:
							v = append(v, docs[i]-base)
						default:
							v = append(v, docs[i]-docs[i-1]-1)
						}
					}
					buf = index.AppendDocBlock(buf[:0], c, v)
					k := blockFull
					if end-start < bs {
						k = blockTail
						if start == 0 {
							k = blockShort
						}
					}
					p[k] += int64(end - start)
					b[k] += int64(len(buf))
					base = docs[end-1] + 1
				}
			}
			mu.Lock()
			for k := range p {
				post[k] += p[k]
				bytes[k] += b[k]
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return post, bytes, err
}

// writeBlockBreakdown prints, per codec, the bits per docID of each block
// class and its share of the postings.
func writeBlockBreakdown(w io.Writer, x *index.Index, list []compress.Codec) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "docID blocks by kind\tcodec\tpostings\tshare\tbits/docID\t")
	for _, c := range list {
		post, bytes, err := blockSizes(x, c)
		if err != nil {
			return err
		}
		var tp, tb int64
		for k := range post {
			tp += post[k]
			tb += bytes[k]
		}
		for k := range post {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%.3f\t\n", blockClassNames[k], c.Name(), post[k],
				100*float64(post[k])/float64(max(tp, 1)), 8*float64(bytes[k])/float64(max(post[k], 1)))
		}
		fmt.Fprintf(tw, "all\t%s\t%d\t100%%\t%.3f\t\n", c.Name(), tp, 8*float64(tb)/float64(max(tp, 1)))
	}
	return tw.Flush()
}

// writeSampleGain prints what BP gains from random order on a sample of n
// documents (reorder.MeasureSampleGain, seed 1, lists of df >= 2).
func writeSampleGain(w io.Writer, x *index.Index, n int) error {
	sg, err := reorder.MeasureSampleGain(context.Background(), x, n, 2, 1, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "BP on a random sample of %d documents: mean log2 gap %.3f (random order) -> %.3f (%.1f%%)\n",
		sg.Docs, sg.Random, sg.BP, -100*sg.Gain())
	return err
}

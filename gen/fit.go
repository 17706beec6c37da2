package gen

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/index"
)

// absentDF is the expected df given to query terms absent from a fitted
// index (so that they stay absent in most generated collections).
const absentDF = 0.2

// FitOptions configure FitIndex.
type FitOptions struct {
	// Log, when not nil, gives the query terms whose df fractions in the
	// index become TopicParams.QueryDF.
	Log     *QueryLog
	Workers int // 0 = all cores
}

// FitIndex estimates TopicParams from an index (one pass over its lists):
//
//   - Docs = its documents; MeanLen and LenSigma by the moments of ln L
//     (log-normal), MaxLen its longest document;
//   - PostingsPerDoc = postings / documents (Alpha is then fitted to it);
//   - Discount = the slope of ln(distinct terms) on ln(length) over the
//     documents longer than the median (the Pitman–Yor urn gives distinct ~
//     L^d for long documents), clamped to [0.1, 0.9];
//   - Vocab = its terms (ZipfS is then fitted to it);
//   - QueryDF = df/N of the query-log terms it holds, and absentDF/N
//     (about one chance in five of appearing) for those it lacks.
//
// Topic parameters keep their defaults; CooccurrenceLift measures what they
// control, for comparison.
func FitIndex(x *index.Index, opt FitOptions) (TopicParams, error) {
	var p TopicParams
	n := x.NumDocs()
	if n < 2 {
		return p, fmt.Errorf("gen: fit: index has %d documents, want >= 2", n)
	}
	lens := x.DocLens()
	distinct, err := docDistinct(x, opt.Workers)
	if err != nil {
		return p, err
	}
	p.Docs = n
	var sl, sl2, tot float64
	var cnt int
	maxLen := 0
	for _, l := range lens {
		tot += float64(l)
		maxLen = max(maxLen, int(l))
		if l > 0 {
			ll := math.Log(float64(l))
			sl += ll
			sl2 += ll * ll
			cnt++
		}
	}
	p.MeanLen = tot / float64(n)
	if cnt > 1 {
		m := sl / float64(cnt)
		p.LenSigma = math.Sqrt(math.Max(sl2/float64(cnt)-m*m, 0))
	}
	p.LenSigma = math.Min(math.Max(p.LenSigma, 0.05), 4)
	p.MaxLen = max(maxLen, int(math.Ceil(p.MeanLen)))
	var post float64
	for _, d := range distinct {
		post += float64(d)
	}
	p.PostingsPerDoc = math.Max(1, math.Min(post/float64(n), p.MeanLen))
	p.Discount = fitDiscount(lens, distinct, math.Exp(sl/float64(max(cnt, 1))))
	p.Vocab = x.NumTerms()
	if opt.Log != nil {
		p.QueryDF = map[string]float64{}
		for _, q := range opt.Log.Terms {
			if t, ok := x.Lookup(q); ok {
				p.QueryDF[q] = float64(x.Record(t).DF) / float64(n)
			} else {
				p.QueryDF[q] = absentDF / float64(n) // absent: rare here too
			}
		}
	}
	return p, nil
}

// fitDiscount regresses ln distinct on ln length over documents longer than
// median (and with >= 2 distinct terms).
func fitDiscount(lens, distinct []uint32, median float64) float64 {
	var sx, sy, sxx, sxy, c float64
	for i, l := range lens {
		if float64(l) <= median || distinct[i] < 2 {
			continue
		}
		x, y := math.Log(float64(l)), math.Log(float64(distinct[i]))
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		c++
	}
	d := DefaultDiscount
	if c >= 10 {
		if v := sxx - sx*sx/c; v > 1e-9 {
			d = (sxy - sx*sy/c) / v
		}
	}
	return math.Min(math.Max(d, 0.1), 0.9)
}

// docDistinct counts each document's postings (distinct terms) with all
// workers, decoding every list.
func docDistinct(x *index.Index, workers int) ([]uint32, error) {
	if workers <= 0 {
		workers = defaultWorkers()
	}
	n, nt := x.NumDocs(), x.NumTerms()
	out := make([]uint32, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var docs, freqs []uint32
			for {
				lo := int(next.Add(1024) - 1024)
				if lo >= nt {
					return
				}
				for t := lo; t < min(lo+1024, nt); t++ {
					l, err := x.List(t)
					if err == nil {
						docs, freqs, err = l.Decode(docs[:0], freqs[:0])
					}
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("gen: fit: term %q: %w", x.Term(t), err)
						}
						mu.Unlock()
						return
					}
					for _, d := range docs {
						atomic.AddUint32(&out[d], 1)
					}
				}
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

// Summary formats the main parameters on one line.
func (p TopicParams) Summary() string {
	return fmt.Sprintf("docs %d, mean_len %.1f, len_sigma %.3f, max_len %d, postings_per_doc %.1f, alpha %.4g, discount %.3f, vocab %d, zipf_s %.4g, zipf_q %.4g, topics %d, topic_zipf %.3g, topics_per_doc %.3g, topic_spread %d, background %.3g, query_topical %.3g, %d query dfs, site_docs %.3g, site_share %.3g, site_vocab %d",
		p.Docs, p.MeanLen, p.LenSigma, p.MaxLen, p.PostingsPerDoc, p.Alpha, p.Discount, p.Vocab, p.ZipfS, p.ZipfQ, p.Topics, p.TopicZipf, p.TopicsPerDoc, p.TopicSpread, p.Background, p.QueryTopical, len(p.QueryDF), p.SiteDocs, p.SiteShare, p.SiteVocab)
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

var (
	rwIndexOnce sync.Once
	rwIndex     string
	rwIndexErr  error
)

// runWriterIndex is a gen index of 20,000 documents shared by the
// runWriter tests and benchmarks.
func runWriterIndex(tb testing.TB) *index.Index {
	tb.Helper()
	rwIndexOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qp-runwriter")
		if err != nil {
			rwIndexErr = err
			return
		}
		rwIndex = filepath.Join(dir, "g.qp")
		rwIndexErr = commands["gen"].run([]string{"--docs", "20000", "--out", rwIndex, "--quiet"})
	})
	if rwIndexErr != nil {
		tb.Fatal(rwIndexErr)
	}
	x, err := index.Open(rwIndex)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

// syntheticResponses returns n queries and responses of up to k results
// over x's documents (every 7th query failed, every 5th without results).
func syntheticResponses(x *index.Index, n, k int) ([]engine.Query, []engine.Response) {
	rng := rand.New(rand.NewPCG(3, 4))
	qs := make([]engine.Query, n)
	out := make([]engine.Response, n)
	for i := range qs {
		qs[i] = engine.Query{ID: fmt.Sprintf("r%d-%d", i%10, i), K: k}
		switch {
		case i%7 == 3:
			out[i].Err = engine.ErrEmptyQuery
		case i%5 == 1:
		default:
			score := float32(20 * rng.Float64())
			for range 1 + rng.IntN(k) {
				out[i].Results = append(out[i].Results, topk.Result{Doc: uint32(rng.IntN(x.NumDocs())), Score: score})
				score *= float32(0.5 + 0.5*rng.Float64())
			}
		}
	}
	return qs, out
}

// TestRunWriterParts: the run is the same bytes whatever the number of
// formatting goroutines (the fmt switch), and equals eval.WriteRun's.
func TestRunWriterParts(t *testing.T) {
	x := runWriterIndex(t)
	qs, out := syntheticResponses(x, 3000, 10)
	var want bytes.Buffer
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		var es []eval.RunEntry
		for _, r := range out[i].Results {
			es = append(es, eval.RunEntry{DocID: x.ExternalID(r.Doc), Score: float64(r.Score)})
		}
		if err := eval.WriteRun(&want, qs[i].ID, es, "tag"); err != nil {
			t.Fatal(err)
		}
	}
	if want.Len() == 0 || strings.Count(want.String(), "\n") < 3000 {
		t.Fatalf("the reference run has %d lines", strings.Count(want.String(), "\n"))
	}
	for _, slots := range []bool{false, true} {
		for _, procs := range []int{1, 2, 3, 64} {
			var got bytes.Buffer
			rw := newRunWriter(&got, x, "tag")
			rw.setProcs(procs)
			if slots {
				if err := rw.useSlots(); err != nil || rw.ids == nil {
					t.Fatalf("useSlots: %v, table %v", err, rw.ids)
				}
			}
			for lo := 0; lo < len(qs); lo += 1000 {
				if err := rw.write(qs[lo:lo+1000], out[lo:lo+1000]); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%d goroutines, slots %v: the run differs from eval.WriteRun's", procs, slots)
			}
		}
	}
}

// BenchmarkRunWriter formats runs of 16,384 queries of up to 10 results.
func BenchmarkRunWriter(b *testing.B) {
	x := runWriterIndex(b)
	qs, out := syntheticResponses(x, 16384, 10)
	for _, c := range []struct {
		procs           int
		slots, oldLines bool
	}{{1, false, false}, {1, true, true}, {1, true, false}, {0, false, false}, {0, true, true}, {0, true, false}} {
		name := fmt.Sprintf("procs=%d/slots=%v", c.procs, c.slots)
		if c.oldLines {
			name += "/oldlines"
		}
		b.Run(name, func(b *testing.B) {
			rw := newRunWriter(io.Discard, x, "qp")
			rw.setProcs(c.procs)
			rw.wordLines = !c.oldLines
			if c.slots {
				if err := rw.useSlots(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := rw.write(qs, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(qs)), "ns/query")
		})
	}
}

// TestRunWriterPre: the run written from pieces formatted where they were
// answered (runWriter.answered, in any order and concurrently, as the
// continuous stream's workers call it) is the run write formats, chunk by
// chunk, the last chunk short; a chunk with a piece not formatted is
// formatted whole instead.
func TestRunWriterPre(t *testing.T) {
	x := runWriterIndex(t)
	qs, out := syntheticResponses(x, 2500, 10)
	const chunk, grain = 512, 7 // grains do not divide the chunk
	var want bytes.Buffer
	ref := newRunWriter(&want, x, "tag")
	for lo := 0; lo < len(qs); lo += chunk {
		if err := ref.write(qs[lo:min(lo+chunk, len(qs))], out[lo:min(lo+chunk, len(qs))]); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	rw := newRunWriter(&got, x, "tag")
	if err := rw.useSlots(); err != nil { // the pieces from the slots, the reference from ExternalID
		t.Fatal(err)
	}
	answered := rw.answered(qs, chunk)
	skipped := 0
	for lo := 0; lo < len(qs); lo += chunk {
		hi := min(lo+chunk, len(qs))
		var wg sync.WaitGroup
		for g := lo; g < hi; g += grain {
			if lo/chunk == 2 && g == lo+3*grain {
				skipped++ // chunk 2: one piece never formatted
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				answered(g, out[g:min(g+grain, hi)])
			}()
		}
		wg.Wait()
		if ready := rw.preReady(lo, hi-lo); ready == (lo/chunk == 2) {
			t.Fatalf("chunk %d: every piece formatted: %v", lo/chunk, ready)
		}
		if err := rw.writeChunk(lo, qs, out[lo:hi]); err != nil {
			t.Fatal(err)
		}
	}
	if skipped != 1 {
		t.Fatalf("%d pieces skipped", skipped)
	}
	if got.Len() == 0 || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the run from the pieces (%d bytes) differs from write's (%d bytes)", got.Len(), want.Len())
	}
}

// TestRunWriterAnsweredAllocs: once a piece's buffers hold its lines, the
// stream's hook formats the piece again (the same offset of a later chunk
// in the same slot) without allocating: the hot path of qp query's CPU
// stream, called by every worker per grain.
func TestRunWriterAnsweredAllocs(t *testing.T) {
	x := runWriterIndex(t)
	qs, out := syntheticResponses(x, 64, 10)
	results := 0
	for i := range out {
		results += len(out[i].Results)
	}
	if results == 0 {
		t.Fatal("no results to format")
	}
	for _, slots := range []bool{false, true} {
		var sink bytes.Buffer
		rw := newRunWriter(&sink, x, "qp")
		if slots {
			if err := rw.useSlots(); err != nil || rw.ids == nil {
				t.Fatalf("useSlots: %v, table %v", err, rw.ids)
			}
		}
		answered := rw.answered(qs, 16)
		answered(0, out[:16]) // grows the piece's buffers
		if allocs := testing.AllocsPerRun(100, func() { answered(0, out[:16]) }); allocs != 0 {
			t.Fatalf("slots %v: answered allocates %.1f times a grain once warm, want 0", slots, allocs)
		}
		if p := rw.pre.slots[0][0]; p.err != nil || p.chunk != 1 || p.end != 16 || len(p.b) == 0 {
			t.Fatalf("slots %v: piece after the runs: chunk %d, end %d, %d bytes, err %v", slots, p.chunk, p.end, len(p.b), p.err)
		}
	}
}

// TestAppendSlotLines: the lines appendSlotLines writes in words are
// eval.AppendRunLine's bytes, for slots of 8, 16 and 32 bytes (ids up to 7,
// 15 and 31 bytes), qids and tags on both sides of the words' bounds (the
// long ones take AppendRunLine), ranks past 9, and scores that AppendScore
// hands to strconv; what b held before is kept.
func TestAppendSlotLines(t *testing.T) {
	dir := t.TempDir()
	for _, longest := range []int{7, 15, 31} {
		in := filepath.Join(dir, fmt.Sprintf("d%d.jsonl", longest))
		var docs strings.Builder
		const ndocs = 36 // one base-36 digit each: unique ids of any length
		for d := range ndocs {
			n := 1 + d*7%longest // lengths 1 .. longest
			if d == 1 {
				n = longest
			}
			id := strings.Repeat("p", n-1) + strconv.FormatInt(int64(d), 36)
			fmt.Fprintf(&docs, "{\"id\": %q, \"text\": \"word%d common text\"}\n", id, d)
		}
		if err := os.WriteFile(in, []byte(docs.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		idx := filepath.Join(dir, fmt.Sprintf("d%d.qp", longest))
		if err := commands["index"].run([]string{"--in", in, "--out", idx, "--quiet"}); err != nil {
			t.Fatal(err)
		}
		x, err := index.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		rng := rand.New(rand.NewPCG(5, uint64(longest)))
		scores := []float32{19.7514, 1, 0.5, 1e-5, 1e-4, 3e7, 999999.4, 123456.7, 0.000123456}
		for _, tag := range []string{"q", "qp", "runtag", "runtag7", "a-long-run-tag"} {
			rw := newRunWriter(io.Discard, x, tag)
			if err := rw.useSlots(); err != nil || rw.ids == nil {
				t.Fatalf("useSlots: %v, table %v", err, rw.ids)
			}
			if want := map[int]int{7: 8, 15: 16, 31: 32}[longest]; rw.ids.Width() != want {
				t.Fatalf("ids up to %d bytes: slots of %d, want %d", longest, rw.ids.Width(), want)
			}
			for ql := 1; ql <= 20; ql++ {
				qid := strings.Repeat("7", ql)
				res := make([]topk.Result, rng.IntN(13))
				for j := range res {
					res[j] = topk.Result{Doc: uint32(rng.IntN(x.NumDocs())), Score: scores[rng.IntN(len(scores))] * float32(0.5+rng.Float64())}
				}
				res = append(res, topk.Result{Doc: 1, Score: 2}) // the longest id
				before := []byte("kept\n")
				got := rw.appendSlotLines(slices.Clip(before), qid, res)
				want := slices.Clone(before)
				for j, r := range res {
					want = eval.AppendRunLine(want, qid, x.ExternalID(r.Doc), j+1, float64(r.Score), tag)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("ids up to %d, tag %q, qid %q: got\n%s\nwant\n%s", longest, tag, qid, got, want)
				}
			}
		}
	}
}

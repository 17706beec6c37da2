package kern

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	"github.com/qpengine/qp/index"
)

// TestDecodeIndex writes a real index per codec (docIDs and frequencies in
// that codec), ships every block of every list to the GPU in one batch per
// mode (docIDs checked against the skip table's last docIDs), and compares
// with index.List.DecodeDocs and DecodeFreqs.
func TestDecodeIndex(t *testing.T) {
	c := gpu(t)
	N, lists := 300_000, 40
	if emulated(c) {
		N, lists = 20_000, 8
	}
	for _, codec := range allCodecs() {
		t.Run(codec.Name(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(11))
			lens := make([]uint32, N)
			for i := range lens {
				lens[i] = 1 + uint32(rng.Intn(500))
			}
			path := filepath.Join(t.TempDir(), codec.Name()+".qpi")
			w, err := index.NewWriter(path, index.WriterOptions{DocLens: lens, DocCodec: codec, FreqCodec: codec})
			if err != nil {
				t.Fatal(err)
			}
			dfs := []int{1, 2, 127, 128, 129, 255, 256, 257, 1000, 4096, N / 10, N / 2, N}
			for i := 0; i < lists; i++ {
				dfs = append(dfs, 1+rng.Intn(N/15))
			}
			for i, df := range dfs {
				docs := make([]uint32, 0, df)
				if df == N {
					for d := 0; d < N; d++ {
						docs = append(docs, uint32(d))
					}
				} else {
					seen := map[uint32]bool{}
					for len(docs) < df {
						d := uint32(rng.Intn(N))
						if rng.Intn(3) == 0 && len(docs) > 0 { // clustered gaps too
							d = min(docs[len(docs)-1]+1+uint32(rng.Intn(4)), uint32(N-1))
						}
						if !seen[d] {
							seen[d] = true
							docs = append(docs, d)
						}
					}
					sort.Slice(docs, func(a, b int) bool { return docs[a] < docs[b] })
				}
				freqs := make([]uint32, df)
				for j := range freqs {
					freqs[j] = 1 + uint32(rng.Intn(9))
					if rng.Intn(50) == 0 {
						freqs[j] = 1 + uint32(rng.Intn(5000))
					}
				}
				if err := w.AddList(fmt.Sprintf("t%03d", i), docs, freqs); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			x, err := index.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var db, fb Batch
			var wantD, wantF []uint32
			buf := make([]uint32, index.DefaultBlockSize)
			for term := 0; term < x.NumTerms(); term++ {
				l, err := x.List(term)
				if err != nil {
					t.Fatal(err)
				}
				if l.DocCodec.Name() != codec.Name() || l.FreqCodec.Name() != codec.Name() {
					t.Fatalf("index codecs %s/%s, want %s", l.DocCodec.Name(), l.FreqCodec.Name(), codec.Name())
				}
				for b := 0; b < l.NBlocks; b++ {
					n, err := l.DecodeDocs(b, buf)
					if err != nil {
						t.Fatal(err)
					}
					wantD = append(wantD, buf[:n]...)
					db.Add(l.DocBlock(b), l.BlockLen(b), l.BlockBase(b))
					db.Last = append(db.Last, l.LastDoc(b))
					if n, err = l.DecodeFreqs(b, buf); err != nil {
						t.Fatal(err)
					}
					wantF = append(wantF, buf[:n]...)
					fb.Add(l.FreqBlock(b), l.BlockLen(b), 0)
				}
			}
			for _, m := range []struct {
				mode Mode
				b    *Batch
				want []uint32
			}{{Docs, &db, wantD}, {Freqs, &fb, wantF}} {
				got := make([]uint32, m.b.Values())
				if err := DecodeBlocks(c, codec, m.b, m.mode, got); err != nil {
					t.Fatalf("%v: %v", m.mode, err)
				}
				for i := range m.want {
					if got[i] != m.want[i] {
						t.Fatalf("%v %d: GPU %d, index.List.Decode%s %d", m.mode, i, got[i], map[Mode]string{Docs: "Docs", Freqs: "Freqs"}[m.mode], m.want[i])
					}
				}
			}
			t.Logf("%d lists, %d blocks, %d postings: GPU equals index.List.DecodeDocs and DecodeFreqs", x.NumTerms(), db.NBlocks(), len(wantD))
		})
	}
}

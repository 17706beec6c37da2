package cuda

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	"github.com/qpengine/qp/index"
)

// TestBP128Index writes a real index (bp128 docIDs), ships every block of
// every list to the GPU in one batch, checked against the skip table's last
// docIDs, and compares with index.List.DecodeDocs.
func TestBP128Index(t *testing.T) {
	c := gpu(t)
	rng := rand.New(rand.NewSource(11))
	const N = 300_000
	lens := make([]uint32, N)
	for i := range lens {
		lens[i] = 1 + uint32(rng.Intn(500))
	}
	path := filepath.Join(t.TempDir(), "bp128.qpi")
	w, err := index.NewWriter(path, index.WriterOptions{DocLens: lens})
	if err != nil {
		t.Fatal(err)
	}
	dfs := []int{1, 2, 127, 128, 129, 255, 256, 257, 1000, 4096, 30_000, N / 2, N}
	for i := 0; i < 40; i++ {
		dfs = append(dfs, 1+rng.Intn(20_000))
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
					d = min(docs[len(docs)-1]+1+uint32(rng.Intn(4)), N-1)
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
	var batch BP128Batch
	var want []uint32
	buf := make([]uint32, index.DefaultBlockSize)
	for term := 0; term < x.NumTerms(); term++ {
		l, err := x.List(term)
		if err != nil {
			t.Fatal(err)
		}
		if l.DocCodec.Name() != "bp128" {
			t.Fatalf("index docID codec %s, want bp128", l.DocCodec.Name())
		}
		for b := 0; b < l.NBlocks; b++ {
			n, err := l.DecodeDocs(b, buf)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, buf[:n]...)
			batch.Add(l.DocBlock(b), l.BlockLen(b), l.BlockBase(b))
			batch.Last = append(batch.Last, l.LastDoc(b))
		}
	}
	got := make([]uint32, batch.Values())
	if err := DecodeBP128Blocks(c, &batch, got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("docID %d: GPU %d, index.List.DecodeDocs %d", i, got[i], want[i])
		}
	}
	t.Logf("%d lists, %d blocks, %d docIDs: GPU equals index.List.DecodeDocs", x.NumTerms(), batch.NBlocks(), len(want))
}

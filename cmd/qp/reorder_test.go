package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/index"
)

// writeTopicJSONL writes n JSON Lines documents about a few topics, each
// with a stored field naming its own id.
func writeTopicJSONL(t *testing.T, path string, n int) {
	t.Helper()
	topics := [][]string{
		{"sorting", "merge", "quicksort", "heap", "pivot"},
		{"compiler", "parser", "grammar", "token", "syntax"},
		{"network", "packet", "router", "protocol", "latency"},
		{"matrix", "vector", "eigenvalue", "linear", "algebra"},
	}
	// Random topics: exactly periodic ones would give both halves the same
	// term degrees, where every move gain is equal and BP swaps whole halves.
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for i := range n {
		words := topics[r.IntN(len(topics))]
		text := strings.Join([]string{words[r.IntN(5)], words[r.IntN(5)], words[r.IntN(5)], "paper"}, " ")
		fmt.Fprintf(&b, `{"id":"d%d","text":%q,"self":"d%d"}`+"\n", i, text, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIndexDocIDOrderBP(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	writeTopicJSONL(t, in, 400)
	out := filepath.Join(dir, "bp.qp")
	if err := commands["index"].run([]string{"--in", in, "--out", out, "--docid-order", "bp", "--quiet", "--tmp", dir}); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if x.Meta.DocIDOrder != "bp" || x.NumDocs() != 400 {
		t.Fatalf("docid order %q, %d documents", x.Meta.DocIDOrder, x.NumDocs())
	}
	moved := 0
	for d := range uint32(x.NumDocs()) {
		id := x.ExternalID(d)
		if want := fmt.Sprintf(`"self":%q`, id); !strings.Contains(string(x.Stored(d)), want) {
			t.Fatalf("doc %d (%s): stored %s", d, id, x.Stored(d))
		}
		if id != fmt.Sprintf("d%d", d) {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no document moved")
	}
	// The temporary input-order index is gone.
	left, _ := filepath.Glob(filepath.Join(dir, "qp-bp-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestReorderCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	writeTopicJSONL(t, in, 300)
	idx := filepath.Join(dir, "in.qp")
	if err := commands["index"].run([]string{"--in", in, "--out", idx, "--quiet", "--codec", "eliasfano", "--block", "64", "--bitmaps", "off"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(idx)
	out := filepath.Join(dir, "out.qp")
	if err := commands["reorder"].run([]string{idx, out, "--quiet", "--seed", "9", "--threads", "2"}); err != nil {
		t.Fatal(err)
	}
	y, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if y.Meta.DocIDOrder != "bp" || y.Meta.DocCodec != "eliasfano" || y.Meta.BlockSize != 64 || y.Meta.Bitmaps != "off" {
		t.Errorf("META %+v", y.Meta)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{idx, idx}, "output is the input"},
		{[]string{idx, filepath.Join(dir, ".", "in.qp")}, "output is the input"},
		{[]string{idx}, "want IN and OUT"},
		{[]string{idx, out, "--iters", "0"}, "--iters"},
		{[]string{idx, out, "--refine", "-1"}, "--refine"},
		{[]string{idx, out, "--refine", "33"}, "--refine"},
		{[]string{idx, out, "--refine-iters", "0"}, "--refine-iters"},
		{[]string{idx, out, "--min-df", "0"}, "--min-df"},
		{[]string{idx, out, "--depth", "-1"}, "--depth"},
		{[]string{idx, out, "--threads", "-2"}, "--threads"},
		{[]string{filepath.Join(dir, "none.qp"), out}, "no such file"},
		{[]string{in, filepath.Join(dir, "x.qp")}, "not a qp index"},
	} {
		err := commands["reorder"].run(append(c.args, "--quiet"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("qp reorder %v: error %v, want %q", c.args, err, c.want)
		}
	}
	if after, _ := os.ReadFile(idx); string(after) != string(before) {
		t.Error("the input index changed")
	}
}

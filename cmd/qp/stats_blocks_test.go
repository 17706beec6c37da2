package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/bench/collstats"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

// TestStatsBlocks: the block breakdown counts every posting once, its
// classes sum to the bytes of a full re-encoding, short lists hold only
// lists shorter than a block, and the flags are checked.
func TestStatsBlocks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	writeTopicJSONL(t, in, 500)
	idx := filepath.Join(dir, "in.qp")
	if err := commands["index"].run([]string{"--in", in, "--out", idx, "--quiet", "--block", "64", "--bitmaps", "off"}); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(idx)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var short int64
	for tm := 0; tm < x.NumTerms(); tm++ {
		if df := x.Record(tm).DF; df < 64 {
			short += int64(df)
		}
	}
	for _, name := range []string{"bp128", "pfordelta", "eliasfano", "interpolative", "bp128ip"} { // the last two: count-less blocks (index.AppendDocBlock)
		c, err := compress.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		post, bytes, err := blockSizes(x, c)
		if err != nil {
			t.Fatal(err)
		}
		db, _, err := collstats.ReencodeSizes(x, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := post[blockFull] + post[blockTail] + post[blockShort]; got != int64(x.Meta.Postings) {
			t.Errorf("%s: %d postings in the classes, index has %d", name, got, x.Meta.Postings)
		}
		if got := bytes[blockFull] + bytes[blockTail] + bytes[blockShort]; got != db {
			t.Errorf("%s: %d bytes in the classes, re-encoding gives %d", name, got, db)
		}
		if post[blockShort] != short || post[blockFull]%64 != 0 {
			t.Errorf("%s: short lists %d postings (want %d), full blocks %d", name, post[blockShort], short, post[blockFull])
		}
	}
	if err := commands["stats"].run([]string{idx, "--codecs", "bp128", "--blocks", "--bp-sample", "200"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{idx, "--blocks"}, "--blocks needs --codecs"},
		{[]string{idx, "--bp-sample", "-1"}, "--bp-sample"},
	} {
		err := commands["stats"].run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("qp stats %v: error %v, want %q", c.args, err, c.want)
		}
	}
}

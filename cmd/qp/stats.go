package main

import (
	"fmt"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/qpengine/qp/bench/collstats"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

func init() {
	c := command{name: "stats", args: "INDEX", summary: "print collection statistics and bits per docID / frequency per codec"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Prints the index's collection statistics and its compressed size: bits per
docID and per frequency for the codec(s) it was built with. With --codecs all
(or a comma-separated list) every list is re-encoded with each codec, on all
cores, to compare sizes on the same data.`)
		codecs := fs.String("codecs", "", "re-encode with these codecs ('all' or e.g. bp128,eliasfano)")
		blocks := fs.Bool("blocks", false, "with --codecs: also split each codec's bits per docID into full blocks,\nthe partial last blocks of longer lists, and lists shorter than a block")
		bpSample := fs.Int("bp-sample", 0, "also run BP on a random sample of this many documents and print the mean\nlog2 gap in random order and after (how clusterable the collection is)")
		pos, err := parseArgs(fs, args, 1)
		if err != nil {
			return err
		}
		x, err := index.Open(pos[0])
		if err != nil {
			return err
		}
		defer x.Close()
		m := x.Meta
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "index\t%s\n", pos[0])
		fmt.Fprintf(tw, "documents\t%d\n", m.Docs)
		fmt.Fprintf(tw, "terms\t%d\n", m.Terms)
		fmt.Fprintf(tw, "postings\t%d\n", m.Postings)
		fmt.Fprintf(tw, "tokens\t%d\n", m.Tokens)
		fmt.Fprintf(tw, "avg doc length\t%.2f\n", m.AvgDL)
		fmt.Fprintf(tw, "block size\t%d\n", m.BlockSize)
		fmt.Fprintf(tw, "BM25\tk1=%g b=%g\n", m.K1, m.B)
		fmt.Fprintf(tw, "analysis\tstem=%q stopwords=%q\n", m.Stem, m.Stopwords)
		fmt.Fprintf(tw, "docid order\t%s\n", m.DocIDOrder)
		fmt.Fprintf(tw, "postings bytes\t%d\n", x.SizeBytes())
		tw.Flush()
		fmt.Println()
		// Sizes by the codecs the lists use.
		type agg struct{ postings, docBytes, freqBytes, skipBytes uint64 }
		by := map[string]*agg{}
		for t := 0; t < x.NumTerms(); t++ {
			l, err := x.List(t)
			if err != nil {
				return err
			}
			k := l.DocCodec.Name() + "/" + l.FreqCodec.Name()
			if by[k] == nil {
				by[k] = &agg{}
			}
			a := by[k]
			a.postings += uint64(l.DF)
			a.docBytes += uint64(len(l.DocBytes()))
			a.freqBytes += uint64(len(l.FreqBytes()))
			a.skipBytes += uint64(len(l.SkipBytes()))
		}
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "codec (doc/freq)\tpostings\tbits/docID\tbits/freq\tskip bits/posting\t")
		var keys []string
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := by[k]
			p := float64(a.postings)
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t\n", k, a.postings, 8*float64(a.docBytes)/p, 8*float64(a.freqBytes)/p, 8*float64(a.skipBytes)/p)
		}
		tw.Flush()
		if *bpSample < 0 {
			return fmt.Errorf("--bp-sample %d: want >= 0", *bpSample)
		}
		if *blocks && *codecs == "" {
			return fmt.Errorf("--blocks needs --codecs")
		}
		if *bpSample > 0 {
			fmt.Println()
			if err := writeSampleGain(os.Stdout, x, *bpSample); err != nil {
				return err
			}
		}
		if *codecs == "" {
			return nil
		}
		list, err := parseCodecs(*codecs)
		if err != nil {
			return err
		}
		fmt.Println()
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "re-encoded with\tbits/docID\tbits/freq\t")
		for _, c := range list {
			db, fb, err := collstats.ReencodeSizes(x, c)
			if err != nil {
				return err
			}
			p := float64(m.Postings)
			fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t\n", c.Name(), 8*float64(db)/p, 8*float64(fb)/p)
		}
		if err := tw.Flush(); err != nil || !*blocks {
			return err
		}
		fmt.Println()
		return writeBlockBreakdown(os.Stdout, x, list)
	}
	register(c)
}

func parseCodecs(s string) ([]compress.Codec, error) {
	if s == "all" {
		return compress.All(), nil
	}
	var out []compress.Codec
	for _, n := range splitComma(s) {
		c, err := compress.ByName(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

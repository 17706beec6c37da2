package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/index/source"
	"github.com/qpengine/qp/internal/progress"
	"github.com/qpengine/qp/reorder"
	"github.com/qpengine/qp/score"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func init() {
	c := command{name: "index", args: "--in FILE|DIR [--in ...] --out INDEX [flags]", summary: "build a compressed inverted index from documents"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Reads JSON Lines ({"id":..., "text":...}; a "title" is prepended unless the
text already starts with it; other string and number fields are kept as
stored fields), TREC text (<DOC><DOCNO>..</DOCNO>
..</DOC>) and plain .txt files (a directory is walked recursively); .gz
files are decompressed transparently. Tokens are Unicode word segments
(letters, numbers, ideographs), lower-cased; --stem english and
--stopwords english give Porter stemming and Lucene's English stop list.

Postings (docIDs and term frequencies) are cut into blocks of --block
postings, each block compressed with --codec, with a skip table holding
each block's last docID, offsets and block-max BM25 score. Indexing uses all
cores; memory for postings stays under --mem (sorted runs spill to disk).

--bitmaps auto stores a list's docIDs as a roaring bitmap when that is
smaller than its docID blocks (dense lists); frequencies and the skip table
stay block-coded (docs/BITMAPS.md). off never, always for every list.

Codecs: `+strings.Join(compress.Names(), ", "))
		var ins multiFlag
		fs.Var(&ins, "in", "input file or directory (repeatable)")
		out := fs.String("out", "", "index file to write")
		format := fs.String("format", "auto", "input format: auto, jsonl, trec or txt")
		onError := fs.String("on-error", "fail", "malformed document: fail (stop) or skip (report and go on)")
		stem := fs.String("stem", "none", "stemmer: none, english (Porter) or porter2")
		stop := fs.String("stopwords", "none", "stop words: none or english")
		codec := fs.String("codec", "bp128", "codec of docID blocks")
		fcodec := fs.String("freq-codec", "", "codec of frequency blocks (default: --codec)")
		block := fs.Int("block", index.DefaultBlockSize, "postings per block")
		order := fs.String("docid-order", "input", "docID order: input, random, bp (recursive graph bisection, as qp reorder; docs/REORDER.md), or the name of a stored field to sort by")
		seed := fs.Int64("seed", 1, "seed of --docid-order random and bp")
		mem := fs.String("mem", "1G", "memory budget for in-memory postings before spilling (e.g. 512M, 4G)")
		tmp := fs.String("tmp", "", "directory for spilled runs (default: the system temp dir)")
		threads := fs.Int("threads", 0, "tokenizing and encoding threads (0 = all cores)")
		k1 := fs.Float64("k1", score.Default.K1, "BM25 k1 of the stored block-max scores")
		b := fs.Float64("b", score.Default.B, "BM25 b of the stored block-max scores")
		store := fs.Bool("store", true, "keep extra JSON fields as stored fields")
		quiet := fs.Bool("quiet", false, "no progress output")
		bitmaps := fs.String("bitmaps", "auto", "store docIDs as roaring bitmaps: auto (when smaller), off or always")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		ins = append(ins, pos...)
		if len(ins) == 0 || *out == "" {
			fs.Usage()
			return fmt.Errorf("--in and --out are required")
		}
		aopt := analysis.Options{Stem: *stem, Stopwords: *stop}
		if err := aopt.Validate(); err != nil {
			return err
		}
		dc, err := compress.ByName(*codec)
		if err != nil {
			return err
		}
		fc := dc
		if *fcodec != "" {
			if fc, err = compress.ByName(*fcodec); err != nil {
				return err
			}
		}
		bmode, err := index.ParseBitmapMode(*bitmaps)
		if err != nil {
			return fmt.Errorf("--bitmaps: %w", err)
		}
		budget, err := parseSize(*mem)
		if err != nil {
			return fmt.Errorf("--mem: %w", err)
		}
		sopt := source.Options{Format: *format}
		switch *onError {
		case "fail":
			sopt.Mode = source.Fail
		case "skip":
			sopt.Mode = source.Skip
		default:
			return fmt.Errorf("--on-error %q: want fail or skip", *onError)
		}
		rd, err := sopt.Open(ins...)
		if err != nil {
			return err
		}
		defer rd.Close()
		field := ""
		dorder := *order
		bp := dorder == "bp"
		if bp {
			dorder = "input" // then reordered by reorder.Run (below)
		} else if dorder != "input" && dorder != "random" {
			field, dorder = dorder, "field"
		}
		final := *out
		if bp {
			dir, err := os.MkdirTemp(*tmp, "qp-bp-")
			if err != nil {
				return fmt.Errorf("--docid-order bp: %w", err)
			}
			defer os.RemoveAll(dir)
			*out = filepath.Join(dir, "input-order.qp")
		}
		if _, err := analysis.New(aopt); err != nil {
			return err
		}
		bar := progress.New("indexing", "bytes", rd.TotalSize())
		if *quiet {
			bar.Quiet()
		}
		start := time.Now()
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
		defer cancel()
		st, err := index.Build(ctx, &docAdapter{r: rd, store: *store, field: field}, index.BuildOptions{
			Out: *out, BlockSize: *block, DocCodec: dc, FreqCodec: fc,
			Params: score.Params{K1: *k1, B: *b},
			NewAnalyzer: func() index.Analyzer {
				a, _ := analysis.New(aopt)
				return a.AppendTokens
			},
			DocIDOrder: dorder, Seed: *seed, MemBudget: budget, TempDir: *tmp, Workers: *threads, Bitmaps: bmode,
			Meta: index.Meta{Stem: aopt.Normalize().Stem, Stopwords: aopt.Normalize().Stopwords, Source: strings.Join(ins, ",")},
			Progress: func(s index.BuildStats) {
				el := time.Since(start).Seconds()
				bar.Set(rd.BytesRead(), fmt.Sprintf("%d docs (%s docs/s), %s postings, %d runs",
					s.Docs, progress.Human(float64(s.Docs)/el), progress.Human(float64(s.Postings)), s.Runs))
			},
		})
		if err != nil {
			return err
		}
		el := time.Since(start)
		bar.Done(fmt.Sprintf("%d docs", st.Docs))
		if n := rd.Skipped(); n > 0 {
			errs := rd.SkipErrors()
			fmt.Fprintf(os.Stderr, "skipped %d malformed documents; first errors:\n", n)
			for i, e := range errs {
				if i == 10 {
					break
				}
				fmt.Fprintf(os.Stderr, "  %v\n", e)
			}
		}
		p := float64(st.Postings)
		fmt.Printf("indexed %d documents in %.1fs (%.0f docs/s): %d terms, %d postings, %d tokens\n",
			st.Docs, el.Seconds(), float64(st.Docs)/el.Seconds(), st.Terms, st.Postings, st.Tokens)
		wrote := *out
		if bp {
			wrote += " (input order, temporary)"
		}
		fmt.Printf("%s: %.3f bits/docID, %.3f bits/freq; %d lists as bitmaps (--bitmaps %s); %d spilled runs; wrote %s\n",
			dc.Name(), 8*float64(st.DocBytes)/p, 8*float64(st.FreqBytes)/p, st.BitmapLists, bmode, st.Runs, wrote)
		if !bp {
			return nil
		}
		rst, err := runReorder(ctx, *out, final, reorder.Config{
			Options: reorder.Options{Seed: uint64(*seed), Workers: *threads},
		}, *quiet)
		if err != nil {
			return fmt.Errorf("--docid-order bp: %w", err)
		}
		printReorderStats(rst, final)
		return nil
	}
	register(c)
}

// docAdapter turns source documents into index documents.
type docAdapter struct {
	r     *source.Reader
	store bool
	field string
}

func (a *docAdapter) Next() (*index.Document, error) {
	d, err := a.r.Next()
	if err != nil {
		return nil, err
	}
	doc := &index.Document{ID: d.ID, Text: d.Text}
	if a.store && len(d.Fields) > 0 {
		doc.Stored, _ = json.Marshal(d.Fields)
	}
	if a.field != "" {
		doc.Key = d.Fields[a.field]
	}
	return doc, nil
}

// parseSize parses 123, 64K, 512M, 4G (binary units).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40} {
		if strings.HasSuffix(s, suf) || strings.HasSuffix(s, suf+"B") || strings.HasSuffix(s, suf+"IB") {
			s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B"), suf)
			mult = m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(v * float64(mult)), nil
}

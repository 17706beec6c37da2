package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/index/source"
	"github.com/qpengine/qp/internal/fileguard"
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
		onError := fs.String("on-error", "fail", "malformed document (bad JSON, a missing, repeated or unwritable id) or\ndamaged .gz file: fail (stop, write nothing) or skip (report and go on;\na corrupt .gz file is skipped whole, a truncated one from the cut on)")
		stem := fs.String("stem", "none", "stemmer: none, english (Porter) or porter2")
		stop := fs.String("stopwords", "none", "stop words: none or english")
		codec := fs.String("codec", "bp128", "codec of docID blocks")
		fcodec := fs.String("freq-codec", "", "codec of frequency blocks (default: --codec)")
		block := fs.Int("block", index.DefaultBlockSize, "postings per block")
		order := fs.String("docid-order", "input", "docID order: input, random (a hash of the id, --seed), bp (recursive graph\nbisection, as qp reorder; docs/REORDER.md), or the name of a stored field\nto sort by (as strings); every document must have that field: the first\none without it stops the build")
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
		if err := checkIndexFlags(*block, *threads, *k1, *b); err != nil {
			return err
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
		sopt := source.Options{Format: *format, UniqueIDs: true}
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
		// Every input file (those inside an --in directory included) must
		// differ from the index and from the OUT.tmp it is written to.
		if err := fileguard.Check(indexOutputs(*out), "input", rd.Files()...); err != nil {
			return err
		}
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
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
		if err == nil {
			bar.Done(fmt.Sprintf("%d docs", st.Docs))
		}
		reportSkipped(rd)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted: %s not written; its temporary files were removed", *out)
		case errors.Is(err, index.ErrNoDocuments) && rd.Skipped() > 0:
			return fmt.Errorf("%w: every document or file was skipped (the errors above)", err)
		default:
			return err
		}
		el := time.Since(start)
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

// checkIndexFlags checks the numeric flags of qp index before any input is
// read.
func checkIndexFlags(block, threads int, k1, b float64) error {
	if block < 1 || block > index.MaxBlockSize {
		return fmt.Errorf("--block %d: want 1..%d postings per block", block, index.MaxBlockSize)
	}
	if threads < 0 {
		return fmt.Errorf("--threads %d: want 0 (all cores) or a positive count", threads)
	}
	if !(k1 >= 0) || math.IsInf(k1, 0) {
		return fmt.Errorf("--k1 %v: want a finite value >= 0", k1)
	}
	if !(b >= 0 && b <= 1) {
		return fmt.Errorf("--b %v: want 0 <= b <= 1", b)
	}
	return nil
}

// reportSkipped prints the documents and files that --on-error skip
// dropped: damaged compressed files first, each on a line of its own, as
// they lose more than one document.
func reportSkipped(rd *source.Reader) {
	n := rd.Skipped()
	if n == 0 {
		return
	}
	errs := rd.SkipErrors()
	for _, e := range errs {
		var se *source.Error
		if !errors.Is(e, source.ErrCorruptFile) || !errors.As(e, &se) {
			continue
		}
		if se.Line > 0 { // the documents before this line are intact
			fmt.Fprintf(os.Stderr, "WARNING: the documents of %s after line %d were NOT indexed: %v\n", se.File, se.Line, se.Err)
		} else {
			fmt.Fprintf(os.Stderr, "WARNING: %s was NOT indexed: %v\n", se.File, se.Err)
		}
	}
	fmt.Fprintf(os.Stderr, "skipped %d malformed documents or damaged files; first errors:\n", n)
	for i, e := range errs {
		if i == 10 {
			break
		}
		fmt.Fprintf(os.Stderr, "  %v\n", e)
	}
}

// indexOutputs are the files an index build writes: OUT, and OUT.tmp
// until it is renamed.
func indexOutputs(out string) []fileguard.Output {
	return []fileguard.Output{{Path: out}, {Path: out + ".tmp", Of: out}}
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
		v, ok := d.Fields[a.field]
		if !ok {
			return nil, missingField(d, a.field)
		}
		doc.Key = v
	}
	return doc, nil
}

// missingField is the error of --docid-order FIELD at the first document
// without that field: it stops the build whatever --on-error says (the
// flag is wrong, not the document), naming the fields the document has.
func missingField(d *source.Doc, field string) error {
	names := make([]string, 0, len(d.Fields))
	for k := range d.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	has := "it has no fields besides its id and text"
	if len(names) > 0 {
		has = "its fields: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s:%d: --docid-order %q: the document has no field %q (%s); want input, random, bp, or a field that every document has",
		d.File, d.Line, field, field, has)
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

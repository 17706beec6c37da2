package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

// indexHelp is qp index's description (before its flags).
func indexHelp() string {
	return `Reads JSON Lines ({"id":..., "text":...}; a "title" is prepended unless the
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

Codecs: ` + strings.Join(compress.Names(), ", ") + `
(interpolative, the most compact, and bp128ip decode on the CPU only: the
GPU backend refuses such an index, --device auto then uses the CPU)`
}

func init() {
	c := command{name: "index", args: "--in FILE|DIR [--in ...] --out INDEX [flags]", summary: "build a compressed inverted index from documents"}
	c.run = func(args []string) error {
		fs := newFlags(c, indexHelp())
		var f indexFlags
		f.define(fs)
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		f.ins = append(f.ins, pos...)
		if len(f.ins) == 0 || f.out == "" {
			fs.Usage()
			return fmt.Errorf("--in and --out are required")
		}
		return f.run()
	}
	register(c)
}

// indexFlags are qp index's flags.
type indexFlags struct {
	ins                              multiFlag
	out, format, onError, stem, stop string
	codec, fcodec, order, mem, tmp   string
	bitmaps                          string
	block, threads                   int
	seed                             int64
	k1, b                            float64
	store, quiet                     bool
}

// define defines the flags on fs.
func (f *indexFlags) define(fs *flag.FlagSet) {
	fs.Var(&f.ins, "in", "input file or directory (repeatable)")
	fs.StringVar(&f.out, "out", "", "index file to write")
	fs.StringVar(&f.format, "format", "auto", "input format: auto, jsonl, trec or txt")
	fs.StringVar(&f.onError, "on-error", "fail", "malformed document (bad JSON, a missing, repeated or unwritable id) or\ndamaged .gz file: fail (stop, write nothing) or skip (report and go on;\na corrupt .gz file is skipped whole, a truncated one from the cut on)")
	fs.StringVar(&f.stem, "stem", "none", "stemmer: none, english (Porter) or porter2")
	fs.StringVar(&f.stop, "stopwords", "none", "stop words: none or english")
	fs.StringVar(&f.codec, "codec", "bp128", "codec of docID blocks")
	fs.StringVar(&f.fcodec, "freq-codec", "", "codec of frequency blocks (default: --codec)")
	fs.IntVar(&f.block, "block", index.DefaultBlockSize, "postings per block")
	fs.StringVar(&f.order, "docid-order", "input", "docID order: input, random (a hash of the id, --seed), bp (recursive graph\nbisection, as qp reorder; docs/REORDER.md), or the name of a stored field\nto sort by (as strings); every document must have that field: the first\none without it stops the build")
	fs.Int64Var(&f.seed, "seed", 1, "seed of --docid-order random and bp")
	fs.StringVar(&f.mem, "mem", "1G", "memory budget for in-memory postings before spilling (e.g. 512M, 4G)")
	fs.StringVar(&f.tmp, "tmp", "", "directory for spilled runs (default: the system temp dir)")
	fs.IntVar(&f.threads, "threads", 0, "tokenizing and encoding threads (0 = all cores)")
	fs.Float64Var(&f.k1, "k1", score.Default.K1, "BM25 k1 of the stored block-max scores")
	fs.Float64Var(&f.b, "b", score.Default.B, "BM25 b of the stored block-max scores")
	fs.BoolVar(&f.store, "store", true, "keep extra JSON fields as stored fields")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress output")
	fs.StringVar(&f.bitmaps, "bitmaps", "auto", "store docIDs as roaring bitmaps: auto (when smaller), off or always")
}

// indexPlan is what the flags resolve to before any input is read.
type indexPlan struct {
	aopt   analysis.Options
	dc, fc compress.Codec
	bmode  index.BitmapMode
	budget int64
	sopt   source.Options
}

// resolve checks the flags and resolves the analyzer, codecs, bitmap mode,
// memory budget and input options.
func (f *indexFlags) resolve() (pl indexPlan, err error) {
	if err := checkIndexFlags(f.block, f.threads, f.k1, f.b); err != nil {
		return pl, err
	}
	pl.aopt = analysis.Options{Stem: f.stem, Stopwords: f.stop}
	if err := pl.aopt.Validate(); err != nil {
		return pl, err
	}
	if pl.dc, err = compress.ByName(f.codec); err != nil {
		return pl, err
	}
	pl.fc = pl.dc
	if f.fcodec != "" {
		if pl.fc, err = compress.ByName(f.fcodec); err != nil {
			return pl, err
		}
	}
	if pl.bmode, err = index.ParseBitmapMode(f.bitmaps); err != nil {
		return pl, fmt.Errorf("--bitmaps: %w", err)
	}
	if pl.budget, err = parseSize(f.mem); err != nil {
		return pl, fmt.Errorf("--mem: %w", err)
	}
	pl.sopt = source.Options{Format: f.format, UniqueIDs: true}
	switch f.onError {
	case "fail":
		pl.sopt.Mode = source.Fail
	case "skip":
		pl.sopt.Mode = source.Skip
	default:
		return pl, fmt.Errorf("--on-error %q: want fail or skip", f.onError)
	}
	return pl, nil
}

// docOrder splits --docid-order into the builder's order and sort field;
// bp builds in input order and reorders afterwards (reorder.Run).
func (f *indexFlags) docOrder() (order, field string, bp bool) {
	switch f.order {
	case "bp":
		return "input", "", true
	case "input", "random":
		return f.order, "", false
	}
	return "field", f.order, false
}

// run builds the index (and with --docid-order bp reorders it).
func (f *indexFlags) run() error {
	pl, err := f.resolve()
	if err != nil {
		return err
	}
	rd, err := pl.sopt.Open(f.ins...)
	if err != nil {
		return err
	}
	defer rd.Close()
	// Every input file (those inside an --in directory included) must
	// differ from the index and from the OUT.tmp it is written to.
	if err := fileguard.Check(indexOutputs(f.out), "input", rd.Files()...); err != nil {
		return err
	}
	dorder, field, bp := f.docOrder()
	final := f.out
	if bp {
		dir, err := os.MkdirTemp(f.tmp, "qp-bp-")
		if err != nil {
			return fmt.Errorf("--docid-order bp: %w", err)
		}
		defer os.RemoveAll(dir)
		f.out = filepath.Join(dir, "input-order.qp")
	}
	if _, err := analysis.New(pl.aopt); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	st, err := f.build(ctx, rd, pl, dorder, field)
	reportSkipped(rd)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %s not written; its temporary files were removed", f.out)
	case errors.Is(err, index.ErrNoDocuments) && rd.Skipped() > 0:
		return fmt.Errorf("%w: every document or file was skipped (the errors above)", err)
	default:
		return err
	}
	wrote := f.out
	if bp {
		wrote += " (input order, temporary)"
	}
	printIndexSummary(st, time.Since(start), pl, wrote)
	if !bp {
		return nil
	}
	rst, err := runReorder(ctx, f.out, final, reorder.Config{
		Options: reorder.Options{Seed: uint64(f.seed), Workers: f.threads},
	}, f.quiet)
	if err != nil {
		return fmt.Errorf("--docid-order bp: %w", err)
	}
	printReorderStats(rst, final)
	return nil
}

// build runs index.Build over rd into f.out with a progress bar.
func (f *indexFlags) build(ctx context.Context, rd *source.Reader, pl indexPlan, dorder, field string) (index.BuildStats, error) {
	bar := progress.New("indexing", "bytes", rd.TotalSize())
	if f.quiet {
		bar.Quiet()
	}
	start := time.Now()
	st, err := index.Build(ctx, &docAdapter{r: rd, store: f.store, field: field}, index.BuildOptions{
		Out: f.out, BlockSize: f.block, DocCodec: pl.dc, FreqCodec: pl.fc,
		Params: score.Params{K1: f.k1, B: f.b},
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(pl.aopt)
			return a.AppendTokens
		},
		DocIDOrder: dorder, Seed: f.seed, MemBudget: pl.budget, TempDir: f.tmp, Workers: f.threads, Bitmaps: pl.bmode,
		Meta: index.Meta{Stem: pl.aopt.Normalize().Stem, Stopwords: pl.aopt.Normalize().Stopwords, Source: strings.Join(f.ins, ",")},
		Progress: func(s index.BuildStats) {
			el := time.Since(start).Seconds()
			bar.Set(rd.BytesRead(), fmt.Sprintf("%d docs (%s docs/s), %s postings, %d runs",
				s.Docs, progress.Human(float64(s.Docs)/el), progress.Human(float64(s.Postings)), s.Runs))
		},
	})
	if err == nil {
		bar.Done(fmt.Sprintf("%d docs", st.Docs))
	}
	return st, err
}

// printIndexSummary prints the two summary lines of a build of el.
func printIndexSummary(st index.BuildStats, el time.Duration, pl indexPlan, wrote string) {
	p := float64(st.Postings)
	fmt.Printf("indexed %d documents in %.1fs (%.0f docs/s): %d terms, %d postings, %d tokens\n",
		st.Docs, el.Seconds(), float64(st.Docs)/el.Seconds(), st.Terms, st.Postings, st.Tokens)
	fmt.Printf("%s: %.3f bits/docID, %.3f bits/freq; %d lists as bitmaps (--bitmaps %s); %d spilled runs; wrote %s\n",
		pl.dc.Name(), 8*float64(st.DocBytes)/p, 8*float64(st.FreqBytes)/p, st.BitmapLists, pl.bmode, st.Runs, wrote)
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

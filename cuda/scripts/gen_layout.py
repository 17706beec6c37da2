#!/usr/bin/env python3
"""gen_layout.py — the structures shared by Go (package cuda/kern) and the
query kernels (cuda/kernels/query*.cu), from one table (LAYOUTS below):

  cuda/kernels/query_params.cuh  the kernels' parameter structs and a
                                 static_assert of every shared struct's size
                                 and field offsets (nvcc and the emulator's g++)
  cuda/kernels/layout_probe.cu   qp_layout_probe: writes the same sizes and
                                 offsets as the device compiler laid them out
  cuda/kern/layout.go            the Go mirrors (c:"field" tags name the C field)

cuda/kern's TestLayout runs the probe (emulator or GPU) and compares it with
unsafe.Sizeof/Offsetof of the Go structs, field by field, and checks that the
probe lists the Go fields by their tags in Go's order. Run from the
repository root after editing LAYOUTS, then `make kernels`:

    python3 cuda/scripts/gen_layout.py && gofmt -w cuda/kern/layout.go
"""
import sys

# C type -> (Go type, size, align). Pointers are device addresses.
SCALARS = {"u32": ("uint32", 4), "i32": ("int32", 4), "f32": ("float32", 4), "u64": ("uint64", 8)}
CT = {"u32": "u32", "i32": "int32_t", "f32": "float", "u64": "u64"}

# name -> (kind, comment, fields); kind: True for a struct defined by hand
# in query.cuh (shared with Go: static_asserts here, the probe at run time),
# False for a parameter struct passed by value (defined here; none is now),
# "positional" for the parameter list of a kernel (the Go struct is passed
# field by field, cuda.LaunchFields; a compile-time assert next to the
# kernel checks its type against the list: QP_SIGNATURE_<name>). Every
# kernel keeps positional parameters: passed as one __grid_constant__
# struct, the same kernel bodies compiled to other code (ptxas spilled
# qp_ortile_accumulate_bp128; qp_query_and_init lost its one-segment loop,
# qp_and_bmscore its read-only loads), and the GPU AND ran 3-7% slower
# (docs/ARCHITECTURE.md, "The struct parameters and the AND").
# A field is "name:type" with type u32/i32/f32/u64, *T (a device pointer to
# T, const unless T starts with !) or a struct name of this table.
LAYOUTS = [
    ("TermMeta", True, "a term's posting list in the resident postings", "skip:u64 doc:u64 freq:u64 nb:u32 df:u32"),
    ("QMeta", True, "one query of a launch set", "m:u32 toff:u32 k:u32 res:u32"),
    ("QTerm", True, "one query term", "term:u32 w:f32 idf:f32 mx:f32"),
    ("Seg", True, "one whole list decoded in a launch", "d0:u64 f0:u64 v0:u64 term:u32 blk0:u32 q:u32 qt:u32"),
    ("S4", True, "the AND block-selection scan's value", "a:u64 b:u64 c:u64 d:u64"),
    ("OQuery", True, "one query of a tiled OR launch set", "seg0:u32 cap:u32 coff:u32 pad:u32"),
    ("FullDescParams", "positional", "qp_query_full_desc (QueryKernels.FullDesc)",
     "segs:*Seg nseg:u32 terms:*TermMeta post:*uint8_t nblk:u32 bs:u32 blk_term:*!u32 blk_idx:*!u32 d_off:*!u64 f_off:*!u64 o_off:*!u64"),
    ("GatherParams", "positional", "qp_query_gather (QueryKernels.Gather)",
     "terms:*TermMeta post:*uint8_t nblk:u32 blk_term:*u32 blk_idx:*u32 d_off:*u64 f_off:*u64 gdocs:*!uint8_t gfreqs:*!uint8_t base:*!u32 last:*!u32"),
    ("AndInitParams", "positional", "qp_query_and_init (QueryKernels.AndInit)",
     "segs:*Seg nseg:u32 qterms:*QTerm norms:*float ndocs:u32 k1p1:f32 docs:*u32 freqs:*u32 nval:u32 cdoc:*!u32 cscore:*!float cq:*!u32 err:*!u32"),
    ("OrAccumulateParams", "positional", "qp_query_or_accumulate (QueryKernels.OrAccumulate)",
     "segs:*Seg nseg:u32 qterms:*QTerm norms:*float ndocs:u32 k1p1:f32 docs:*u32 freqs:*u32 nval:u32 acc:*!float err:*!u32"),
    ("TopKParams", "positional", "qp_query_topk (QueryKernels.TopK)",
     "dense:u32 nq:u32 qmeta:*QMeta cdoc:*u32 cscore:*float cq:*u32 ncand:u32 acc:*float ndocs:u32 res:*!u64 cnt:*!u32 total:*!u32 scratch:*!u64 scratch_off:*u64"),
    ("AndFilterParams", "positional", "qp_and_filter (AndKernels.Filter)",
     "qmeta:*QMeta qterms:*QTerm col:*u32 mat:*u32 D:u32 n:u32 cdoc:*u32 cq:*u32 flag:*!u32 part:*!u32"),
    ("AndBMScoreParams", "positional", "qp_and_bmscore (AndKernels.BMScore)",
     "terms:*TermMeta post:*uint8_t qmeta:*QMeta qterms:*QTerm col:*u32 mat:*u32 rk:*u32 D:u32 S:u32 n:u32 bs:u32 norms:*float k1p1:f32 cdoc:*u32 cscore:*!float cq:*u32 err:*!u32"),
    ("AndBMWordsParams", "positional", "qp_and_bmwords (AndKernels.BitmapAnd)",
     "qmeta:*QMeta qterms:*QTerm col:*u32 mat:*u32 D:u32 nq:u32 cnt:*!u32"),
    ("AndBMEmitParams", "positional", "qp_and_bmemit (AndKernels.BitmapAnd)",
     "qmeta:*QMeta qterms:*QTerm col:*u32 mat:*u32 D:u32 nq:u32 pos:*u32 n:u32 cdoc:*!u32 cq:*!u32"),
    ("AndLocateParams", "positional", "qp_and_locate (AndKernels.Locate)",
     "terms:*TermMeta post:*uint8_t qmeta:*QMeta qterms:*QTerm qlr:*uint4 j:u32 qactive:u32 n:u32 bs:u32 levels:u32 keep:u32 cdoc:*u32 cq:*u32 blk:*!u32 sel:*!S4 part:*!S4 qblocks:*!u32 qpost:*!u32"),
    ("AndMatchParams", "positional", "qp_and_match (AndKernels.Match)",
     "terms:*TermMeta post:*uint8_t qmeta:*QMeta qterms:*QTerm j:u32 n:u32 bs:u32 norms:*float k1p1:f32 cdoc:*u32 cscore:*!float cq:*u32 blk:*u32 ex:*S4 o_off:*u64 docs:*u32 freqs:*u32 flag:*!u32 part:*!u32 err:*!u32 keep:u32 res0:*u64 cnt0:*u32"),
    ("AndSelectParams", "positional", "qp_and_select (AndKernels.Select)",
     "qmeta:*QMeta qterms:*QTerm j:u32 n:u32 cq:*u32 blk:*u32 sel:*!S4 part:*S4 raw:u32 prev:*u32 blk_term:*!u32 blk_idx:*!u32 d_off:*!u64 f_off:*!u64 o_off:*!u64"),
    ("AndCompactParams", "positional", "qp_and_compact (AndKernels.Compact)",
     "n:u32 flag:*!u32 part:*u32 np:u32 raw:u32 cdoc:*u32 cscore:*float cq:*u32 ndoc:*!u32 nscore:*!float nq:*!u32"),
    ("OrTileCheckParams", "positional", "qp_ortile_check (OrTileKernels.Check)",
     "segs:*Seg nseg:u32 docs:*u32 nval:u32 ndocs:u32 err:*!u32"),
    ("OrTileBoundsParams", "positional", "qp_ortile_bounds (OrTileKernels.Bounds)",
     "nq:u32 qmeta:*QMeta oq:*OQuery segs:*Seg qterms:*QTerm terms:*TermMeta post:*uint8_t use_bm:u32 tile:u32 ntiles:u32 ub:*!float order:*!u32 rng:*!u32 qtm:*!TermMeta"),
    ("OrTileAccumulateParams", "positional", "qp_ortile_accumulate (OrTileKernels.Accumulate)",
     "nq:u32 nitems:u32 ntiles:u32 tile:u32 order:*u32 r0:u32 r1:u32 per:u32 qmeta:*QMeta oq:*OQuery segs:*Seg qterms:*QTerm terms:*TermMeta norms:*float ndocs:u32 k1p1:f32 "
     "docs:*u32 freqs:*u32 err:*!u32 ub:*float theta:*!u64 cnt:*!u32 cdoc:*!u32 cscore:*!float"),
    ("OrTileAccumulateBP128Params", "positional", "qp_ortile_accumulate_bp128 (OrTileKernels.AccumulateBP128)",
     "nq:u32 nitems:u32 ntiles:u32 tile:u32 order:*u32 r0:u32 r1:u32 per:u32 qmeta:*QMeta oq:*OQuery segs:*Seg qterms:*QTerm terms:*TermMeta norms:*float ndocs:u32 k1p1:f32 "
     "post:*uint8_t bs:u32 rng:*u32 qtm:*TermMeta col:*u32 mat:*u32 rk:*u32 D:u32 S:u32 dvo:*u32 dec:*u32 err:*!u32 ub:*float theta:*!u64 cnt:*!u32 cdoc:*!u32 cscore:*!float"),
    ("OrTilePredecodeParams", "positional", "qp_ortile_predecode (OrTileKernels.Predecode)",
     "npre:u32 plist:*u32 nblk:u32 segs:*Seg qterms:*QTerm terms:*TermMeta post:*uint8_t bs:u32 norms:*float k1p1:f32 ndocs:u32 tile:u32 ntiles:u32 dvo:*u32 rng:*!u32 dec:*!u32 err:*!u32"),
    ("ScanReduceU32Params", "positional", "qp_query_scan_reduce_u32 (QueryKernels.ScanU32)", "in:*u32 part:*!u32 n:u32"),
    ("ScanPartialsU32Params", "positional", "qp_query_scan_partials_u32 (QueryKernels.ScanU32)", "part:*!u32 np:u32"),
    ("ScanApplyU32Params", "positional", "qp_query_scan_apply_u32 (QueryKernels.ScanU32)", "in:*u32 out:*!u32 part:*u32 n:u32 raw:u32"),
    ("ScanReduceS4Params", "positional", "qp_query_scan_reduce_s4 (QueryKernels.ScanS4)", "in:*S4 part:*!S4 n:u32"),
    ("ScanPartialsS4Params", "positional", "qp_query_scan_partials_s4 (QueryKernels.ScanS4)", "part:*!S4 np:u32"),
    ("ScanApplyS4Params", "positional", "qp_query_scan_apply_s4 (QueryKernels.ScanS4)", "in:*S4 out:*!S4 part:*S4 n:u32 raw:u32"),
    ("DecodeParams", "positional", "every QP_DECODE_KERNEL (Kernels.LaunchDecode)",
     "src:*uint8_t src_off:*u64 out_off:*u64 base:*u32 last:*u32 out:*!u32 status:*!u64 codes:*!u32 nblocks:u32 mode:u32"),
    ("BP128DocsParams", "positional", "qp_bp128_docs (Kernels.LaunchBP128Docs)",
     "src:*uint8_t src_off:*u64 out_off:*u64 base:*u32 last:*u32 out:*!u32 status:*!u64"),
    ("WAHSizesParams", "positional", "qp_wah_sizes (WAHColumns.Decompress)", "words:*u32 n:u32 sz:*!u32 err:*!u32"),
    ("WAHCheckParams", "positional", "qp_wah_check (WAHColumns.Decompress)",
     "words:*u32 woff:*u32 goff:*u32 nbits:*u32 nb:u32 st:*u32 err:*!u32"),
    ("WAHEndsParams", "positional", "qp_wah_ends (WAHColumns.Decompress)", "st:*u32 n:u32 ends:*!u32 ng:u32"),
    ("WAHFillParams", "positional", "qp_wah_fill (WAHColumns.Decompress)", "words:*u32 n:u32 wi:*u32 ng:u32 out:*!u32"),
    ("WAHCoaParams", "positional", "qp_wah_coa (WAHPlan.Reduce)",
     "op:u32 level:u32 mat:*u32 sel:*u32 qoff:*u32 res:*!u32 extra:*!u32 ebase:*u32 D:u32"),
    ("WAHTileParams", "positional", "qp_wah_tile (WAHPlan.Reduce)",
     "op:u32 rnd:u32 k1:u32 mat:*u32 sel:*u32 qoff:*u32 res:*!u32 extra:*!u32 ebase:*u32 D:u32"),
    ("WAHPopcParams", "positional", "qp_wah_popc (WAHPlan.Candidates)", "res:*u32 n:u32 cnt:*!u32"),
    ("WAHEmitParams", "positional", "qp_wah_emit (WAHPlan.Candidates)",
     "res:*u32 n:u32 D:u32 pos:*u32 docs:*!u32 cap:u32 dq:*!u32"),
    ("WAHBitsetParams", "positional", "qp_wah_bitset (WAHPlan.Bitset)", "res:*u32 nq:u32 D:u32 nbits:u32 out:*!u32"),
    ("IsectInitParams", "positional", "qp_isect_init (IsectKernels)",
     "qoff:*u32 nq:u32 qmeta:*qp_isect::QMeta lref:*u32 lists:*qp_isect::List vals:*u32 n:u32 cand:*!u32 cq:*!u32"),
    ("IsectSplitParams", "positional", "qp_isect_split (IsectKernels)",
     "j:u32 stride:u32 parent:u32 n:u32 cand:*u32 cq:*u32 qstart:*u32 qmeta:*qp_isect::QMeta lref:*u32 "
     "lists:*qp_isect::List vals:*u32 bnd:*!u32"),
    ("IsectSearchParams", "positional", "qp_isect_search (IsectKernels)",
     "algo:u32 j:u32 stride:u32 n:u32 cand:*u32 cq:*u32 qstart:*u32 qmeta:*qp_isect::QMeta lref:*u32 "
     "lists:*qp_isect::List vals:*u32 hsptr:*u32 enc:*u32 bnd:*u32 flag:*!u32 errs:*!u32"),
    ("IsectCompactParams", "positional", "qp_isect_compact (IsectKernels)",
     "n:u32 pos:*u32 cand:*u32 cq:*u32 ncand:*!u32 ncq:*!u32"),
    ("IsectQStartParams", "positional", "qp_isect_qstart (IsectKernels)", "nq:u32 qstart:*u32 pos:*u32 nqstart:*!u32"),
    ("OrTileClampParams", "positional", "qp_ortile_clamp (OrTileKernels.Clamp)", "nq:u32 oq:*OQuery cnt:*u32 out:*!u32"),
    ("OrTileCompactParams", "positional", "qp_ortile_compact (OrTileKernels.Compact)",
     "nq:u32 oq:*OQuery ex:*u32 cdoc:*u32 cscore:*float ndoc:*!u32 nscore:*!float ncq:*!u32"),
    ("OrTileMaxTreeParams", "positional", "qp_ortile_maxtree (OrTileKernels.MaxTree)",
     "nq:u32 qmeta:*QMeta cdoc:*u32 cscore:*float cq:*u32 ncand:u32 oq:*OQuery keys:*!u64 res:*!u64 cnt:*!u32 total:*!u32"),
    ("OrWholeParams", "positional", "qp_orwhole_bp128 (OrTileKernels.Whole)",
     "nq:u32 qmeta:*QMeta qterms:*QTerm terms:*TermMeta post:*uint8_t bs:u32 norms:*float ndocs:u32 k1p1:f32 "
     "err:*!u32 res:*!u64 cnt:*!u32 total:*!u32"),
]

GO_NAMES = {"nb": "NB", "df": "DF", "toff": "TOff", "mx": "Max", "idf": "IDF", "w": "Weight", "d0": "D0", "f0": "F0",
            "v0": "V0", "blk0": "Blk0", "q": "Q", "qt": "QT", "seg0": "Seg0", "coff": "COff", "nseg": "NSeg",
            "nblk": "NBlk", "bs": "BS", "ndocs": "NDocs", "k1p1": "K1p1", "nval": "NVal", "cdoc": "CDoc",
            "cscore": "CScore", "cq": "CQ", "nq": "NQ", "ncand": "NCand", "qmeta": "QMeta", "qterms": "QTerms",
            "qlr": "QLR", "qactive": "QActive", "qblocks": "QBlocks", "qpost": "QPost", "ndoc": "NDoc",
            "nscore": "NScore", "ncq": "NCQ", "use_bm": "UseBM", "ntiles": "NTiles", "nitems": "NItems",
            "ub": "UB", "oq": "OQ", "qtm": "QTM", "rk": "Rank", "gdocs": "GDocs", "gfreqs": "GFreqs",
            "d_off": "DOff", "f_off": "FOff", "o_off": "OOff", "blk_term": "BlkTerm", "blk_idx": "BlkIdx",
            "scratch_off": "ScratchOff", "r0": "R0", "r1": "R1", "err": "Errs", "pos": "Pos", "np": "NP",
            "ebase": "EBase", "sz": "Sizes", "wi": "WI", "nbits": "NBits", "qoff": "QOff", "src_off": "SrcOff",
            "out_off": "OutOff", "nblocks": "NBlocks", "lref": "LRef", "qstart": "QStart", "hsptr": "HSPtr",
            "nqstart": "NQStart", "dq": "DQ", "k1": "K1", "woff": "WOff", "goff": "GOff", "st": "St"}


def go_name(c):
    return GO_NAMES.get(c, c[:1].upper() + c[1:])


def parse():
    out = {}
    order = []
    for name, existing, comment, spec in LAYOUTS:
        fields = []
        off = 0
        align = 1
        for f in spec.split():
            fname, t = f.split(":", 1)
            if t.startswith("*"):
                const = not t.startswith("*!")
                pt = t.lstrip("*!")
                ctype = ("const " if const else "") + (CT.get(pt, pt)) + " *"
                gt, size, al = "cuda.DevicePtr", 8, 8
            elif t in SCALARS:
                ctype = CT[t] + " "
                gt, size = SCALARS[t]
                al = size
            else:
                ctype = t + " "
                gt, size, al = t, out[t]["size"], out[t]["align"]
            off = (off + al - 1) // al * al
            fields.append(dict(c=fname, ctype=ctype, go=gt, off=off, size=size))
            off += size
            align = max(align, al)
        size = (off + align - 1) // align * align
        out[name] = dict(existing=existing, comment=comment, fields=fields, size=size, align=align)
        order.append(name)
    return out, order


def qualified(ctype, L):
    """ctype with qp_q:: before the names of this table and u32/u64 (for use
    outside namespace qp_q)."""
    words = ctype.rstrip().split(" ")
    return " ".join("qp_q::" + w if w in L or w in ("u32", "u64") else w for w in words)


def cuh(L, order):
    o = ["// query_params.cuh — GENERATED by cuda/scripts/gen_layout.py from its",
         "// LAYOUTS table; do not edit. The parameter lists of the kernels, as",
         "// function pointer types (QP_SIGNATURE_<Go struct>: each kernel keeps",
         "// positional parameters, which Go's cuda.LaunchFields passes from the",
         "// fields of the generated struct of cuda/kern/layout.go, and a",
         "// static_assert next to the kernel checks its type against the list;",
         "// passed as one __grid_constant__ struct, the same kernel bodies compiled",
         "// to slower code), and a static_assert of the size and every field",
         "// offset of each struct shared with Go (TestLayout checks the same at",
         "// run time, on the emulator or a GPU).",
         "#pragma once", "", "#include <cstddef>", "#include <type_traits>", "", '#include "query.cuh"', "", "namespace qp_q {", ""]
    for n in order:
        s = L[n]
        if s["existing"] == "positional":
            o.append("// The parameter list of %s, as a function pointer type." % s["comment"].split()[0])
            o.append("#define QP_SIGNATURE_%s void (*)(%s)" % (n, ", ".join(qualified(f["ctype"], L) for f in s["fields"])))
            o.append("")
            continue
        if s["existing"]:
            continue
        o.append("// %s: %s." % (n, s["comment"]))
        o.append("struct %s {" % n)
        for f in s["fields"]:
            o.append("\t%s%s;" % (f["ctype"], f["c"]))
        o.append("};")
        o.append("")
    for n in order:
        s = L[n]
        if s["existing"] == "positional":
            continue
        o.append('static_assert(sizeof(%s) == %d, "%s: size (cuda/kern/layout.go)");' % (n, s["size"], n))
        for f in s["fields"]:
            o.append('static_assert(offsetof(%s, %s) == %d, "%s.%s: offset (cuda/kern/layout.go)");' % (n, f["c"], f["off"], n, f["c"]))
    o += ["", "} // namespace qp_q", ""]
    return "\n".join(o)


def probe(L, order):
    o = ["// layout_probe.cu — GENERATED by cuda/scripts/gen_layout.py; do not edit.",
         "// qp_layout_probe writes, per struct of query_params.cuh's list, its",
         "// number of fields, its size and each field's offset, as the device",
         "// compiler laid them out (cuda/kern TestLayout compares them with Go's).",
         '#include "query_params.cuh"', "", "namespace qp_layout {", "",
         "#define QP_STRUCT(S, N) out[i++] = N; out[i++] = sizeof(qp_q::S);",
         "#define QP_FIELD(S, F) out[i++] = offsetof(qp_q::S, F);", "", "} // namespace qp_layout", "",
         'extern "C" __global__ void qp_layout_probe(unsigned long long *out) {',
         "\tif (threadIdx.x != 0 || blockIdx.x != 0) return;", "\tunsigned i = 0;"]
    for n in order:
        s = L[n]
        if s["existing"] == "positional":
            continue
        o.append("\tQP_STRUCT(%s, %d)" % (n, len(s["fields"])))
        for f in s["fields"]:
            o.append("\tQP_FIELD(%s, %s)" % (n, f["c"]))
    o += ["}", "QP_EMU_REGISTER(qp_layout_probe)", "", "#undef QP_STRUCT", "#undef QP_FIELD", ""]
    return "\n".join(o)


def gofile(L, order):
    o = ["// Code generated by cuda/scripts/gen_layout.py; DO NOT EDIT.", "", "package kern", "",
         'import "github.com/qpengine/qp/cuda"', "",
         "// The structures shared with the query kernels (cuda/kernels/query.cuh,",
         "// query_params.cuh): the c tag names each field's C name. TestLayout",
         "// checks sizes and offsets against the device compiler's (qp_layout_probe).", ""]
    for n in order:
        s = L[n]
        if s["existing"] == "positional":
            o.append("// %s are the parameters of %s," % (n, s["comment"]))
            o.append("// passed field by field (cuda.LaunchFields; the kernel keeps positional")
            o.append("// parameters, checked against these fields at compile time).")
        else:
            o.append("// %s mirrors qp_q::%s (%d bytes): %s." % (n, n, s["size"], s["comment"]))
        o.append("type %s struct {" % n)
        for f in s["fields"]:
            o.append('\t%s %s `c:"%s"`' % (go_name(f["c"]), f["go"], f["c"]))
        o.append("}")
        o.append("")
    o.append("// sharedLayouts lists the mirrors in qp_layout_probe's order.")
    o.append("var sharedLayouts = []any{" + ", ".join("%s{}" % n for n in order if L[n]["existing"] != "positional") + "}")
    o.append("")
    o.append("// paramLists lists the kernels' parameter lists (TestKernelSignatures).")
    o.append("var paramLists = []any{" + ", ".join("%s{}" % n for n in order if L[n]["existing"] == "positional") + "}")
    o.append("")
    return "\n".join(o)


def main():
    L, order = parse()
    open("cuda/kernels/query_params.cuh", "w").write(cuh(L, order))
    open("cuda/kernels/layout_probe.cu", "w").write(probe(L, order))
    open("cuda/kern/layout.go", "w").write(gofile(L, order))


if __name__ == "__main__":
    main()

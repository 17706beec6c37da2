#!/usr/bin/env python3
"""Baseline for docs/BENCHMARKS.md: SQLite FTS5 top-k BM25 on the same
documents and queries as `qp bench query`, single thread.

  fts5_bench.py DOCS.jsonl QUERIES [--limit N] [--k 10] [--db PATH]

DOCS.jsonl lines are {"id":..., "text":..., "title"?: ...} (title + "\\n" + text
is indexed, as qp does). QUERIES lines are `qid:query` or `qid<TAB>query`.
Query text is tokenized like qp's default analyzer (Unicode lower case,
letter/number runs) and each token quoted, so FTS5 syntax never trips;
AND = implicit conjunction, OR = "a" OR "b" ...; ORDER BY bm25() LIMIT k.
Prints one line per mode: queries, queries/s, mean/p50/p95/p99 latency (ms).
"""
import json, os, re, sqlite3, sys, time, argparse

TOK = re.compile(r"[^\W_]+", re.UNICODE)


def load(db, path):
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='unicode61 remove_diacritics 0')")
    t0 = time.time()
    batch = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            text = d.get("text", "")
            if d.get("title"):
                text = d["title"] + "\n" + text
            batch.append((text,))
            if len(batch) == 10000:
                db.executemany("INSERT INTO docs(body) VALUES (?)", batch)
                batch = []
    if batch:
        db.executemany("INSERT INTO docs(body) VALUES (?)", batch)
    db.execute("INSERT INTO docs(docs) VALUES('optimize')")
    db.commit()
    return time.time() - t0


def queries(path, limit):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            sep = "\t" if "\t" in line else ":"
            if sep not in line:
                continue
            _, q = line.split(sep, 1)
            toks = list(dict.fromkeys(t.lower() for t in TOK.findall(q)))
            if toks:
                out.append(toks)
            if len(out) >= limit:
                break
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("docs")
    ap.add_argument("queries")
    ap.add_argument("--limit", type=int, default=10000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--db", default=":memory:")
    a = ap.parse_args()
    fresh = a.db == ":memory:" or not os.path.exists(a.db)
    db = sqlite3.connect(a.db)
    if fresh:
        secs = load(db, a.docs)
        print(f"fts5 load: {secs:.1f}s", file=sys.stderr)
    qs = queries(a.queries, a.limit)
    for mode in ("and", "or"):
        lat = []
        hits = 0
        t0 = time.perf_counter()
        for toks in qs:
            quoted = ['"' + t.replace('"', '""') + '"' for t in toks]
            expr = (" " if mode == "and" else " OR ").join(quoted)
            s = time.perf_counter()
            rows = db.execute("SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (expr, a.k)).fetchall()
            lat.append(time.perf_counter() - s)
            hits += len(rows)
        el = time.perf_counter() - t0
        print(f"fts5 {mode}: queries={len(qs)} qps={len(qs)/el:.1f} mean_ms={1e3*sum(lat)/len(lat):.3f} "
              f"p50_ms={1e3*pct(lat,.5):.3f} p95_ms={1e3*pct(lat,.95):.3f} p99_ms={1e3*pct(lat,.99):.3f} results={hits}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""plot_decode.py — plot and tabulate GPU decoding speed from the CSV that
bench/decode's WriteDecodeCSV writes (BenchDecode; TestDecodeSweep with
QP_DECODE_CSV set). Python 3 standard library only.

    python3 cuda/scripts/plot_decode.py gpu-decode.csv \\
        --svg docs/plots/gpu-decode.svg --markdown table.md

The SVG has two panels against the list length (log scale, 2^10 .. 2^26):
decoded integers per second, and the fraction of the bandwidth bound
(bytes read + written over the time, divided by the measured
device-to-device copy bandwidth). One line per codec (its default kernel);
the kernel variants and the BP128 baseline are dashed. The markdown table
has one row per codec and kernel, one column per length: G ints/s, bits per
integer and the fraction of the bandwidth bound.
"""
import argparse
import csv
import math
import sys
from collections import OrderedDict

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
          "#8c6d31", "#843c39", "#7b4173", "#3182bd"]


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("length", "lists", "ints", "blocks", "encoded_bytes", "bytes_moved"):
            r[k] = int(r[k])
        for k in ("bits_per_int", "seconds", "gints_per_s", "single_seconds",
                  "single_gints_per_s", "copy_gbps", "bw_fraction"):
            r[k] = float(r[k])
    return rows


def series(rows):
    """Ordered {label: (is_default, [rows sorted by length])}."""
    out = OrderedDict()
    for r in rows:
        label = r["codec"]
        kernel = r["kernel"]
        default = not (kernel.endswith("_direct") or kernel.endswith("_pipe") or kernel == "qp_bp128_docs")
        if not default:
            label = r["codec"] + " (" + kernel.replace("qp_decode_", "").replace("qp_", "") + ")"
        out.setdefault(label, (default, []))[1].append(r)
    for _, (_, rs) in out.items():
        rs.sort(key=lambda r: r["length"])
    return out


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def panel(svg, x0, y0, w, h, ser, key, ymax, ylabel, yfmt, title):
    lo, hi = 10, 26
    svg.append(f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{esc(title)}</text>')
    svg.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    for e in range(lo, hi + 1, 2):
        x = x0 + (e - lo) / (hi - lo) * w
        svg.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + h}" stroke="#ddd"/>')
        svg.append(f'<text x="{x:.1f}" y="{y0 + h + 16}" text-anchor="middle" font-size="11">2<tspan dy="-5" font-size="8">{e}</tspan></text>')
    steps = 5
    for i in range(steps + 1):
        v = ymax * i / steps
        y = y0 + h - v / ymax * h
        svg.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#eee"/>')
        svg.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{yfmt(v)}</text>')
    svg.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 36}" text-anchor="middle" font-size="12">list length (postings)</text>')
    svg.append(f'<text transform="translate({x0 - 48},{y0 + h / 2}) rotate(-90)" text-anchor="middle" font-size="12">{esc(ylabel)}</text>')
    for i, (label, (default, rs)) in enumerate(ser.items()):
        pts = []
        for r in rs:
            e = math.log2(r["length"])
            if e < lo or e > hi:
                continue
            x = x0 + (e - lo) / (hi - lo) * w
            y = y0 + h - min(r[key], ymax) / ymax * h
            pts.append(f"{x:.1f},{y:.1f}")
        if not pts:
            continue
        dash = "" if default else ' stroke-dasharray="5,3"'
        col = COLORS[i % len(COLORS)]
        svg.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{col}" stroke-width="{2 if default else 1.5}"{dash}/>')
        for p in pts:
            cx, cy = p.split(",")
            svg.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{col}"/>')


def plot(rows, path):
    ser = series(rows)
    W, H = 1180, 560
    pw, ph = 440, 400
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>']
    dev = rows[0]["device"] if rows else ""
    bw = rows[0]["copy_gbps"] if rows else 0
    svg.append(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">GPU decoding of index blocks (128 postings) into docIDs — {esc(dev)}, copy bandwidth {bw:.0f} GB/s</text>')
    gmax = max(r["gints_per_s"] for r in rows) if rows else 1
    gmax = math.ceil(gmax / 100) * 100
    panel(svg, 70, 70, pw, ph, ser, "gints_per_s", gmax, "G integers / s", lambda v: f"{v:.0f}", "decoding speed")
    panel(svg, 600, 70, pw, ph, ser, "bw_fraction", 1.0, "fraction of bandwidth bound", lambda v: f"{v:.1f}", "(bytes read + written) / (time × copy bandwidth)")
    lx, ly = 1060, 70
    for i, (label, (default, _)) in enumerate(ser.items()):
        col = COLORS[i % len(COLORS)]
        dash = "" if default else ' stroke-dasharray="5,3"'
        y = ly + i * 18
        svg.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 18}" y2="{y}" stroke="{col}" stroke-width="2"{dash}/>')
        svg.append(f'<text x="{lx + 22}" y="{y + 4}" font-size="10">{esc(label)}</text>')
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


def markdown(rows):
    ser = series(rows)
    lengths = sorted({r["length"] for r in rows})
    head = "| codec (kernel) | " + " | ".join(f"2^{int(math.log2(l))}" for l in lengths) + " |"
    out = ["Each cell: G ints/s · bits/int · fraction of the bandwidth bound.", "", head,
           "|" + "---|" * (len(lengths) + 1)]
    for label, (_, rs) in ser.items():
        by = {r["length"]: r for r in rs}
        cells = []
        for l in lengths:
            r = by.get(l)
            cells.append(f"{r['gints_per_s']:.0f} · {r['bits_per_int']:.1f} · {r['bw_fraction']:.2f}" if r else "")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += ["", "Single list per launch (G ints/s): latency-bound for short lists.", "",
            head, "|" + "---|" * (len(lengths) + 1)]
    for label, (_, rs) in ser.items():
        by = {r["length"]: r for r in rs}
        out.append(f"| {label} | " + " | ".join(f"{by[l]['single_gints_per_s']:.1f}" if l in by else "" for l in lengths) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--svg")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    rows = load(a.csv)
    if not rows:
        sys.exit("no rows")
    if a.svg:
        plot(rows, a.svg)
    md = markdown(rows)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)


if __name__ == "__main__":
    main()

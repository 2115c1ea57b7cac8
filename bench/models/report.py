#!/usr/bin/env python3
"""Prints the model benchmark's table from OUT/results.jsonl (what
minilm.exs, minilm_torch.py, smollm2.exs and smollm2_torch.py append) and
writes it as Markdown to OUT/table.md.

    python report.py OUT

Times are medians in milliseconds; a ratio is Emily's time over PyTorch's
(above 1: slower than PyTorch). "fallback" marks an Emily.Compiler lane
that ran on the evaluator (Emily.Compiler.last_run() said so), "error" a
lane that raised (its message is listed below the table).
"""
import json
import sys
from pathlib import Path

import numpy as np


def load(out):
    rows = []
    with open(out / "results.jsonl") as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def cell(r, key):
    if r is None:
        return "-"
    if r.get("how") == "error":
        return "error"
    v = r.get(key)
    if v is None:
        return "-"
    s = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return s + (" (fallback)" if r.get("how") == "fallback" else "")


def ratio(a, b, key):
    if not a or not b or a.get("how") == "error" or a.get(key) is None or b.get(key) is None:
        return "-"
    return f"{a[key] / b[key]:.2f}"


def minilm_pair_diff(out, shape):
    files = [out / f"minilm_{lane}_{shape}.bin" for lane in ("compiler", "eager")]
    if not all(f.exists() for f in files):
        return None
    a, b = (np.fromfile(f, dtype=np.float32) for f in files)
    return float(np.abs(a - b).max())


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    rows = load(out)
    lanes = {}
    agree = {}
    for r in rows:
        if "lane" in r:
            lanes[(r["model"], r["shape"], r["lane"])] = r  # the last run of a lane wins
        elif "agree" in r:
            agree[(r["model"], r["shape"], r["agree"], r.get("agree_with", "torch"))] = r

    head = ["model", "shape", "measure", "Emily.Compiler", "Emily eager", "PyTorch",
            "Compiler/PyTorch", "eager/PyTorch", "agreement"]
    table = []

    shapes = sorted({k[1] for k in lanes if k[0] == "all-MiniLM-L6-v2"},
                    key=lambda s: ([int(x) for x in s.split("-")[0].split("x")], s))  # "256x128-bf16" too
    for shape in shapes:
        g = lambda lane: lanes.get(("all-MiniLM-L6-v2", shape, lane))
        c, e, t = g("compiler"), g("eager"), g("torch")
        notes = []
        for (model, s, lane, peer), a in sorted(agree.items()):
            if model == "all-MiniLM-L6-v2" and s == shape and lane != "torch":
                notes.append(f"{lane} vs {peer}: max abs diff {a['max_abs_diff']:.1e}, cos >= {a['min_cosine']:.7f}")
        d = minilm_pair_diff(out, shape)
        if d is not None:
            notes.append(f"compiler vs eager: max abs diff {d:.1e}")
        table.append(["all-MiniLM-L6-v2", shape, "forward + mean pool, ms", cell(c, "median_ms"),
                      cell(e, "median_ms"), cell(t, "median_ms"), ratio(c, t, "median_ms"),
                      ratio(e, t, "median_ms"), "; ".join(notes)])

    for shape in sorted({k[1] for k in lanes if k[0] == "SmolLM2-135M"}):
        g = lambda lane: lanes.get(("SmolLM2-135M", shape, lane))
        c, e, t = g("compiler"), g("eager"), g("torch")
        notes = []
        for lane in ("compiler", "eager", "generate_eager", "generate_compiler"):
            a = agree.get(("SmolLM2-135M", shape, lane, "torch"))
            if a:
                notes.append(f"{lane}: {'identical ids' if a['identical_ids'] else 'ids differ'}"
                             f" ({a['matching']}/{a['of']})")
        if c or e:
            table.append(["SmolLM2-135M", shape, "greedy, ms per new token", cell(c, "per_token_ms"),
                          cell(e, "per_token_ms"), cell(t, "per_token_ms"), ratio(c, t, "per_token_ms"),
                          ratio(e, t, "per_token_ms"), "; ".join(notes)])
            table.append(["SmolLM2-135M", shape, "prefill (prompt + 1st token), ms", cell(c, "prefill_ms"),
                          cell(e, "prefill_ms"), cell(t, "prefill_ms"), ratio(c, t, "prefill_ms"),
                          ratio(e, t, "prefill_ms"), ""])
        gc, ge = g("generate_compiler"), g("generate_eager")
        if gc or ge:
            table.append(["SmolLM2-135M", shape, "Bumblebee generate (one defn), ms per new token",
                          cell(gc, "per_token_ms"), cell(ge, "per_token_ms"), cell(t, "per_token_ms"),
                          ratio(gc, t, "per_token_ms"), ratio(ge, t, "per_token_ms"),
                          "total / new tokens, prefill included"])

    widths = [max(len(str(row[i])) for row in [head] + table) for i in range(len(head))]
    fmt = lambda row: "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip()
    print(fmt(head))
    print(fmt(["-" * w for w in widths]))
    for row in table:
        print(fmt(row))

    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(str(v) for v in row) + " |" for row in table]

    notes = []
    for (model, shape, lane), r in sorted(lanes.items()):
        if r.get("how") in ("error", "fallback"):
            notes.append(f"{model} {shape} {lane}: {r['how']}: {r.get('detail')}"
                         + (f" at {r['where'][:2]}" if r.get("where") else ""))
        elif r.get("how") == "graph" and r.get("detail"):
            notes.append(f"{model} {shape} {lane}: graph {r['detail']}")
        elif r.get("how") == "torch":
            notes.append(f"{model} {shape} torch: {r['detail']}")
    if notes:
        print()
        for n in notes:
            print("  " + n)
        md += [""] + ["- " + n for n in notes]
    (out / "table.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
